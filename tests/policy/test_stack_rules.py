"""The stack rules on the cases their verdict turns on: which groups count as GPU groups, which
scaling policies can scale in, what share of a Capacity Block group is spot, and every group of a
stack being looked at."""

from __future__ import annotations

from gpucloud.policy import PlannedResource, PolicyConfig
from gpucloud.policy.stack_rules import (
    validate_asg_spot_template_rebalanced,
    validate_capacity_block_group_on_demand_one_type,
    validate_gpu_group_has_scale_in_path,
)
from policy_cases import (
    BLOCK_TEMPLATE,
    CPU_GROUP,
    CPU_TEMPLATE,
    GPU_GROUP,
    GPU_TEMPLATE,
    GROUP,
    LAUNCH_TEMPLATE,
    SCHEDULE,
    SPOT_TEMPLATE,
    SPOT_TEMPLATE_GROUP,
    block_group,
    group,
    launch_template,
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


def block_groups_flagged(*resources: PlannedResource) -> list[str | None]:
    flagged: list[str | None] = []
    validate_capacity_block_group_on_demand_one_type(
        list(resources), lambda message, urn=None: flagged.append(urn), PolicyConfig()
    )
    return flagged


def block_group_with_distribution(name: str, distribution: dict | None) -> PlannedResource:
    """A group on the block's template through a mixed instances policy of one type."""
    policy = {"launchTemplate": {"launchTemplateSpecification": {"launchTemplateId": "lt-0block"},
                                 "overrides": [{"instanceType": "p5.48xlarge"}]}}
    if distribution is not None:
        policy["instancesDistribution"] = distribution
    return planned(GROUP, name, group(name=name, launchTemplate=None, mixedInstancesPolicy=policy))


def test_capacity_block_rule_checks_every_group_not_just_the_first():
    on_template = planned(GROUP, "frontier-asg", group(name="frontier-asg", launchTemplate={"id": "lt-0block"}))
    spot = block_group("frontier-spot-asg", 1, 50)

    assert block_groups_flagged(BLOCK_TEMPLATE, GPU_TEMPLATE, GPU_GROUP, on_template, spot) == [spot.urn]


def test_capacity_block_group_with_one_percent_spot_is_flagged():
    one_percent = block_group("frontier-spot-asg", 1, 1)

    assert block_groups_flagged(BLOCK_TEMPLATE, one_percent) == [one_percent.urn]


def test_capacity_block_group_of_one_type_all_on_demand_passes():
    all_on_demand = block_group_with_distribution("frontier-asg", {"onDemandPercentageAboveBaseCapacity": 100})

    assert block_groups_flagged(BLOCK_TEMPLATE, all_on_demand) == []


def test_capacity_block_group_all_spot_above_its_base_is_flagged():
    """onDemandPercentageAboveBaseCapacity 0 is all spot, not the default 100."""
    all_spot = block_group_with_distribution("frontier-asg", {"onDemandPercentageAboveBaseCapacity": 0})

    assert block_groups_flagged(BLOCK_TEMPLATE, all_spot) == [all_spot.urn]


def test_capacity_block_group_without_a_distribution_is_on_demand_by_default():
    """onDemandPercentageAboveBaseCapacity defaults to 100 (Auto Scaling API, InstancesDistribution)."""
    assert block_groups_flagged(BLOCK_TEMPLATE, block_group_with_distribution("frontier-asg", None)) == []


def test_gpu_group_listed_after_one_with_a_scale_in_policy_is_still_checked():
    idle = scaling_policy("idle", policyType="SimpleScaling", adjustmentType="ChangeInCapacity", scalingAdjustment=-1)
    second = planned(GROUP, "vision-gpu-asg-2", group(name="vision-gpu-asg-2"))

    assert groups_without_scale_in(GPU_TEMPLATE, GPU_GROUP, idle, second) == [second.urn]


def test_group_whose_instance_type_cannot_be_found_counts_as_a_gpu_group():
    """Its launch template is not in the stack: warn rather than miss a GPU group."""
    elsewhere = planned(GROUP, "vision-other-asg",
                        group(name="vision-other-asg", launchTemplate={"id": "lt-0elsewhere"}))

    assert groups_without_scale_in(elsewhere) == [elsewhere.urn]


def test_spot_rebalance_rule_checks_every_group_not_just_the_first():
    rebalanced = planned(GROUP, "vision-spot-ok-asg",
                         group(name="vision-spot-ok-asg", launchTemplate={"id": "lt-0spot"}, capacityRebalance=True))
    flagged: list[str | None] = []

    validate_asg_spot_template_rebalanced([SPOT_TEMPLATE, rebalanced, SPOT_TEMPLATE_GROUP],
                                          lambda message, urn=None: flagged.append(urn), PolicyConfig())

    assert flagged == [SPOT_TEMPLATE_GROUP.urn]


def test_group_on_a_template_asking_for_accelerators_is_a_gpu_group():
    requirements = {"acceleratorCount": {"min": 1}, "vcpuCount": {"min": 4}, "memoryMib": {"min": 16384}}
    template = planned(LAUNCH_TEMPLATE, "vision-req-lt",
                       {**launch_template(instanceType=None, instanceRequirements=requirements), "id": "lt-0req"})
    on_requirements = planned(GROUP, "vision-req-asg", group(name="vision-req-asg", launchTemplate={"id": "lt-0req"}))

    assert groups_without_scale_in(template, on_requirements) == [on_requirements.urn]
