"""`gpucloud plan`: the offline preview. Runs the program on the moto engine and reports what
it would create, as a tree like `pulumi preview` or as `pulumi preview --json`."""

from __future__ import annotations

import json
import runpy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpucloud.config import StackSettings
from gpucloud.policy import PlannedResource, PolicyConfig, Violation, evaluate
from gpucloud.pricing import CostEstimate, PricingError, budget_findings, estimate_stack, unpriced_finding
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
    policy_violations: list[Violation] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """A mandatory policy violation or a failed budget check."""
        return any(finding.severity == "failure" for finding in self.findings) or any(
            violation.mandatory for violation in self.policy_violations
        )

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
        document["policyViolations"] = [
            {
                "policyName": violation.policy_name,
                "enforcementLevel": violation.enforcement_level,
                "urn": violation.urn,
                "message": violation.message,
            }
            for violation in self.policy_violations
        ]
        if self.cost_estimate:
            document["costEstimate"] = self.cost_estimate.to_dict()
        return document


def check_policies(resources: list[AppliedResource], config: PolicyConfig | None = None) -> list[Violation]:
    """Every policy of the review gate over every planned resource, as `pulumi preview --policy-pack` runs them."""
    planned = [
        PlannedResource(
            urn=resource.urn,
            type=resource.type,
            name=resource.name,
            props=resource.state,
            options={"protect": resource.protect, "retainOnDelete": resource.retain_on_delete},
        )
        for resource in resources
        if resource.custom
    ]
    return evaluate(planned, config)


def spot_capacity_findings(resources: list[AppliedResource], subnet_zones: Mapping[str, str]) -> list[PlanFinding]:
    """Spot groups with one instance type or one availability zone run dry when that single pool is
    reclaimed (a spot pool is an instance type in a zone; two subnets of one zone are one pool)."""
    findings = []
    for resource in resources:
        if resource.type != "aws:autoscaling/group:Group":
            continue
        policy = resource.inputs.get("mixedInstancesPolicy") or {}
        distribution = policy.get("instancesDistribution") or {}
        above_base_on_demand = distribution.get("onDemandPercentageAboveBaseCapacity", 100)
        if not policy or above_base_on_demand >= 100:
            continue
        types = [o.get("instanceType") for o in (policy.get("launchTemplate") or {}).get("overrides", [])]
        zones = {subnet_zones.get(subnet, subnet) for subnet in resource.inputs.get("vpcZoneIdentifiers") or []}
        if len(types) < 2 or len(zones) < 2:
            findings.append(
                PlanFinding(
                    source="capacity",
                    severity="warning",
                    rule="spot-capacity-risk",
                    urn=resource.urn,
                    message=(
                        f"{resource.inputs.get('name', resource.name)} uses spot with {len(types)} instance type(s) "
                        f"in {len(zones)} availability zone(s): when that spot pool runs short the group cannot "
                        "launch (capacity shortage); list at least two instance types and subnets in two zones"
                        + (" (a multi-node group stays in the one zone of its cluster placement group)" if resource.inputs.get("placementGroup") else "")
                    ),
                )
            )
    return findings


def _from_deployment(deployment: Deployment, region: str, policy_config: PolicyConfig | None) -> Plan:
    """The plan of a deployment whose moto account is still open (the spot rule asks it for zones)."""
    subnets = deployment.client("ec2").describe_subnets()["Subnets"]
    subnet_zones = {subnet["SubnetId"]: subnet["AvailabilityZone"] for subnet in subnets}
    return Plan(
        project=deployment.project,
        stack=deployment.stack,
        region=region,
        resources=deployment.resources,
        outputs=deployment.outputs,
        policy_violations=check_policies(deployment.resources, policy_config),
        findings=spot_capacity_findings(deployment.resources, subnet_zones),
    )


def cost_findings(settings: StackSettings) -> tuple[CostEstimate | None, list[PlanFinding]]:
    """The stack's cost estimate and what it means for the budget. A price the catalog lacks makes the
    estimate partial (named in a warning) but never switches the budget check off."""
    try:
        estimate = estimate_stack(settings.config, settings.region)
    except PricingError as error:
        return None, [
            PlanFinding(
                source="cost",
                severity="warning",
                rule="no-cost-estimate",
                message=f"no cost estimate, so the budget is not checked: {error}",
            )
        ]
    partial = unpriced_finding(estimate)
    findings = [PlanFinding(source="cost", severity=partial.severity, rule=partial.rule, message=partial.message)] if partial else []
    findings += [
        PlanFinding(source="budget", severity=finding.severity, rule=finding.rule, message=finding.message)
        for finding in budget_findings(estimate, settings.config.budget.monthly_usd)
    ]
    return estimate, findings


def plan_stack(settings: StackSettings, policy_config: PolicyConfig | None = None) -> Plan:
    """Run the gpu-cloud program for one stack on a fresh moto account, check the policies, price it."""
    from gpucloud.program import build

    with moto_account(settings.region) as account:
        deployment = run_program(lambda: build(settings), account, project=PROJECT, stack=settings.stack)
        plan = _from_deployment(deployment, settings.region, policy_config)
    plan.cost_estimate, budget = cost_findings(settings)
    plan.findings.extend(budget)
    return plan


def plan_program(
    program: Callable[[], None],
    *,
    stack: str = "dev",
    region: str = "us-east-1",
    config: dict[str, Any] | None = None,
    project: str = PROJECT,
    policy_config: PolicyConfig | None = None,
) -> Plan:
    """Run any Pulumi program (a team's own, say) through the same offline plan and policy checks."""
    with moto_account(region) as account:
        deployment = run_program(program, account, project=project, stack=stack, config=config)
        return _from_deployment(deployment, region, policy_config)


def plan_program_file(path: str | Path, **options: Any) -> Plan:
    """`plan_program` for a program file, run as Pulumi runs `__main__.py`."""
    program_path = Path(path)
    if not program_path.is_file():
        raise FileNotFoundError(f"{program_path}: no such Pulumi program file")
    return plan_program(lambda: runpy.run_path(str(program_path), run_name="__main__"), **options)


def dumps(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=False, default=str)
