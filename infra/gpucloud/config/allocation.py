"""How Auto Scaling picks a group's instances among its types and zones: the mixed instances
policy's allocation strategies and capacity rebalancing (`capacity.allocation`).

terraform-provider-aws validates none of these strings (internal/service/autoscaling/group.go:
`on_demand_allocation_strategy` and `spot_allocation_strategy` are Optional and Computed with no
ValidateFunc, `spot_instance_pools` only IntAtLeast(0), read 2026-11-28 at commit 00a919d) and
moto takes any value, so each rule below is the Auto Scaling API's (API reference,
InstancesDistribution, read 2026-11-28): AWS would refuse the group at `pulumi up`. The rules
that tie `capacity.allocation` to the rest of the group are in `gpucloud.config.rules.allocation`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from gpucloud.config.fields import ConfigModel

SpotStrategy = Literal["price-capacity-optimized", "capacity-optimized", "capacity-optimized-prioritized", "lowest-price"]
OnDemandStrategy = Literal["prioritized", "lowest-price"]

DEFAULT_SPOT = "price-capacity-optimized"
"""The API reference's recommended spot strategy: the pools least likely to be interrupted, then the cheapest."""
DEFAULT_ON_DEMAND = "prioritized"
"""Auto Scaling's default without InstanceRequirements: the listed order, first type first."""
REQUIREMENTS_ON_DEMAND = "lowest-price"
"""Auto Scaling's default, and only value, with InstanceRequirements."""


class AllocationConfig(ConfigModel):
    """Auto Scaling's InstancesDistribution strategies for the group's mixed instances policy."""

    spot: SpotStrategy | None = None
    """How spot instances are spread over the group's pools (a pool is a type in a zone):
    price-capacity-optimized (unset), capacity-optimized, capacity-optimized-prioritized (capacity first, then
    instanceTypes in the order listed) or lowest-price (cheapest pools only; interrupted most)."""
    on_demand: OnDemandStrategy | None = None
    """How on-demand instances pick a type: prioritized (unset: instanceTypes in the order listed) or lowest-price
    (the only one with instanceRequirements)."""
    spot_instance_pools: int | None = Field(default=None, ge=1, le=20)
    """With spot lowest-price only: how many of the cheapest pools to spread spot instances over (1-20; AWS's
    default 2)."""
    capacity_rebalance: bool | None = None
    """Launch a replacement when EC2 signals a spot instance's raised risk of interruption, before it is reclaimed.
    Unset: on whenever the group runs spot."""

    @model_validator(mode="after")
    def pools_go_with_lowest_price(self) -> AllocationConfig:
        if self.spot_instance_pools is not None and self.spot != "lowest-price":
            raise ValueError(f"spotInstancePools is valid only with spot: lowest-price (Auto Scaling API, "
                             f"InstancesDistribution SpotInstancePools), not with spot: {self.spot or DEFAULT_SPOT}")
        return self
