"""Stack-level rules: they need links between resources or resource options.

Resources reference each other by value: a scaling policy's
``autoscalingGroupName`` holds the group's name.  Offline, outputs carry resolved
names; under ``pulumi preview`` a new group's name may still be UNKNOWN, so a link
is also taken from the engine's property dependencies (the policy's
``autoscalingGroupName`` was computed from the group's URN).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .model import UNKNOWN, PlannedResource, PolicyConfig, StackReport
from .resource_types import AUTOSCALING_GROUP, LAUNCH_TEMPLATE, LUSTRE_FILE_SYSTEM, VOLUME
from .rules.file_systems import is_persistent
from .values import as_list, as_number, entry, is_true, mappings, text

SCHEDULE = "aws:autoscaling/schedule:Schedule"
SCALING_POLICY = "aws:autoscaling/policy:Policy"

# Instance families with GPUs or ML accelerators: p3/p4d/p5, g4dn/g5/g6e, gr6, dl1, trn1, inf2.
_ACCELERATED_FAMILY = re.compile(r"^(p|g|gr|dl|trn|inf)\d", re.IGNORECASE)


def _identifiers(resource: PlannedResource) -> set[str]:
    """Values other resources may use to reference this one (its name, id, ARN, URN)."""
    values = {resource.urn}
    for key in ("name", "id", "arn"):
        value = resource.props.get(key)
        if isinstance(value, str) and value:
            values.add(value)
    return values


def _references(resource: PlannedResource, prop: str, value: Any, target: PlannedResource) -> bool:
    if isinstance(value, str) and value and value in _identifiers(target):
        return True
    return target.urn in resource.property_dependencies.get(prop, ())


def _launch_templates_of(group: PlannedResource, templates: list[PlannedResource]) -> list[PlannedResource]:
    launch_template = group.props.get("launchTemplate")
    mixed = entry(entry(group.props.get("mixedInstancesPolicy"), "launchTemplate"), "launchTemplateSpecification")
    references = [
        ("launchTemplate", entry(launch_template, "id")),
        ("launchTemplate", entry(launch_template, "name")),
        ("mixedInstancesPolicy", entry(mixed, "launchTemplateId")),
        ("mixedInstancesPolicy", entry(mixed, "launchTemplateName")),
    ]
    return [
        template
        for template in templates
        if any(_references(group, prop, value, template) for prop, value in references)
    ]


def _wants_accelerators(requirements: Any) -> bool:
    accelerator_types = [str(kind).lower() for kind in as_list(entry(requirements, "acceleratorTypes"))]
    minimum = as_number(entry(entry(requirements, "acceleratorCount"), "min"))
    return "gpu" in accelerator_types or (minimum is not None and minimum >= 1)


def _is_gpu_group(group: PlannedResource, templates: list[PlannedResource]) -> bool:
    """True when any instance type or requirement is accelerated, or when none can be found."""
    instance_types: list[str] = []
    overrides = mappings(entry(entry(group.props.get("mixedInstancesPolicy"), "launchTemplate"), "overrides"))
    for override in overrides:
        if text(override.get("instanceType")):
            instance_types.append(override["instanceType"])
        if _wants_accelerators(override.get("instanceRequirements")):
            return True
    for template in _launch_templates_of(group, templates):
        if text(template.props.get("instanceType")):
            instance_types.append(template.props["instanceType"])
        if _wants_accelerators(template.props.get("instanceRequirements")):
            return True
    if not instance_types:
        return True  # cannot tell: warn rather than miss a GPU group
    return any(_ACCELERATED_FAMILY.match(instance_type) for instance_type in instance_types)


def _attached(action: PlannedResource, group: PlannedResource) -> bool:
    """Whether a schedule or scaling policy targets the group."""
    return _references(action, "autoscalingGroupName", action.props.get("autoscalingGroupName"), group)


def _scales_in(policy: PlannedResource, group: PlannedResource) -> bool:
    props = policy.props
    if props.get("enabled") is not None and not is_true(props.get("enabled")):
        return False
    policy_type = text(props.get("policyType")) or "SimpleScaling"  # AWS default
    if policy_type == "TargetTrackingScaling":
        return not is_true(entry(props.get("targetTrackingConfiguration"), "disableScaleIn"))
    if policy_type == "StepScaling":
        adjustments = [as_number(step.get("scalingAdjustment")) for step in mappings(props.get("stepAdjustments"))]
    elif policy_type == "SimpleScaling":
        adjustments = [as_number(props.get("scalingAdjustment"))]
    else:
        return False  # predictive scaling only raises capacity ahead of forecast load
    if props.get("adjustmentType") == "ExactCapacity":
        # The adjustment is the new capacity: a step below the group's maximum can shrink it.
        max_size = as_number(group.props.get("maxSize"))
        return any(value is not None and max_size is not None and value < max_size for value in adjustments)
    return any(value is not None and value < 0 for value in adjustments)


def validate_gpu_group_has_scale_in_path(
    resources: Sequence[PlannedResource], report: StackReport, config: PolicyConfig | None = None
) -> None:
    groups = [resource for resource in resources if resource.type == AUTOSCALING_GROUP]
    templates = [resource for resource in resources if resource.type == LAUNCH_TEMPLATE]
    schedules = [resource for resource in resources if resource.type == SCHEDULE]
    policies = [resource for resource in resources if resource.type == SCALING_POLICY]
    for group in groups:
        if not _is_gpu_group(group, templates):
            continue
        if any(_attached(schedule, group) for schedule in schedules):
            continue
        if any(_attached(policy, group) and _scales_in(policy, group) for policy in policies):
            continue
        report(
            "GPU Auto Scaling group has no scale-in path: no scheduled action, no target-tracking policy "
            "that may scale in, and no scaling policy with a negative adjustment, so idle GPUs keep "
            "running. Fix: in a stack file, give the group idleShutdown, scaling.gpuIdleScaleIn, "
            "scaling.targetTracking (without disableScaleIn) or scaling.schedules (e.g. a night schedule "
            "with desiredCapacity 0); "
            "in a Pulumi program: add an aws.autoscaling.Schedule (e.g. nightly scale to zero) or a "
            "target-tracking aws.autoscaling.Policy for the group.",
            group.urn,
        )


def _is_retained(options: Mapping[str, Any]) -> bool:
    return is_true(options.get("retainOnDelete")) or is_true(options.get("protect"))


def validate_data_volume_retained(
    resources: Sequence[PlannedResource], report: StackReport, config: PolicyConfig | None = None
) -> None:
    for resource in resources:
        if resource.type == VOLUME and not _is_retained(resource.options):
            report(
                "EBS data volume is deleted with the stack (neither retainOnDelete nor protect is set). "
                "Fix: create it with ResourceOptions(retain_on_delete=True, protect=True); the policy "
                "engine sees only protect, so set both.",
                resource.urn,
            )
        elif resource.type == LUSTRE_FILE_SYSTEM and is_persistent(resource.props) and not _is_retained(resource.options):
            report(
                "Persistent FSx for Lustre file system is deleted with the stack (neither retainOnDelete nor "
                "protect is set), and with it whatever was not yet exported to S3. Fix: keep "
                "storage.lustre.retainOnDelete true (the default for PERSISTENT_2).",
                resource.urn,
            )


def _launches_spot(template: PlannedResource) -> bool:
    return entry(template.props.get("instanceMarketOptions"), "marketType") == "spot"


def validate_asg_spot_template_rebalanced(
    resources: Sequence[PlannedResource], report: StackReport, config: PolicyConfig | None = None
) -> None:
    """Groups whose launch template requests Spot (instanceMarketOptions) need capacity rebalancing.

    The group's own inputs do not say it runs Spot, so its template is looked up in the stack.
    A capacityRebalance still unknown during preview is left to `pulumi up`.
    """
    groups = [resource for resource in resources if resource.type == AUTOSCALING_GROUP]
    templates = [resource for resource in resources if resource.type == LAUNCH_TEMPLATE]
    for group in groups:
        rebalance = group.props.get("capacityRebalance")
        if rebalance is UNKNOWN or is_true(rebalance):
            continue
        spot_templates = [template for template in _launch_templates_of(group, templates) if _launches_spot(template)]
        if spot_templates:
            report(
                f"Auto Scaling group launches Spot instances (launch template {spot_templates[0].name} sets "
                "instanceMarketOptions.marketType spot) without capacity rebalancing. Fix: set capacityRebalance "
                "to true so at-risk Spot instances are replaced before they are interrupted.",
                group.urn,
            )


def _launches_into_capacity_block(template: PlannedResource) -> bool:
    return entry(template.props.get("instanceMarketOptions"), "marketType") == "capacity-block"


def validate_capacity_block_group_on_demand_one_type(
    resources: Sequence[PlannedResource], report: StackReport, config: PolicyConfig | None = None
) -> None:
    """Instances launch into a Capacity Block on-demand, of its one type (EC2 user guide, "Launch
    instances into a Capacity Block"): a group mixing types or buying spot there launches nothing
    (or outside the block)."""
    groups = [resource for resource in resources if resource.type == AUTOSCALING_GROUP]
    templates = [resource for resource in resources if resource.type == LAUNCH_TEMPLATE]
    for group in groups:
        blocks = [template for template in _launch_templates_of(group, templates) if _launches_into_capacity_block(template)]
        if not blocks:
            continue
        policy = group.props.get("mixedInstancesPolicy")
        if not policy:
            continue
        overrides = mappings(entry(entry(policy, "launchTemplate"), "overrides"))
        on_demand = as_number(entry(entry(policy, "instancesDistribution"), "onDemandPercentageAboveBaseCapacity"))
        spot_share = 100 - (100 if on_demand is None else on_demand)
        if len(overrides) > 1 or spot_share > 0:
            report(
                f"Auto Scaling group launches into a Capacity Block (launch template {blocks[0].name} sets "
                f"instanceMarketOptions.marketType capacity-block) through a mixed instances policy with "
                f"{len(overrides)} types and {spot_share:g}% spot. Fix: name the block's launch template on the "
                "group itself, one instance type, on-demand only.",
                group.urn,
            )


def validate_reservations_are_used(
    resources: Sequence[PlannedResource], report: StackReport, config: PolicyConfig | None = None
) -> None:
    """A group that names Capacity Reservations with preference `none` does not use them, while
    each ODCR bills its instances at the on-demand rate whether used or not."""
    for group in (resource for resource in resources if resource.type == AUTOSCALING_GROUP):
        specification = group.props.get("capacityReservationSpecification")
        target = entry(specification, "capacityReservationTarget")
        named = [*as_list(entry(target, "capacityReservationIds")), *as_list(entry(target, "capacityReservationResourceGroupArns"))]
        if named and entry(specification, "capacityReservationPreference") == "none":
            report(
                f"Auto Scaling group names Capacity Reservations ({', '.join(map(str, named))}) with preference "
                "none, so it never launches into them, and each bills its instances at the on-demand rate used or "
                "not. Fix: set capacity.reservations.preference to capacity-reservations-first (or -only), or drop them.",
                group.urn,
            )
