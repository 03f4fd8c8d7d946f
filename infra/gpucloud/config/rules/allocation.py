"""capacity.allocation against the rest of its group: what the Auto Scaling API refuses
(InstancesDistribution, read 2026-11-28: capacity-optimized-prioritized and on-demand prioritized
are not valid with InstanceRequirements) and settings that would do nothing (no mixed instances
policy in a Capacity Block or warm pool group, spot settings in a group without spot); and the
strategies a group gets, with where each comes from, for the component and the plan."""

from __future__ import annotations

from gpucloud.config.allocation import DEFAULT_ON_DEMAND, DEFAULT_SPOT, REQUIREMENTS_ON_DEMAND, AllocationConfig
from gpucloud.config.groups import GroupConfig
from gpucloud.config.stack import StackConfig


def allocation_problems(config: StackConfig) -> list[tuple[str, str]]:
    """Allocation settings Auto Scaling refuses, or that do nothing in the group, by key."""
    problems = []
    for index, group in enumerate(config.groups):
        allocation = group.capacity.allocation
        if allocation is None:
            continue
        key = f"gpu-cloud:groups[{index}].capacity.allocation"
        problem = _group_problem(group, allocation)
        if problem:
            problems.append((f"{key}.{problem[0]}" if problem[0] else key, problem[1]))
    return problems


def _group_problem(group: GroupConfig, allocation: AllocationConfig) -> tuple[str, str] | None:
    if group.capacity.capacity_block or group.warm_pool:
        reason = "capacity.capacityBlock" if group.capacity.capacity_block else "warmPool"
        return "", (f"a group with {reason} has one launch template and no mixed instances policy (Auto Scaling takes "
                    "neither with one), so there is no allocation to set: remove capacity.allocation")
    if group.instance_requirements is not None:
        if allocation.spot == "capacity-optimized-prioritized":
            return "spot", ("capacity-optimized-prioritized is not valid for a group of instanceRequirements (Auto "
                            "Scaling API, InstancesDistribution): list instanceTypes in priority order, or use "
                            "capacity-optimized")
        if allocation.on_demand == "prioritized":
            return "onDemand", ("prioritized cannot be used with instanceRequirements (Auto Scaling API, "
                                "InstancesDistribution): lowest-price is the only on-demand strategy there")
    if not group.uses_spot and (allocation.spot or allocation.spot_instance_pools or allocation.capacity_rebalance):
        return "spot" if allocation.spot else "capacityRebalance" if allocation.capacity_rebalance else "spotInstancePools", (
            f"the group runs no spot (spotPercent {group.spot_percent}, onDemandBaseCapacity "
            f"{group.on_demand_base_capacity}, maxSize {group.max_size}): spot settings would do nothing")
    return None


def spot_strategy(group: GroupConfig) -> tuple[str, str]:
    """The group's spot strategy and where it comes from (`stack file` or `default`)."""
    allocation = group.capacity.allocation
    if allocation and allocation.spot:
        return allocation.spot, "stack file"
    return DEFAULT_SPOT, "default"


def on_demand_strategy(group: GroupConfig) -> tuple[str, str]:
    allocation = group.capacity.allocation
    if allocation and allocation.on_demand:
        return allocation.on_demand, "stack file"
    return (REQUIREMENTS_ON_DEMAND if group.instance_requirements else DEFAULT_ON_DEMAND), "default"


def rebalances(group: GroupConfig) -> tuple[bool, str]:
    allocation = group.capacity.allocation
    if allocation and allocation.capacity_rebalance is not None:
        return allocation.capacity_rebalance, "stack file"
    return group.uses_spot, "default"
