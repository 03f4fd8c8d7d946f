"""The checks a plan runs beside the resources: policies, accepted IAM lint findings, spot capacity
risk and the cost estimate against the budget."""

from __future__ import annotations

from collections.abc import Mapping

from gpucloud.config import StackSettings
from gpucloud.plan.model import PlanFinding
from gpucloud.policy import PackConfig, PlannedResource, PolicyConfig, Violation, evaluate
from gpucloud.policy.rules import accepted_iam_findings
from gpucloud.pricing import CostEstimate, PricingError, budget_findings, estimate_stack, unpriced_finding
from gpucloud.testing import AppliedResource


def check_policies(
    resources: list[AppliedResource], config: PolicyConfig | PackConfig | None = None
) -> list[Violation]:
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


def accepted_lint_findings(resources: list[AppliedResource]) -> list[PlanFinding]:
    """Parliament findings of medium severity or worse that pass because ACCEPTED_FINDINGS names them,
    one info line each with its reason, so a reviewer sees every exception the gate made."""
    findings = []
    for resource in resources:
        if not resource.custom:
            continue
        for where, finding in accepted_iam_findings(resource.type, resource.state):
            findings.append(
                PlanFinding(
                    source="iam-lint",
                    severity="info",
                    rule="iam-least-privilege",
                    urn=resource.urn,
                    message=(
                        f"IAM {where}: accepted parliament {finding.issue} ({finding.severity}) on "
                        f"{', '.join(sorted(finding.actions))}: {finding.accepted_reason}"
                    ),
                )
            )
    return findings


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


