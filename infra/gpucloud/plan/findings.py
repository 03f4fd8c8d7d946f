"""The checks a plan runs beside the resources: policies, accepted IAM lint findings, spot capacity
risk and the cost estimate against the budget."""

from __future__ import annotations

from collections.abc import Mapping

from gpucloud.config import StackSettings
from gpucloud.lookups.capacity import CapacityBlockOffering
from gpucloud.plan.model import PlanFinding
from gpucloud.policy import PackConfig, PlannedResource, PolicyConfig, Violation, evaluate
from gpucloud.policy.rules import accepted_iam_findings
from gpucloud.pricing import (
    CostEstimate,
    PricingError,
    ReservedCapacity,
    budget_findings,
    estimate_stack,
    unpriced_compute_finding,
    unpriced_finding,
)
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
                        f"launch (capacity shortage); {_single_pool_fix(len(types), bool(resource.inputs.get('placementGroup')))}"
                    ),
                )
            )
    return findings


def _single_pool_fix(types: int, multi_node: bool) -> str:
    """A multi-node group's cluster placement group keeps it in one zone, so more zones is no fix there."""
    if not multi_node:
        return "list at least two instance types and subnets in two zones"
    more_types = "list at least two instance types, or " if types < 2 else ""
    return (f"a multi-node group stays in the one zone of its cluster placement group: {more_types}keep nodes off spot "
            "with onDemandBaseCapacity, capacity.reservations or capacity.capacityBlock (with capacity facts the "
            "plan's Capacity section prices each)")


def reserved_capacity(
    settings: StackSettings, reservations: Mapping[str, Mapping], offerings: Mapping[str, CapacityBlockOffering] | None = None,
) -> dict[str, ReservedCapacity]:
    """Per group, the reserved capacity it runs on, from the reservations the account holds, or
    the Capacity Block offering it asks for and has not bought (`offerings`: group name to the
    offering the lookups found), priced at its upfront fee."""
    reserved = {}
    for group in settings.config.groups:
        block = group.capacity.capacity_block
        offering = (offerings or {}).get(group.name)
        if block is not None and block.offering is not None and offering is not None:
            reserved[group.name] = ReservedCapacity(
                kind="capacity-block", instance_type=offering.instance_type, instance_count=offering.instance_count,
                upfront_usd=offering.upfront_usd, hours=offering.duration_hours,
                label=f"offering {offering.id}, not bought yet: {offering.instance_count} x {offering.instance_type}, "
                      f"{offering.duration_hours} h",
            )
        elif block is not None:
            found = reservations.get(block.reservation_id) if block.reservation_id else None
            if found and found.get("start") and found.get("end"):
                hours = (found["end"] - found["start"]).total_seconds() / 3600
                reserved[group.name] = ReservedCapacity(
                    kind="capacity-block", instance_type=found["instance_type"], instance_count=found["instance_count"],
                    upfront_usd=found.get("upfront_usd") or 0.0, hours=hours,
                    label=f"{found['id']}: {found['instance_count']} x {found['instance_type']}, {hours:.0f} h from "
                          f"{found['start']:%Y-%m-%d %H:%M} UTC",
                )
        elif group.capacity.reservations:
            held = [reservations[rid] for rid in group.capacity.reservations.ids if rid in reservations]
            if held:
                count = sum(item["instance_count"] for item in held)
                reserved[group.name] = ReservedCapacity(
                    kind="odcr", instance_type=held[0]["instance_type"], instance_count=count,
                    label=f"{count} x {held[0]['instance_type']} in {', '.join(item['id'] for item in held)}",
                )
    return reserved


def with_matched_types(settings: StackSettings, outputs: Mapping) -> StackSettings:
    """The settings with each instanceRequirements group's matched types (the stack's `groups`
    output) as its instance types, cheapest first: the estimate prices min and desired at the
    cheapest match (on-demand takes the lowest price under requirements) and max at the dearest."""
    groups = outputs.get("groups") or {}
    if not any(group.instance_requirements for group in settings.config.groups):
        return settings
    from gpucloud.pricing import load_catalog

    catalog = load_catalog()

    def price(name: str) -> float:
        try:
            return catalog.instance(name, settings.region).usd_per_hour
        except PricingError:
            return float("inf")

    changed = [
        group.model_copy(update={"instance_types": sorted((groups.get(group.name) or {}).get("instanceTypes") or [], key=price)})
        if group.instance_requirements else group
        for group in settings.config.groups
    ]
    return settings.model_copy(update={"config": settings.config.model_copy(update={"groups": changed})})


def cost_findings(
    settings: StackSettings,
    reserved: Mapping[str, ReservedCapacity] | None = None,
    gpus_per_instance: Mapping[str, int] | None = None,
    recorded_spot: Mapping[str, Mapping[str, tuple[float, str]]] | None = None,
) -> tuple[CostEstimate | None, list[PlanFinding]]:
    """The stack's cost estimate and what it means for the budget. A price the catalog lacks makes the
    estimate partial (named in a warning) but never switches the budget check off."""
    try:
        estimate = estimate_stack(settings.config, settings.region, reserved=dict(reserved or {}),
                                  gpus_per_instance=gpus_per_instance, recorded_spot=recorded_spot)
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
    compute = unpriced_compute_finding(estimate, settings.config.budget.accept_unpriced_compute)
    if compute:
        findings.append(PlanFinding(source="budget", severity=compute.severity, rule=compute.rule, message=compute.message))
    findings += [
        PlanFinding(source="budget", severity=finding.severity, rule=finding.rule, message=finding.message)
        for finding in budget_findings(estimate, settings.config.budget.monthly_usd)
    ]
    return estimate, findings


