"""What every `gpucloud` command shares: which stack file it reads, and the exit codes.

`--stack NAME` reads `stacks/Pulumi.<NAME>.yaml`, `--config FILE` any stack file; the exit codes
are named for `plan`, which introduced them, and every command that reads a stack file uses them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

STACKS_DIRECTORY = Path("stacks")
WIDE_OUTPUT = 200
"""Columns for the tree when printing to a file or CI log rather than a terminal."""


def stack_file_of(arguments: argparse.Namespace) -> Path:
    """The stack file a command reads: --config as given, else the --stack's file in stacks/."""
    if arguments.config:
        return Path(arguments.config)
    return STACKS_DIRECTORY / f"Pulumi.{arguments.stack}.yaml"


PLAN_VIOLATIONS = 1
"""Exit code of `plan` for a mandatory policy violation or a minimum capacity over budget."""
PLAN_BAD_INPUT = 2
"""Exit code of `plan` for a bad stack or policy config, or a --program that is missing or raised."""
PLAN_FAILED = 3
"""Exit code of `plan` when gpucloud itself failed planning a stack (a bug, not a config problem)."""


def facts_path(stack_file: Path, stack: str) -> Path:
    """Where a stack's account facts live: `facts/<stack>.yaml` beside its stack file (outside the
    `Pulumi.*.yaml` pattern the workflows read as stacks)."""
    return stack_file.parent / "facts" / f"{stack}.yaml"


def add_command_group(commands: argparse._SubParsersAction, name: str, help: str) -> argparse._SubParsersAction:
    """`gpucloud <name> <command>`: the group's parser, and the subparsers its commands go in."""
    return commands.add_parser(name, help=help).add_subparsers(dest=f"{name}_command", required=True)


def add_stack_source(parser: argparse.ArgumentParser) -> None:
    """--stack NAME or --config FILE, and --region: which stack file a command reads."""
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--stack", help="stack name: reads stacks/Pulumi.<stack>.yaml")
    which.add_argument("--config", help="any stack config file")
    parser.add_argument("--region", help="override aws:region from the stack file")


EXPIRED_CODES = ("ExpiredToken", "ExpiredTokenException", "RequestExpired")
"""AWS's error codes for credentials past their time (STS and service APIs)."""


def aws_failure(error: Exception) -> str:
    """AWS's or botocore's words for a failed call, and, where the credentials are the cause, what
    to do about them."""
    from botocore.exceptions import ClientError, NoCredentialsError, PartialCredentialsError

    if isinstance(error, (NoCredentialsError, PartialCredentialsError)):
        return (f"{error}: give the command credentials for the stack's account (AWS_PROFILE, "
                "`aws sso login` or `aws configure`)")
    if isinstance(error, ClientError) and error.response.get("Error", {}).get("Code") in EXPIRED_CODES:
        return f"{error}: the credentials have expired; sign in again (`aws sso login`)"
    return str(error)
