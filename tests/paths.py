"""Where the repository and its example stacks are: no imports beyond pathlib, so that xdist's
controller, which loads conftest.py but runs no test, does not load the package to learn them."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STACKS = ROOT / "stacks"
EXAMPLE_STACKS = sorted(path.name.removeprefix("Pulumi.").removesuffix(".yaml") for path in STACKS.glob("Pulumi.*.yaml"))
