"""The `gpucloud` command: plan, connect, account snapshot, prices refresh, backend bootstrap.

One module (past 400 lines) because it is the command's argument parser and, per subcommand, a
thin handler that loads the stack file, calls one package and turns its errors into exit codes;
the work itself lives in plan/, connect.py, pricing/ and backend/.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import traceback
from pathlib import Path

from gpucloud.config import ConfigError, load_stack_file

STACKS_DIRECTORY = Path("stacks")
WIDE_OUTPUT = 200
"""Columns for the tree when printing to a file or CI log rather than a terminal."""


def _stack_file(arguments: argparse.Namespace) -> Path:
    if arguments.config:
        return Path(arguments.config)
    return STACKS_DIRECTORY / f"Pulumi.{arguments.stack}.yaml"


PLAN_VIOLATIONS = 1
"""Exit code of `plan` for a mandatory policy violation or a minimum capacity over budget."""
PLAN_BAD_INPUT = 2
"""Exit code of `plan` for a bad stack or policy config, or a --program that is missing or raised."""
PLAN_FAILED = 3
"""Exit code of `plan` when gpucloud itself failed planning a stack (a bug, not a config problem)."""


def _policy_config(path: str | None):
    """Read a `pulumi preview --policy-pack-config` file, levels and all, as the Pulumi CLI reads it."""
    from gpucloud.policy import RULES, PackConfig, PolicyConfigError

    if not path:
        return PackConfig()
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
        return PackConfig.from_document(document, [rule.name for rule in RULES])
    except (OSError, UnicodeDecodeError) as error:
        raise PolicyConfigError(f"policy config {path}: cannot be read: {error.strerror or error}") from None
    except json.JSONDecodeError as error:
        raise PolicyConfigError(f"policy config {path}: not valid JSON ({error.msg} at line {error.lineno})") from None
    except PolicyConfigError as error:
        raise PolicyConfigError(f"policy config {path}: {error}") from None


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
    try:
        policy_config = _policy_config(arguments.policy_config)
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
            stack_file = _stack_file(arguments)
            settings = load_stack_file(stack_file, region=arguments.region)
            result = planning.plan_stack(settings, policy_config, _account_facts(arguments, stack_file, settings.stack))
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


def facts_path(stack_file: Path, stack: str) -> Path:
    """Where a stack's account facts live: `facts/<stack>.yaml` beside its stack file (outside the
    `Pulumi.*.yaml` pattern the workflows read as stacks)."""
    return stack_file.parent / "facts" / f"{stack}.yaml"


def _account_facts(arguments: argparse.Namespace, stack_file: Path, stack: str):
    from gpucloud.testing.facts import load_facts

    if arguments.account_facts:
        return load_facts(arguments.account_facts)
    found = facts_path(Path(stack_file), stack)
    return load_facts(found) if found.exists() else None


def account_snapshot(arguments: argparse.Namespace) -> int:
    """Write a stack's account facts from the real account (read-only calls; needs AWS credentials)."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    from gpucloud.plan.snapshot import dump_facts, snapshot_account

    stack_file = _stack_file(arguments)
    try:
        settings = load_stack_file(stack_file, region=arguments.region)
        facts = snapshot_account(settings, boto3.Session(region_name=settings.region))
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return PLAN_BAD_INPUT
    except (BotoCoreError, ClientError) as error:
        print(f"error: reading the account failed: {error}", file=sys.stderr)
        return PLAN_FAILED
    out = Path(arguments.out) if arguments.out else facts_path(stack_file, settings.stack)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dump_facts(facts), encoding="utf-8")
    print(f"wrote {out}: {len(facts.quotas)} quotas, {len(facts.vpcs)} VPC(s), {len(facts.amis)} AMI(s)")
    return 0


def capacity_buy(arguments: argparse.Namespace) -> int:
    """Show a group's Capacity Block offering; with --confirm <its id>, buy it and name it in the stack file."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    from gpucloud.ops.capacity import CapacityError, buy

    stack_file = _stack_file(arguments)
    try:
        settings = load_stack_file(stack_file, region=arguments.region)
        buy(settings, stack_file, boto3.Session(region_name=settings.region).client("ec2"), arguments.group,
            arguments.confirm)
    except (ConfigError, CapacityError) as error:
        print(f"error: {error}", file=sys.stderr)
        return PLAN_BAD_INPUT
    except (BotoCoreError, ClientError) as error:
        print(f"error: an AWS call failed: {error}", file=sys.stderr)
        return PLAN_FAILED
    return 0


def observability_export(arguments: argparse.Namespace) -> int:
    """Write a stack's Prometheus rule file and Grafana dashboards for your own Prometheus and Grafana."""
    from gpucloud.observability import rule_file_text
    from gpucloud.observability.dashboards import dashboard_files

    try:
        settings = load_stack_file(_stack_file(arguments), region=arguments.region)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return PLAN_BAD_INPUT
    out = Path(arguments.out)
    (out / "dashboards").mkdir(parents=True, exist_ok=True)
    rules = out / f"{settings.name_base}.rules.yml"
    rules.write_text(rule_file_text(settings), encoding="utf-8")
    written = [rules]
    for name, text in dashboard_files(settings).items():
        written.append(out / "dashboards" / name)
        written[-1].write_text(text, encoding="utf-8")
    print("wrote " + ", ".join(str(path) for path in written))
    return 0


def connect(arguments: argparse.Namespace) -> int:
    """Forward a local port to a node of the stack through Session Manager (or print the command)."""
    import subprocess

    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    from gpucloud.connect import PORTS, ConnectError, find_connection

    try:
        settings = load_stack_file(_stack_file(arguments), region=arguments.region)
        port = PORTS.get(str(arguments.port), None) or int(arguments.port)
        session = boto3.Session(region_name=settings.region)
        connection = find_connection(settings, session.client("autoscaling"), arguments.group, port)
    except (ConfigError, ConnectError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return PLAN_BAD_INPUT
    except (BotoCoreError, ClientError) as error:
        print(f"error: finding a node failed: {error}", file=sys.stderr)
        return PLAN_FAILED
    if arguments.print:
        print(connection.shell())
        return 0
    print(f"forwarding localhost:{connection.local_port} to {connection.instance_id}:{connection.remote_port} "
          f"({connection.group}); Ctrl-C ends it", file=sys.stderr)
    try:
        return subprocess.call(connection.command())
    except FileNotFoundError:
        print("error: the AWS CLI is not installed; run the command --print gives where it is", file=sys.stderr)
        return PLAN_FAILED


def refresh_prices(arguments: argparse.Namespace) -> int:
    """Rebuild the price catalog from the AWS Price List API (needs AWS credentials)."""
    import boto3

    from gpucloud.pricing import (
        DEFAULT_CATALOG_PATH,
        SUPPORTED_INSTANCE_TYPES,
        SUPPORTED_REGIONS,
        PricingError,
        refresh_catalog,
    )

    output = arguments.output or DEFAULT_CATALOG_PATH
    try:
        result = refresh_catalog(
            boto3.Session(),
            output,
            arguments.regions or SUPPORTED_REGIONS,
            arguments.instance_types or SUPPORTED_INSTANCE_TYPES,
        )
    except PricingError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for message in result.kept:
        print(f"warning: {message}", file=sys.stderr)
    print(f"wrote {len(result.catalog.instances)} instance prices to {output}")
    return 0


BACKEND_REFUSED = 2
"""Exit code of `backend bootstrap` for a bad name or a bucket or key it must not take over."""
BACKEND_AWS_CALL_FAILED = 3
"""Exit code of `backend bootstrap` when AWS refused or could not be reached (credentials, permissions, network)."""


def _backend_stacks(arguments: argparse.Namespace) -> list[str]:
    """The stacks to print `pulumi stack init` lines for: as given, else one per stack file; each name checked."""
    from gpucloud.backend import BackendError, validate_stack_name

    if arguments.stacks:
        for stack in arguments.stacks:
            validate_stack_name(stack)
        return arguments.stacks
    stacks = []
    for path in sorted(STACKS_DIRECTORY.glob("Pulumi.*.yaml")):
        stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
        try:
            validate_stack_name(stack)
        except BackendError as error:
            raise BackendError(f"{path}: {error}; rename the file, or name the stacks with --stacks") from error
        stacks.append(stack)
    return stacks


def bootstrap_backend(arguments: argparse.Namespace) -> int:
    """Create (or confirm) the S3 state bucket and the KMS key for Pulumi's secrets, then say how to use them.

    Every name is checked before the first AWS call, so a typo never leaves a half-made backend.
    """
    import boto3
    from botocore.exceptions import BotoCoreError

    from gpucloud.backend import AwsCallError, BackendError, bootstrap_backend, format_instructions

    try:
        stacks = _backend_stacks(arguments)
        session = boto3.Session(region_name=arguments.region)
        result = bootstrap_backend(session, arguments.bucket, arguments.region, key_alias=arguments.key_alias)
    except AwsCallError as error:
        print(f"error: {error}", file=sys.stderr)
        return BACKEND_AWS_CALL_FAILED
    except BackendError as error:
        print(f"error: {error}", file=sys.stderr)
        return BACKEND_REFUSED
    except BotoCoreError as error:
        # boto3.Session itself fails on a bad AWS_PROFILE (ProfileNotFound) before any call is made.
        print(f"error: AWS configuration: {' '.join(str(error).split())}", file=sys.stderr)
        return BACKEND_AWS_CALL_FAILED
    for change in result.created:
        print(f"+ {change}")
    if not result.created:
        print(f"{result.bucket} and {result.key_alias} are already set up; nothing changed")
    print(format_instructions(result, stacks))
    return 0


def _add_stack_source(parser: argparse.ArgumentParser) -> None:
    """--stack NAME or --config FILE, and --region: which stack file a command reads."""
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--stack", help="stack name: reads stacks/Pulumi.<stack>.yaml")
    which.add_argument("--config", help="any stack config file")
    parser.add_argument("--region", help="override aws:region from the stack file")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpucloud", description="Per-project GPU environments on AWS.")
    commands = parser.add_subparsers(dest="command", required=True)
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
    plan_parser.add_argument("--policy-config", help="policy pack config JSON, as for `pulumi preview --policy-pack-config`")
    plan_parser.add_argument("--region", help="override aws:region from the stack file")
    plan_parser.add_argument("--debug", action="store_true", help="print the traceback of a failed program or plan")
    plan_parser.add_argument("--json", action="store_true", help="print the plan in `pulumi preview --json` layout")
    plan_parser.add_argument("--width", type=int, default=None, help="terminal width for the tree")
    plan_parser.set_defaults(handler=plan)

    connect_parser = commands.add_parser(
        "connect",
        help="forward a local port to a node (Jupyter, TensorBoard, SSH) through Session Manager",
        epilog=f"exit codes: the session's, {PLAN_BAD_INPUT} nothing to connect to, {PLAN_FAILED} an AWS call failed",
    )
    _add_stack_source(connect_parser)
    connect_parser.add_argument("--group", help="the group whose node to reach (default: the stack's only group)")
    connect_parser.add_argument("--port", default="8888", help="remote port, or jupyter, tensorboard, ssh (default 8888)")
    connect_parser.add_argument("--print", action="store_true", help="print the aws ssm start-session command instead of running it")
    connect_parser.set_defaults(handler=connect)

    observability = commands.add_parser("observability", help="Prometheus rules and Grafana dashboards for a stack")
    observability_commands = observability.add_subparsers(dest="observability_command", required=True)
    export = observability_commands.add_parser(
        "export", help="write the stack's rule file and dashboards (for `promtool`, Prometheus and Grafana)",
        epilog=f"exit codes: 0 written, {PLAN_BAD_INPUT} bad stack file",
    )
    _add_stack_source(export)
    export.add_argument("--out", required=True, help="folder to write <name base>.rules.yml and dashboards/*.json into")
    export.set_defaults(handler=observability_export)

    account = commands.add_parser("account", help="the AWS account a stack deploys into")
    account_commands = account.add_subparsers(dest="account_command", required=True)
    snapshot = account_commands.add_parser(
        "snapshot",
        help="write a stack's account facts (quotas, its VPC, pinned AMIs) from the real account, read-only",
        epilog=f"exit codes: 0 written, {PLAN_BAD_INPUT} bad stack file, {PLAN_FAILED} an AWS call failed",
    )
    _add_stack_source(snapshot)
    snapshot.add_argument("--out", help="file to write (default: facts/<stack>.yaml beside the stack file)")
    snapshot.set_defaults(handler=account_snapshot)

    capacity = commands.add_parser("capacity", help="reserved GPU capacity: buying a Capacity Block, outside pulumi up")
    capacity_commands = capacity.add_subparsers(dest="capacity_command", required=True)
    capacity_buy_parser = capacity_commands.add_parser(
        "buy",
        help="show a group's Capacity Block offering (real dates, upfront price); with --confirm, buy it once and "
        "write its reservationId into the stack file",
        epilog=f"exit codes: 0 shown or bought, {PLAN_BAD_INPUT} bad stack file or nothing to buy, "
        f"{PLAN_FAILED} an AWS call failed",
    )
    _add_stack_source(capacity_buy_parser)
    capacity_buy_parser.add_argument("--group", required=True, help="the group whose capacity.capacityBlock.offering to buy")
    capacity_buy_parser.add_argument(
        "--confirm", metavar="OFFERING_ID",
        help="buy this offering (the id the command showed); not refundable. Without it nothing is bought or written",
    )
    capacity_buy_parser.set_defaults(handler=capacity_buy)

    prices = commands.add_parser("prices", help="the price catalog behind the plan's cost estimate")
    prices_commands = prices.add_subparsers(dest="prices_command", required=True)
    refresh = prices_commands.add_parser("refresh", help="rebuild the catalog from the AWS Price List API")
    refresh.add_argument("--regions", nargs="+", help="regions to refresh (default: all supported)")
    refresh.add_argument("--instance-types", nargs="+", help="instance types to refresh (default: all supported)")
    refresh.add_argument("--output", help="catalog file to write (default: the packaged catalog)")
    refresh.set_defaults(handler=refresh_prices)

    backend = commands.add_parser("backend", help="the Pulumi state backend")
    backend_commands = backend.add_subparsers(dest="backend_command", required=True)
    from gpucloud.backend import DEFAULT_KEY_ALIAS

    bootstrap = backend_commands.add_parser(
        "bootstrap",
        help="create the S3 state bucket and the KMS key for secrets (idempotent)",
        epilog=f"exit codes: 0 done, {BACKEND_REFUSED} refused (bad name, bucket or key it must not take over), "
        f"{BACKEND_AWS_CALL_FAILED} an AWS call failed (credentials, permissions, network)",
    )
    bootstrap.add_argument("--bucket", required=True, help="state bucket name")
    bootstrap.add_argument("--region", required=True, help="AWS region of the bucket and key")
    bootstrap.add_argument(
        "--key-alias",
        default=DEFAULT_KEY_ALIAS,
        help=f"KMS alias of the state and secrets key (default: {DEFAULT_KEY_ALIAS})",
    )
    bootstrap.add_argument("--stacks", nargs="+", help="stacks to print `pulumi stack init` lines for (default: stacks/)")
    bootstrap.set_defaults(handler=bootstrap_backend)
    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    return arguments.handler(arguments)


if __name__ == "__main__":
    sys.exit(main())
