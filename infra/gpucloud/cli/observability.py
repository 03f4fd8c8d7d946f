"""`gpucloud observability export`: a stack's Prometheus rules and Grafana dashboards as files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpucloud.cli.common import PLAN_BAD_INPUT, add_command_group, add_stack_source, stack_file_of
from gpucloud.config import ConfigError, load_stack_file


def observability_export(arguments: argparse.Namespace) -> int:
    """Write a stack's Prometheus rule file and Grafana dashboards for your own Prometheus and Grafana."""
    from gpucloud.observability import rule_file_text
    from gpucloud.observability.dashboards import dashboard_files

    try:
        settings = load_stack_file(stack_file_of(arguments), region=arguments.region)
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


def register(commands: argparse._SubParsersAction) -> None:
    """Add `observability` and its `export` command."""
    observability_commands = add_command_group(
        commands, "observability", "Prometheus rules and Grafana dashboards for a stack"
    )
    export = observability_commands.add_parser(
        "export", help="write the stack's rule file and dashboards (for `promtool`, Prometheus and Grafana)",
        epilog=f"exit codes: 0 written, {PLAN_BAD_INPUT} bad stack file",
    )
    add_stack_source(export)
    export.add_argument("--out", required=True, help="folder to write <name base>.rules.yml and dashboards/*.json into")
    export.set_defaults(handler=observability_export)
