"""The mixed instances policy's InstancesDistribution: the on-demand base and share, and how Auto
Scaling allocates spot and on-demand instances over the group's types (in the overrides' order,
highest priority first) and zones. The values come from `capacity.allocation`
(`gpucloud.config.allocation`, which holds the Auto Scaling API's rules on them)."""

from __future__ import annotations

from typing import Any

from gpucloud.config.allocation import AllocationConfig
from gpucloud.config.rules.allocation import spot_strategy
from gpucloud.config.groups import GroupConfig


def instances_distribution(
    *, on_demand_base_capacity: int, spot_percent: int, uses_spot: bool, by_requirements: bool,
    spot_strategy: str, on_demand_strategy: str | None, spot_instance_pools: int | None,
) -> dict[str, Any]:
    """pulumi-aws `instances_distribution`. `on_demand_strategy` None: Auto Scaling's default,
    prioritized, or lowest-price for a group of instance requirements (the only value it takes
    there: API reference, InstancesDistribution OnDemandAllocationStrategy, read 2026-11-28)."""
    distribution: dict[str, Any] = {
        "on_demand_base_capacity": on_demand_base_capacity,
        "on_demand_percentage_above_base_capacity": 100 - spot_percent if uses_spot else 100,
        "on_demand_allocation_strategy": on_demand_strategy or ("lowest-price" if by_requirements else "prioritized"),
        "spot_allocation_strategy": spot_strategy,
    }
    if spot_instance_pools is not None:
        distribution["spot_instance_pools"] = spot_instance_pools
    return distribution


def allocation_args(group: GroupConfig) -> dict[str, Any]:
    """The GpuInstanceGroupArgs fields `capacity.allocation` sets (unset keys keep the defaults)."""
    allocation = group.capacity.allocation or AllocationConfig()
    return {
        "spot_allocation_strategy": spot_strategy(group)[0],
        "on_demand_allocation_strategy": allocation.on_demand,
        "spot_instance_pools": allocation.spot_instance_pools,
        "capacity_rebalance": allocation.capacity_rebalance,
    }
