"""`gpucloud backend bootstrap`: the S3 state bucket and the KMS key of the Pulumi state backend."""

from __future__ import annotations

import argparse
import sys

from gpucloud.cli.common import STACKS_DIRECTORY, add_command_group

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


def register(commands: argparse._SubParsersAction) -> None:
    """Add `backend` and its `bootstrap` command."""
    backend_commands = add_command_group(commands, "backend", "the Pulumi state backend")
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
