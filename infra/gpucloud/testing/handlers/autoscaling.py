"""Auto Scaling groups, lifecycle hooks, scaling policies and scheduled actions."""

from __future__ import annotations

import datetime
from typing import Any

from gpucloud.limits import MAX_REQUIREMENT_SETS
from gpucloud.testing.registry import Account, Created, ResourceRequest, drop_none, refused, register_update, resource


def _template_spec(spec: dict[str, Any] | None, id_key: str = "launchTemplateId", name_key: str = "launchTemplateName") -> dict[str, Any] | None:
    """A LaunchTemplateSpecification. pulumi-aws names its fields `launchTemplateId`/`launchTemplateName`
    inside a mixed instances policy, and `id`/`name` on the group's own `launchTemplate`."""
    if not spec:
        return None
    return drop_none(
        {
            "LaunchTemplateId": spec.get(id_key),
            "LaunchTemplateName": spec.get(name_key),
            "Version": str(spec["version"]) if spec.get("version") is not None else None,
        }
    )


def _bounds(value: dict[str, Any] | None) -> dict[str, Any] | None:
    return drop_none({"Min": (value or {}).get("min"), "Max": (value or {}).get("max")}) if value else None


def _instance_requirements(requirements: dict[str, Any] | None) -> dict[str, Any] | None:
    """Attribute-based selection, in the API's shape; botocore checks it against the model (it
    requires VCpuCount and MemoryMiB). terraform-provider-aws refuses a `min` or `max` under 1 for
    either (`validation.IntAtLeast(1)`, internal/service/autoscaling/group.go, read 2026-11-25)."""
    if not requirements:
        return None
    for key in ("vcpuCount", "memoryMib"):
        for end, value in (requirements.get(key) or {}).items():
            if value is not None and value < 1:
                raise refused("CreateAutoScalingGroup", "ValidationError",
                              f"instance_requirements.{key}.{end} is {value}: expected at least 1 (terraform-provider-aws)")
    return drop_none({
        "VCpuCount": _bounds(requirements.get("vcpuCount")),
        "MemoryMiB": _bounds(requirements.get("memoryMib")),
        "AcceleratorTypes": requirements.get("acceleratorTypes"),
        "AcceleratorCount": _bounds(requirements.get("acceleratorCount")),
        "AcceleratorManufacturers": requirements.get("acceleratorManufacturers"),
        "AcceleratorNames": requirements.get("acceleratorNames"),
        "AcceleratorTotalMemoryMiB": _bounds(requirements.get("acceleratorTotalMemoryMib")),
        "AllowedInstanceTypes": requirements.get("allowedInstanceTypes"),
        "ExcludedInstanceTypes": requirements.get("excludedInstanceTypes"),
    })


def _mixed_instances_policy(policy: dict[str, Any] | None) -> dict[str, Any] | None:
    if not policy:
        return None
    template = policy.get("launchTemplate") or {}
    sets = sum(1 for override in template.get("overrides", []) if override.get("instanceRequirements"))
    if sets > MAX_REQUIREMENT_SETS:
        raise refused("CreateAutoScalingGroup", "ValidationError",
                      f"the mixed instances policy has {sets} sets of instance requirements; an Auto Scaling group "
                      f"takes at most {MAX_REQUIREMENT_SETS}")
    distribution = policy.get("instancesDistribution") or {}
    return drop_none(
        {
            "LaunchTemplate": drop_none(
                {
                    "LaunchTemplateSpecification": _template_spec(template.get("launchTemplateSpecification")),
                    "Overrides": [
                        drop_none(
                            {
                                "InstanceType": override.get("instanceType"),
                                "InstanceRequirements": _instance_requirements(override.get("instanceRequirements")),
                                "WeightedCapacity": override.get("weightedCapacity"),
                                "LaunchTemplateSpecification": _template_spec(override.get("launchTemplateSpecification")),
                            }
                        )
                        for override in template.get("overrides", [])
                    ],
                }
            ),
            "InstancesDistribution": drop_none(
                {
                    "OnDemandAllocationStrategy": distribution.get("onDemandAllocationStrategy"),
                    "OnDemandBaseCapacity": distribution.get("onDemandBaseCapacity"),
                    "OnDemandPercentageAboveBaseCapacity": distribution.get("onDemandPercentageAboveBaseCapacity"),
                    "SpotAllocationStrategy": distribution.get("spotAllocationStrategy"),
                    "SpotInstancePools": distribution.get("spotInstancePools"),
                    "SpotMaxPrice": distribution.get("spotMaxPrice"),
                }
            ),
        }
    )


def _capacity_reservations(account: Account, name: str, specification: dict[str, Any] | None) -> dict[str, Any] | None:
    """The group's CapacityReservationSpecification; each reservation it names must be one the
    engine keeps (moto has no Capacity Reservations and would accept any id)."""
    if not specification:
        return None
    target = specification.get("capacityReservationTarget") or {}
    preference = specification.get("capacityReservationPreference")
    if preference in ("none", "open") and any(target.values()):
        # botocore autoscaling model 2011-01-01, CapacityReservationSpecification: "If you specify open or
        # none for CapacityReservationPreference, do not specify a CapacityReservationTarget."
        raise refused("CreateAutoScalingGroup", "ValidationError",
                      f"{name}: capacity reservation preference {preference} takes no capacity reservation target")
    for reservation_id in target.get("capacityReservationIds") or []:
        found = account.capacity_reservations.get(reservation_id)
        if found is None:
            raise refused("CreateAutoScalingGroup", "ValidationError",
                          f"{name}: capacity reservation {reservation_id} does not exist")
        if found["state"] not in ("active", "scheduled", "payment-pending"):
            raise refused("CreateAutoScalingGroup", "ValidationError",
                          f"{name}: capacity reservation {reservation_id} is {found['state']}")
    return drop_none({
        "CapacityReservationPreference": specification.get("capacityReservationPreference"),
        "CapacityReservationTarget": drop_none({
            "CapacityReservationIds": target.get("capacityReservationIds"),
            "CapacityReservationResourceGroupArns": target.get("capacityReservationResourceGroupArns"),
        }),
    })


def _check_template_names_a_type(account: Account, name: str, spec: dict[str, Any] | None) -> None:
    """A group that uses its launch template directly launches the type the template names: the
    instance type is optional in a launch template only for a mixed instances policy, whose
    overrides give it (EC2 Auto Scaling user guide, "Create a launch template using advanced
    settings", read 2026-11-25). moto accepts the group and launches a default type."""
    if not spec:
        return
    selector = {"LaunchTemplateId": spec["id"]} if spec.get("id") else {"LaunchTemplateName": spec.get("name")}
    version = str(spec.get("version") or "$Default")
    [found] = account.client("ec2").describe_launch_template_versions(**selector, Versions=[version])["LaunchTemplateVersions"]
    if not found["LaunchTemplateData"].get("InstanceType"):
        raise refused("CreateAutoScalingGroup", "ValidationError",
                      f"{name}: launch template {found['LaunchTemplateId']} version {found['VersionNumber']} names no "
                      "instance type, and the group has no mixed instances policy to give one")


@resource("aws:autoscaling/group:Group")
def create_group(account: Account, request: ResourceRequest) -> Created:
    autoscaling = account.client("autoscaling")
    inputs = request.inputs
    name = request.physical_name()
    if not inputs.get("mixedInstancesPolicy"):
        _check_template_names_a_type(account, name, inputs.get("launchTemplate"))
    autoscaling.create_auto_scaling_group(
        **drop_none(
            {
                "AutoScalingGroupName": name,
                "MinSize": inputs["minSize"],
                "MaxSize": inputs["maxSize"],
                "DesiredCapacity": inputs.get("desiredCapacity"),
                "VPCZoneIdentifier": ",".join(inputs.get("vpcZoneIdentifiers", [])) or None,
                "AvailabilityZones": inputs.get("availabilityZones"),
                "CapacityRebalance": inputs.get("capacityRebalance"),
                "HealthCheckType": inputs.get("healthCheckType"),
                "HealthCheckGracePeriod": inputs.get("healthCheckGracePeriod"),
                "PlacementGroup": inputs.get("placementGroup"),
                "LaunchTemplate": _template_spec(inputs.get("launchTemplate"), id_key="id", name_key="name"),
                "MixedInstancesPolicy": _mixed_instances_policy(inputs.get("mixedInstancesPolicy")),
                "CapacityReservationSpecification": _capacity_reservations(
                    account, name, inputs.get("capacityReservationSpecification")),
                "AvailabilityZoneDistribution": drop_none({"CapacityDistributionStrategy": (
                    inputs.get("availabilityZoneDistribution") or {}).get("capacityDistributionStrategy")}),
                "Tags": [
                    {
                        "ResourceId": name,
                        "ResourceType": "auto-scaling-group",
                        "Key": tag["key"],
                        "Value": tag["value"],
                        "PropagateAtLaunch": bool(tag.get("propagateAtLaunch")),
                    }
                    for tag in inputs.get("tags", [])
                ],
            }
        )
    )
    # moto ignores LifecycleHookSpecificationList, so initial hooks are put right after creation.
    for hook in inputs.get("initialLifecycleHooks", []):
        _put_hook(account, name, hook)
    pool = inputs.get("warmPool")
    if pool:
        reuse = (pool.get("instanceReusePolicy") or {}).get("reuseOnScaleIn")
        autoscaling.put_warm_pool(**drop_none({
            "AutoScalingGroupName": name,
            "MinSize": pool.get("minSize"),
            "MaxGroupPreparedCapacity": pool.get("maxGroupPreparedCapacity"),
            "PoolState": pool.get("poolState"),
            "InstanceReusePolicy": {"ReuseOnScaleIn": bool(reuse)} if reuse is not None else None,
        }))
    group = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"][0]
    return Created(id=name, outputs={"name": name, "arn": group["AutoScalingGroupARN"]})


def _put_hook(account: Account, group_name: str, hook: dict[str, Any]) -> None:
    account.client("autoscaling").put_lifecycle_hook(
        **drop_none(
            {
                "AutoScalingGroupName": group_name,
                "LifecycleHookName": hook["name"],
                "LifecycleTransition": hook["lifecycleTransition"],
                "DefaultResult": hook.get("defaultResult"),
                "HeartbeatTimeout": hook.get("heartbeatTimeout"),
                "NotificationMetadata": hook.get("notificationMetadata"),
                "NotificationTargetARN": hook.get("notificationTargetArn"),
                "RoleARN": hook.get("roleArn"),
            }
        )
    )


@resource("aws:autoscaling/lifecycleHook:LifecycleHook")
def put_lifecycle_hook(account: Account, request: ResourceRequest) -> Created:
    """PutLifecycleHook creates the hook or replaces its settings, so it serves create and update."""
    group_name = request.inputs["autoscalingGroupName"]
    _put_hook(account, group_name, request.inputs)
    return Created(id=request.inputs["name"])


@register_update("aws:autoscaling/lifecycleHook:LifecycleHook")
def update_lifecycle_hook(account: Account, request: ResourceRequest, physical_id: str) -> Created:
    """A new name replaces the hook (the provider creates the new one, then deletes the old)."""
    created = put_lifecycle_hook(account, request)
    if physical_id != created.id:
        account.client("autoscaling").delete_lifecycle_hook(
            AutoScalingGroupName=request.inputs["autoscalingGroupName"], LifecycleHookName=physical_id
        )
    return created


def _step_adjustments(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def bound(value: Any) -> float | None:
        return None if value in (None, "") else float(value)

    return [
        drop_none(
            {
                "MetricIntervalLowerBound": bound(step.get("metricIntervalLowerBound")),
                "MetricIntervalUpperBound": bound(step.get("metricIntervalUpperBound")),
                "ScalingAdjustment": step["scalingAdjustment"],
            }
        )
        for step in steps
    ]


def _target_tracking(config: dict[str, Any] | None) -> dict[str, Any] | None:
    if not config:
        return None
    custom = config.get("customizedMetricSpecification") or {}
    predefined = config.get("predefinedMetricSpecification") or {}
    return drop_none(
        {
            "TargetValue": config["targetValue"],
            "DisableScaleIn": config.get("disableScaleIn"),
            "PredefinedMetricSpecification": drop_none(
                {
                    "PredefinedMetricType": predefined.get("predefinedMetricType"),
                    "ResourceLabel": predefined.get("resourceLabel"),
                }
            ),
            "CustomizedMetricSpecification": drop_none(
                {
                    "MetricName": custom.get("metricName"),
                    "Namespace": custom.get("namespace"),
                    "Statistic": custom.get("statistic"),
                    "Unit": custom.get("unit"),
                    "Dimensions": [
                        {"Name": dimension["name"], "Value": dimension["value"]}
                        for dimension in custom.get("metricDimensions", [])
                    ],
                }
            ),
        }
    )


def _check_request_count_label(account: Account, group: str, name: str, config: dict[str, Any] | None) -> None:
    """ALBRequestCountPerTarget needs a resource label naming a target group attached to the group
    (EC2 Auto Scaling API reference, PredefinedMetricSpecification `ResourceLabel`: "You can't specify
    a resource label unless the target group is attached to the Auto Scaling group", read 2026-11-25);
    moto takes any label or none."""
    predefined = (config or {}).get("predefinedMetricSpecification") or {}
    if predefined.get("predefinedMetricType") != "ALBRequestCountPerTarget":
        return
    label = predefined.get("resourceLabel") or ""
    parts = label.split("/")
    if len(parts) != 6 or parts[0] != "app" or parts[3] != "targetgroup":
        raise refused("PutScalingPolicy", "ValidationError",
                      f"{name}: ALBRequestCountPerTarget needs a resource label app/<lb>/<id>/targetgroup/<tg>/<id>, got {label!r}")
    attached = account.client("autoscaling").describe_load_balancer_target_groups(
        AutoScalingGroupName=group)["LoadBalancerTargetGroups"]
    if not any(found["LoadBalancerTargetGroupARN"].endswith("/".join(parts[3:])) for found in attached):
        raise refused("PutScalingPolicy", "ValidationError",
                      f"{name}: the target group {'/'.join(parts[3:])} of the resource label is not attached to {group}")


@resource("aws:autoscaling/policy:Policy")
def put_scaling_policy(account: Account, request: ResourceRequest) -> Created:
    autoscaling = account.client("autoscaling")
    inputs = request.inputs
    name = request.physical_name()
    group = inputs["autoscalingGroupName"]
    autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[group])["AutoScalingGroups"][0]
    _check_request_count_label(account, group, name, inputs.get("targetTrackingConfiguration"))
    autoscaling.put_scaling_policy(
        **drop_none(
            {
                "AutoScalingGroupName": group,
                "PolicyName": name,
                "PolicyType": inputs.get("policyType", "SimpleScaling"),
                "AdjustmentType": inputs.get("adjustmentType"),
                "MetricAggregationType": inputs.get("metricAggregationType"),
                "EstimatedInstanceWarmup": inputs.get("estimatedInstanceWarmup"),
                "Cooldown": inputs.get("cooldown"),
                "ScalingAdjustment": inputs.get("scalingAdjustment"),
                "StepAdjustments": _step_adjustments(inputs.get("stepAdjustments", [])),
                "TargetTrackingConfiguration": _target_tracking(inputs.get("targetTrackingConfiguration")),
            }
        )
    )
    policy = autoscaling.describe_policies(AutoScalingGroupName=group, PolicyNames=[name])["ScalingPolicies"][0]
    return Created(id=name, outputs={"name": name, "arn": policy["PolicyARN"]})


@resource("aws:autoscaling/schedule:Schedule")
def put_scheduled_action(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    group = inputs["autoscalingGroupName"]
    name = inputs["scheduledActionName"]

    def size(key: str) -> int | None:
        value = inputs.get(key)
        return None if value is None or value < 0 else value

    start = inputs.get("startTime")
    if start and datetime.datetime.fromisoformat(start.replace("Z", "+00:00")) <= datetime.datetime.now(datetime.timezone.utc):
        # What Auto Scaling answers (quoted in hashicorp/terraform-provider-aws pull request 3033);
        # moto takes any time.
        raise refused("PutScheduledUpdateGroupAction", "ValidationError",
                      f"{name}: Given start time is in the past ({start})")

    account.client("autoscaling").put_scheduled_update_group_action(
        **drop_none(
            {
                "AutoScalingGroupName": group,
                "ScheduledActionName": name,
                "Recurrence": inputs.get("recurrence"),
                "StartTime": inputs.get("startTime"),
                "EndTime": inputs.get("endTime"),
                "TimeZone": inputs.get("timeZone"),
                "MinSize": size("minSize"),
                "MaxSize": size("maxSize"),
                "DesiredCapacity": size("desiredCapacity"),
            }
        )
    )
    arn = account.arn("autoscaling", f"scheduledUpdateGroupAction:*:autoScalingGroupName/{group}:scheduledActionName/{name}")
    return Created(id=name, outputs={"arn": arn})
