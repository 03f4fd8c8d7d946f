"""`gpucloud plan`: the offline preview. Runs the program on the moto engine and reports what
it would create, as a tree like `pulumi preview` or as `pulumi preview --json`."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpucloud.config import StackSettings
from gpucloud.pricing import CostEstimate, PricingError, budget_findings, estimate_stack
from gpucloud.testing import AppliedResource, Deployment, moto_account, run_program

PROJECT = "gpu-cloud"


@dataclass(frozen=True)
class PlanFinding:
    """Something the plan found besides the resources: a budget check, a policy violation, a warning."""

    source: str
    severity: str
    """`failure` makes the plan exit 1; `warning` is printed only."""
    rule: str
    message: str
    urn: str | None = None


@dataclass
class Plan:
    """What a stack would create, with everything later checks attach to it."""

    project: str
    stack: str
    region: str
    resources: list[AppliedResource]
    outputs: dict[str, Any]
    findings: list[PlanFinding] = field(default_factory=list)
    cost_estimate: CostEstimate | None = None

    @property
    def failed(self) -> bool:
        return any(finding.severity == "failure" for finding in self.findings)

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
        document: dict[str, Any] = {
            "steps": steps,
            "changeSummary": {"create": len(steps)},
            "outputs": self.outputs,
            "findings": [
                {key: value for key, value in vars(finding).items() if value is not None} for finding in self.findings
            ],
        }
        if self.cost_estimate:
            document["costEstimate"] = self.cost_estimate.to_dict()
        return document


def _from_deployment(deployment: Deployment, region: str) -> Plan:
    return Plan(
        project=deployment.project,
        stack=deployment.stack,
        region=region,
        resources=deployment.resources,
        outputs=deployment.outputs,
    )


def cost_findings(settings: StackSettings) -> tuple[CostEstimate | None, list[PlanFinding]]:
    """The stack's cost estimate and what it means for the budget."""
    try:
        estimate = estimate_stack(settings.config, settings.region)
    except PricingError as error:
        return None, [
            PlanFinding(
                source="cost",
                severity="warning",
                rule="no-cost-estimate",
                message=f"no cost estimate, so the budget is not checked: {error} (run `gpucloud prices refresh`)",
            )
        ]
    findings = [
        PlanFinding(source="budget", severity=finding.severity, rule=finding.rule, message=finding.message)
        for finding in budget_findings(estimate, settings.config.budget.monthly_usd)
    ]
    return estimate, findings


def plan_stack(settings: StackSettings) -> Plan:
    """Run the gpu-cloud program for one stack on a fresh moto account, then price it."""
    from gpucloud.program import build

    with moto_account(settings.region) as account:
        deployment = run_program(lambda: build(settings), account, project=PROJECT, stack=settings.stack)
    plan = _from_deployment(deployment, settings.region)
    plan.cost_estimate, budget = cost_findings(settings)
    plan.findings.extend(budget)
    return plan


def plan_program(program: Callable[[], None], *, stack: str, region: str, config: dict[str, Any] | None = None) -> Plan:
    """Run any Pulumi program (a team's own, say) through the same offline plan."""
    with moto_account(region) as account:
        deployment = run_program(program, account, project=PROJECT, stack=stack, config=config)
    return _from_deployment(deployment, region)


def dumps(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=False, default=str)
