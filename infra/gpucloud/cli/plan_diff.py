"""`gpucloud plan --base REF` / `--base-config FILE`: the plan of a change against its base."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpucloud.cli.common import PLAN_BAD_INPUT, PLAN_VIOLATIONS, WIDE_OUTPUT
from gpucloud.config import StackSettings, load_stack_file


def plan_against_base(arguments: argparse.Namespace, stack_file: Path, settings: StackSettings,
                      policy_config, facts) -> int:
    """Plan both sides, print the difference (a tree or `--json`); exit 1 on a failed check of the
    change, a mandatory policy violation, or data replaced or deleted without being intended."""
    from rich.console import Console

    from gpucloud.plan.base import BaseNotFound, base_settings, plan_change, stack_file_at
    from gpucloud.plan.diff_json import to_preview_json
    from gpucloud.plan.diff_view import render_diff
    from gpucloud.plan.model import dumps

    if arguments.base_config:
        label = arguments.base_config
        base = load_stack_file(Path(arguments.base_config), region=arguments.region)
    else:
        label = f"{arguments.base}:{stack_file}"
        try:
            text = stack_file_at(arguments.base, stack_file)
        except BaseNotFound as error:
            print(f"error: {error}", file=sys.stderr)
            return PLAN_BAD_INPUT
        base = None if text is None else base_settings(stack_file, text, label, arguments.region)
        if text is None:
            label = f"{arguments.base} (no {stack_file} there: a new stack)"
    diff = plan_change(settings, base, policy_config, facts, base_label=label, current_label=str(stack_file))
    if arguments.json:
        print(dumps(to_preview_json(diff)))
    else:
        console = Console(soft_wrap=False)
        console.width = arguments.width or (console.width if console.is_terminal else WIDE_OUTPUT)
        render_diff(diff, console)
    return PLAN_VIOLATIONS if diff.failed else 0
