"""The `gpucloud` command: one module per command group, each parser beside its thin handler.

A handler loads the stack file, calls one package and turns its errors into exit codes; the work
itself lives in plan/, connect.py, ops/, observability/, pricing/ and backend/. `common` holds
what the commands share: which stack file they read and the exit codes.
"""

from __future__ import annotations

import argparse

from gpucloud import __version__
from gpucloud.cli import (
    account,
    backend,
    capacity,
    connect,
    init,
    jobs,
    observability,
    plan,
    preflight,
    prices,
    schema,
)
from gpucloud.cli.backend import BACKEND_AWS_CALL_FAILED, BACKEND_REFUSED
from gpucloud.cli.common import (
    PLAN_BAD_INPUT,
    PLAN_FAILED,
    PLAN_VIOLATIONS,
    STACKS_DIRECTORY,
    WIDE_OUTPUT,
    facts_path,
)

COMMAND_GROUPS = (init, plan, connect, jobs, preflight, observability, account, capacity, prices, backend, schema)
"""Each module adds its command (group) to the parser; `gpucloud --help` lists them in this order."""

__all__ = [
    "BACKEND_AWS_CALL_FAILED",
    "BACKEND_REFUSED",
    "PLAN_BAD_INPUT",
    "PLAN_FAILED",
    "PLAN_VIOLATIONS",
    "STACKS_DIRECTORY",
    "WIDE_OUTPUT",
    "build_parser",
    "facts_path",
    "main",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpucloud", description="Per-project GPU environments on AWS.")
    parser.add_argument("--version", action="version", version=f"gpucloud {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for group in COMMAND_GROUPS:
        group.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    return arguments.handler(arguments)
