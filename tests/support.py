"""Helpers the tests share: example stacks, a minimal valid config, deploying a stack on the engine."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from gpucloud.config import StackSettings, parse_stack_config
from gpucloud.program import build
from gpucloud.testing import Deployment, run_program

ROOT = Path(__file__).resolve().parent.parent
STACKS = ROOT / "stacks"
EXAMPLE_STACKS = sorted(path.name.removeprefix("Pulumi.").removesuffix(".yaml") for path in STACKS.glob("Pulumi.*.yaml"))

MINIMAL_CONFIG: dict[str, Any] = {
    "project": "demo",
    "owner": "ml-team@example.com",
    "costCenter": "cc-42",
    "budget": {"monthlyUsd": 5000},
    "account": {"createServiceLinkedRole": True},
    "data": {"bucket": "demo-data", "readPrefixes": ["datasets/"], "writePrefixes": ["runs/"]},
    "groups": [{"name": "workers", "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 2}],
}


def minimal_config(**changes: Any) -> dict[str, Any]:
    config = copy.deepcopy(MINIMAL_CONFIG)
    config.update(changes)
    return config


def settings_for(values: dict[str, Any], stack: str = "demo", region: str = "us-east-1") -> StackSettings:
    return parse_stack_config(values, stack=stack, source=f"stacks/Pulumi.{stack}.yaml", region=region)


def deploy(settings: StackSettings, account) -> Deployment:
    return run_program(lambda: build(settings), account, stack=settings.stack)




class ExampleStack:
    """A deployed example stack: its settings beside the deployment's resources and account."""

    def __init__(self, settings: StackSettings, deployment: Deployment):
        self.settings = settings
        self.deployment = deployment

    def __getattr__(self, name: str) -> Any:
        return getattr(self.deployment, name)


def assert_cents(actual, expected):
    assert round(actual, 2) == round(expected, 2), f"{actual!r} != {expected!r} to the cent"
