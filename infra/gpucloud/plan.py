"""`gpucloud plan`: the offline preview. Runs the program on the moto engine and reports what
it would create, as a tree like `pulumi preview` or as `pulumi preview --json`."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpucloud.config import StackSettings
from gpucloud.testing import AppliedResource, Deployment, moto_account, run_program

PROJECT = "gpu-cloud"


@dataclass
class Plan:
    """What a stack would create, with everything later checks attach to it."""

    project: str
    stack: str
    region: str
    resources: list[AppliedResource]
    outputs: dict[str, Any]
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def stack_urn(self) -> str:
        return f"urn:pulumi:{self.stack}::{self.project}::pulumi:pulumi:Stack::{self.project}-{self.stack}"

    def to_preview_json(self) -> dict[str, Any]:
        """The layout of `pulumi preview --json`, so scripts work on both."""
        steps = [
            {
                "op": "create",
                "urn": self.stack_urn,
                "newState": {"urn": self.stack_urn, "type": "pulumi:pulumi:Stack", "custom": False, "inputs": {}, "outputs": {}},
            }
        ]
        for resource in self.resources:
            state: dict[str, Any] = {
                "urn": resource.urn,
                "custom": resource.custom,
                "type": resource.type,
                "parent": resource.parent or self.stack_urn,
                "inputs": resource.inputs,
                "outputs": resource.state if resource.custom else {},
            }
            if resource.id:
                state["id"] = resource.id
            if resource.protect:
                state["protect"] = True
            if resource.retain_on_delete:
                state["retainOnDelete"] = True
            if resource.ignore_changes:
                state["ignoreChanges"] = list(resource.ignore_changes)
            if not resource.validated:
                state["gpucloudNotValidated"] = resource.note
            steps.append({"op": "create", "urn": resource.urn, "newState": state})
        return {
            "steps": steps,
            "changeSummary": {"create": len(steps)},
            "outputs": self.outputs,
            **self.extras,
        }


def _from_deployment(deployment: Deployment, region: str) -> Plan:
    return Plan(
        project=deployment.project,
        stack=deployment.stack,
        region=region,
        resources=deployment.resources,
        outputs=deployment.outputs,
    )


def plan_stack(settings: StackSettings) -> Plan:
    """Run the gpu-cloud program for one stack on a fresh moto account."""
    from gpucloud.program import build

    with moto_account(settings.region) as account:
        deployment = run_program(lambda: build(settings), account, project=PROJECT, stack=settings.stack)
    return _from_deployment(deployment, settings.region)


def plan_program(program: Callable[[], None], *, stack: str, region: str, config: dict[str, Any] | None = None) -> Plan:
    """Run any Pulumi program (a team's own, say) through the same offline plan."""
    with moto_account(region) as account:
        deployment = run_program(program, account, project=PROJECT, stack=stack, config=config)
    return _from_deployment(deployment, region)


def dumps(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=False, default=str)
