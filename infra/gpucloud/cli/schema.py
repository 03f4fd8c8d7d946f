"""`gpucloud schema`: the JSON Schema of a stack file, for editors with the YAML language server."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def print_schema(arguments: argparse.Namespace) -> int:
    """Print the packaged schema, or with --write regenerate it from the config models."""
    from gpucloud.config.schema import SCHEMA_FILE_NAME, packaged_schema_text, render_schema

    if arguments.write:
        import gpucloud

        path = Path(gpucloud.__file__).parent / "data" / SCHEMA_FILE_NAME
        path.write_text(render_schema(), encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
        return 0
    sys.stdout.write(packaged_schema_text())
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    """Add `schema`."""
    schema = commands.add_parser(
        "schema",
        help="print the JSON Schema of a stack file (for the YAML language server's $schema modeline)",
        epilog="save it beside your stacks (gpucloud schema > stack-config.schema.json) and start each stack file "
        "with: # yaml-language-server: $schema=stack-config.schema.json",
    )
    schema.add_argument(
        "--write", action="store_true", help="regenerate the packaged schema file from the config models (development)"
    )
    schema.set_defaults(handler=print_schema)
