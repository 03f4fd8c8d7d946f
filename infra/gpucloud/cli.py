"""The `gpucloud` command."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from gpucloud.config import ConfigError, load_stack_file

STACKS_DIRECTORY = Path("stacks")
WIDE_OUTPUT = 200
"""Columns for the tree when printing to a file or CI log rather than a terminal."""


def _stack_file(arguments: argparse.Namespace) -> Path:
    if arguments.config:
        return Path(arguments.config)
    return STACKS_DIRECTORY / f"Pulumi.{arguments.stack}.yaml"


def plan(arguments: argparse.Namespace) -> int:
    from gpucloud import plan as planning
    from gpucloud.plan_view import render

    try:
        settings = load_stack_file(_stack_file(arguments), region=arguments.region)
        result = planning.plan_stack(settings)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if arguments.json:
        print(planning.dumps(result.to_preview_json()))
    else:
        console = Console(soft_wrap=False)
        console.width = arguments.width or (console.width if console.is_terminal else WIDE_OUTPUT)
        render(result, console)
    return 1 if result.failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpucloud", description="Per-project GPU environments on AWS.")
    commands = parser.add_subparsers(dest="command", required=True)
    plan_parser = commands.add_parser(
        "plan", help="offline preview of a stack on the embedded moto engine (no AWS account, no Pulumi CLI)"
    )
    source = plan_parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack", help="stack name: reads stacks/Pulumi.<stack>.yaml")
    source.add_argument("--config", help="any stack config file")
    plan_parser.add_argument("--region", help="override aws:region from the stack file")
    plan_parser.add_argument("--json", action="store_true", help="print the plan in `pulumi preview --json` layout")
    plan_parser.add_argument("--width", type=int, default=None, help="terminal width for the tree")
    plan_parser.set_defaults(handler=plan)
    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    return arguments.handler(arguments)


if __name__ == "__main__":
    sys.exit(main())
