"""The stack rules on the cases their verdict turns on: which groups count as GPU groups, which
scaling policies can scale in, and every group of a stack being looked at."""

from __future__ import annotations

from gpucloud.policy import PlannedResource, PolicyConfig
from gpucloud.policy.stack_rules import validate_gpu_group_has_scale_in_path
from policy_cases import (
    CPU_GROUP,
    CPU_TEMPLATE,
    GPU_GROUP,
    GPU_TEMPLATE,
    GROUP,
    SCHEDULE,
    group,
    planned,
    scaling_policy,
)


def groups_without_scale_in(*resources: PlannedResource) -> list[str | None]:
    flagged: list[str | None] = []
    validate_gpu_group_has_scale_in_path(list(resources), lambda message, urn=None: flagged.append(urn), PolicyConfig())
    return flagged


def mixed_group(*overrides: dict) -> PlannedResource:
    return planned(
        GROUP,
        "vision-mixed-asg",
        group(
            name="vision-mixed-asg",
            launchTemplate=None,
            mixedInstancesPolicy={"launchTemplate": {"overrides": list(overrides)}},
        ),
    )


def test_group_asking_for_at_least_one_accelerator_is_a_gpu_group():
    mixed = mixed_group({"instanceType": "m7i.large"}, {"instanceRequirements": {"acceleratorCount": {"min": 1}}})

    assert groups_without_scale_in(mixed) == [mixed.urn]


def test_group_asking_for_gpu_accelerators_is_a_gpu_group():
    mixed = mixed_group({"instanceType": "m7i.large"}, {"instanceRequirements": {"acceleratorTypes": ["gpu"]}})

    assert groups_without_scale_in(mixed) == [mixed.urn]


def test_group_allowing_zero_accelerators_is_not_a_gpu_group():
    mixed = mixed_group({"instanceType": "m7i.large"}, {"instanceRequirements": {"acceleratorCount": {"min": 0}}})

    assert groups_without_scale_in(mixed) == []


def test_disabled_scaling_policy_is_no_scale_in_path():
    policy = scaling_policy(
        "gpu-util", enabled=False, policyType="TargetTrackingScaling", targetTrackingConfiguration={"targetValue": 60}
    )

    assert groups_without_scale_in(GPU_TEMPLATE, GPU_GROUP, policy) == [GPU_GROUP.urn]


def test_simple_scaling_policy_with_a_negative_adjustment_scales_in():
    policy = scaling_policy("idle", policyType="SimpleScaling", adjustmentType="ChangeInCapacity", scalingAdjustment=-1)

    assert groups_without_scale_in(GPU_TEMPLATE, GPU_GROUP, policy) == []


def test_scaling_policy_with_no_type_is_simple_scaling():
    assert groups_without_scale_in(GPU_TEMPLATE, GPU_GROUP, scaling_policy("idle", scalingAdjustment=-2)) == []


def test_zero_adjustment_does_not_scale_in():
    policy = scaling_policy("hold", policyType="SimpleScaling", adjustmentType="ChangeInCapacity", scalingAdjustment=0)

    assert groups_without_scale_in(GPU_TEMPLATE, GPU_GROUP, policy) == [GPU_GROUP.urn]


def test_predictive_scaling_policy_does_not_scale_in():
    policy = scaling_policy("forecast", policyType="PredictiveScaling", scalingAdjustment=-1)

    assert groups_without_scale_in(GPU_TEMPLATE, GPU_GROUP, policy) == [GPU_GROUP.urn]


def test_exact_capacity_below_the_maximum_scales_in():
    policy = scaling_policy("shrink", policyType="SimpleScaling", adjustmentType="ExactCapacity", scalingAdjustment=2)

    assert groups_without_scale_in(GPU_TEMPLATE, GPU_GROUP, policy) == []


def test_exact_capacity_at_the_maximum_does_not_scale_in():
    policy = scaling_policy("full", policyType="SimpleScaling", adjustmentType="ExactCapacity", scalingAdjustment=8)

    assert GPU_GROUP.props["maxSize"] == 8
    assert groups_without_scale_in(GPU_TEMPLATE, GPU_GROUP, policy) == [GPU_GROUP.urn]


def test_gpu_group_listed_after_a_cpu_group_is_still_checked():
    assert groups_without_scale_in(CPU_TEMPLATE, CPU_GROUP, GPU_TEMPLATE, GPU_GROUP) == [GPU_GROUP.urn]


def test_gpu_group_listed_after_a_scheduled_one_is_still_checked():
    scheduled = planned(GROUP, "vision-night-asg", group(name="vision-night-asg"))
    nightly = planned(SCHEDULE, "nightly", {"autoscalingGroupName": "vision-night-asg", "desiredCapacity": 0})

    assert groups_without_scale_in(GPU_TEMPLATE, scheduled, nightly, GPU_GROUP) == [GPU_GROUP.urn]
