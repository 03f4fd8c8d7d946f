"""`gpucloud plan`: the offline preview of a stack, or of any Pulumi program, on the moto engine."""

from __future__ import annotations

import argparse
import gc
import json
import sys
import traceback
from pathlib import Path

from gpucloud.cli.common import (
    PLAN_BAD_INPUT,
    PLAN_FAILED,
    PLAN_VIOLATIONS,
    WIDE_OUTPUT,
    facts_path,
    stack_file_of,
)
from gpucloud.config import ConfigError, load_stack_file


def _policy_config(path: str | None):
    """Read a `pulumi preview --policy-pack-config` file, levels and all, as the Pulumi CLI reads it."""
    from gpucloud.policy import RULES, PackConfig, PolicyConfigError

    if not path:
        return PackConfig()
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
        properties_of = {rule.name: list(rule.config_schema or {}) for rule in RULES}
        return PackConfig.from_document(document, [rule.name for rule in RULES], properties_of)
    except (OSError, UnicodeDecodeError) as error:
        raise PolicyConfigError(f"policy config {path}: cannot be read: {error.strerror or error}") from None
    except json.JSONDecodeError as error:
        raise PolicyConfigError(f"policy config {path}: not valid JSON ({error.msg} at line {error.lineno})") from None
    except PolicyConfigError as error:
        raise PolicyConfigError(f"policy config {path}: {error}") from None


POLICY_CONFIG_DIRECTORY = Path("policies") / "config"
"""Where a stack's policy pack config lives, `policies/config/<stack>.json`, as the workflows read it."""


def _stacks_own_policy_config(arguments: argparse.Namespace) -> str | None:
    """`policies/config/<stack>.json` when it exists and no --policy-config is given, so a local plan
    gives the verdict CI gives (the workflows pass that file to the plan and to `pulumi preview`)."""
    if arguments.program:
        return None
    stack = arguments.stack or Path(arguments.config).name.removeprefix("Pulumi.").removesuffix(".yaml")
    path = POLICY_CONFIG_DIRECTORY / f"{stack}.json"
    if not path.is_file():
        return None
    print(f"policy config: {path} (the stack's own, as CI passes it; --policy-config overrides)", file=sys.stderr)
    return str(path)


def _print_error(message: str, error: BaseException, debug: bool) -> None:
    if debug:
        shown = error.__cause__ or error
        traceback.print_exception(type(shown), shown, shown.__traceback__, file=sys.stderr)
    print(f"error: {message}", file=sys.stderr)


PLAN_EXTRA_MISSING = (
    "gpucloud plan needs the offline engine and its views: pip install 'gpucloud[plan]' "
    "(the components alone need only the base package)"
)


def plan(arguments: argparse.Namespace) -> int:
    """`gpucloud plan`, with the cyclic garbage collector paused.

    A plan's heap (pulumi_aws's classes, moto's catalogs, botocore's models) lives until the
    command ends: the collector walked it again and again for a sixth of `plan --stack notebooks`
    (7.0 s against 8.4 s, medians of 5 on one machine) without lowering the peak (348 MB either
    way). Reference counting still frees what goes out of use; the collector is back on afterwards
    for callers in the same process.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _plan(arguments)
    finally:
        if was_enabled:
            gc.enable()


def _plan(arguments: argparse.Namespace) -> int:
    try:
        from rich.console import Console

        from gpucloud import plan as planning
        from gpucloud.plan.program_source import ProgramError, ProgramFailed
        from gpucloud.plan.view import render
        from gpucloud.policy import PolicyConfigError
        from gpucloud.testing.facts import FactsError
        from gpucloud.testing.provider_rules import ProviderRulesBroken
        from gpucloud.testing.service_model import ServiceModelViolation
    except ModuleNotFoundError as error:
        print(f"error: {PLAN_EXTRA_MISSING} ({error})", file=sys.stderr)
        return PLAN_BAD_INPUT

    program_only = {
        "--config-file": arguments.config_file,
        "--stack-name": arguments.stack_name,
        "--handlers": arguments.handlers,
        "--record-unknown-types": arguments.record_unknown_types,
    }
    misplaced = [flag for flag, value in program_only.items() if value]
    if not arguments.program and misplaced:
        print(f"error: {', '.join(misplaced)} go with --program", file=sys.stderr)
        return PLAN_BAD_INPUT
    if arguments.program and (arguments.base or arguments.base_config):
        print("error: --base and --base-config go with --stack or --config", file=sys.stderr)
        return PLAN_BAD_INPUT
    try:
        policy_config = _policy_config(arguments.policy_config or _stacks_own_policy_config(arguments))
        if arguments.program:
            result = planning.plan_program_file(
                arguments.program,
                config_file=arguments.config_file,
                stack=arguments.stack_name,
                region=arguments.region,
                policy_config=policy_config,
                handlers=arguments.handlers or (),
                record_unknown_types=arguments.record_unknown_types,
            )
        else:
            stack_file = stack_file_of(arguments)
            settings = load_stack_file(stack_file, region=arguments.region)
            facts = _account_facts(arguments, stack_file, settings.stack)
            if arguments.base or arguments.base_config:
                from gpucloud.cli.plan_diff import plan_against_base

                return plan_against_base(arguments, stack_file, settings, policy_config, facts)
            result = planning.plan_stack(settings, policy_config, facts)
    except (ServiceModelViolation, ProviderRulesBroken) as error:
        _print_error(str(error), error, arguments.debug)
        return PLAN_VIOLATIONS
    except ProgramFailed as error:
        if isinstance(error.error, (ServiceModelViolation, ProviderRulesBroken)):
            _print_error(f"program {error.program}: {error.error}", error, arguments.debug)
            return PLAN_VIOLATIONS
        hint = "" if arguments.debug else " (--debug shows the traceback)"
        _print_error(f"{error}{hint}", error, arguments.debug)
        return PLAN_BAD_INPUT
    except (ConfigError, PolicyConfigError, ProgramError, FactsError) as error:
        _print_error(str(error), error, arguments.debug)
        return PLAN_BAD_INPUT
    except Exception as error:
        lines = [line for line in str(error).splitlines() if line.strip()]
        detail = f": {lines[0].strip()}" if lines else ""
        hint = "" if arguments.debug else "; --debug shows the traceback"
        _print_error(
            f"gpucloud plan failed: {type(error).__name__}{detail} (a gpucloud bug, not a problem of the stack file{hint})",
            error,
            arguments.debug,
        )
        return PLAN_FAILED
    if arguments.json:
        print(planning.dumps(result.to_preview_json()))
    else:
        console = Console(soft_wrap=False)
        console.width = arguments.width or (console.width if console.is_terminal else WIDE_OUTPUT)
        render(result, console)
    return PLAN_VIOLATIONS if result.failed else 0


def _account_facts(arguments: argparse.Namespace, stack_file: Path, stack: str):
    from gpucloud.testing.facts import load_facts

    if arguments.account_facts:
        return load_facts(arguments.account_facts)
    found = facts_path(Path(stack_file), stack)
    return load_facts(found) if found.exists() else None


def register(commands: argparse._SubParsersAction) -> None:
    """Add `plan` and its options."""
    plan_parser = commands.add_parser(
        "plan",
        help="offline preview of a stack on the embedded moto engine (no AWS account, no Pulumi CLI)",
        epilog=f"exit codes: 0 clean, {PLAN_VIOLATIONS} mandatory policy violation, a call AWS would refuse, "
        "an input the provider refuses, or minimum capacity over budget, "
        f"{PLAN_BAD_INPUT} bad stack or policy config, or a --program that is missing or raised, "
        f"{PLAN_FAILED} gpucloud itself failed",
    )
    source = plan_parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack", help="stack name: reads stacks/Pulumi.<stack>.yaml")
    source.add_argument("--config", help="any stack config file")
    source.add_argument(
        "--program",
        help="any Pulumi program instead of gpu-cloud's: a .py file, or a folder with a Pulumi.yaml or a __main__.py",
    )
    plan_parser.add_argument(
        "--account-facts",
        metavar="FILE",
        help="account facts (YAML or JSON: quotas, your VPC and subnets, pinned AMIs) seeded into the engine's "
        "account before the plan; default: facts/<stack>.yaml beside the stack file, if it exists",
    )
    plan_parser.add_argument(
        "--config-file", help="with --program: a Pulumi.<stack>.yaml whose config: map the program reads"
    )
    plan_parser.add_argument(
        "--stack-name", help="with --program: the stack name (default: from --config-file, else dev)"
    )
    plan_parser.add_argument(
        "--handlers",
        action="append",
        metavar="FILE",
        help="with --program: a Python file that registers engine handlers (gpucloud.testing.register_resource) "
        "for resource types the program uses and the engine lacks; repeatable",
    )
    plan_parser.add_argument(
        "--record-unknown-types",
        action="store_true",
        help="with --program: record a resource type the engine has no handler for as not validated, "
        "instead of failing (off by default)",
    )
    base = plan_parser.add_mutually_exclusive_group()
    base.add_argument(
        "--base",
        metavar="REF",
        help="plan the change against the stack file as committed in this git ref (a branch, tag or commit) and "
        "print the difference as `pulumi preview --diff` does: create, update, replace (and what forces it), delete; "
        "exit 1 also where it replaces or deletes data or identity not listed in gpu-cloud:intendedReplacements",
    )
    base.add_argument("--base-config", metavar="FILE", help="like --base, with another stack file as the base")
    plan_parser.add_argument(
        "--policy-config",
        help="policy pack config JSON, as for `pulumi preview --policy-pack-config` "
        "(default: policies/config/<stack>.json when it exists, as CI passes it)",
    )
    plan_parser.add_argument("--region", help="override aws:region from the stack file")
    plan_parser.add_argument("--debug", action="store_true", help="print the traceback of a failed program or plan")
    plan_parser.add_argument("--json", action="store_true", help="print the plan in `pulumi preview --json` layout")
    plan_parser.add_argument("--width", type=int, default=None, help="terminal width for the tree")
    plan_parser.set_defaults(handler=plan)
