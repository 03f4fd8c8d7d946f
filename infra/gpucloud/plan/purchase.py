"""Each group's on-demand/spot split, stated in the plan: spotPercent defaults to 100 (all spot
above the on-demand base), which a reviewer should see without knowing the default."""

from __future__ import annotations

from typing import Any

from gpucloud.config import GroupConfig, StackConfig
from gpucloud.config.groups import purchase_split


def _spot_percent_source(group: GroupConfig) -> str:
    """Where the group's spotPercent comes from: the stack file, or a default (which one)."""
    if "spot_percent" not in group.model_fields_set:
        return "default"
    if group.persistent_volume_gib and group.spot_percent == 0:
        # GroupConfig sets 0 before validation when a persistent-volume group leaves it out, so a
        # default and a written 0 look alike here; either way the group must run on-demand.
        return "persistent-volume group, on-demand"
    return "stack file"


def _split(group: GroupConfig, capacity: int) -> dict[str, int]:
    on_demand, spot = purchase_split(capacity, group.on_demand_base_capacity, group.spot_percent)
    return {"capacity": capacity, "onDemand": on_demand, "spot": spot}


def purchase_options(config: StackConfig) -> list[dict[str, Any]]:
    """One entry per group: spotPercent and where it comes from, the on-demand base, and the
    instance counts each purchase option gets at desired and at maximum capacity."""
    return [
        {
            "group": group.name,
            "spotPercent": group.spot_percent,
            "spotPercentSource": _spot_percent_source(group),
            "onDemandBaseCapacity": group.on_demand_base_capacity,
            "desired": _split(group, group.initial_capacity),
            "max": _split(group, group.max_size),
        }
        for group in config.groups
    ]


def purchase_line(option: dict[str, Any]) -> str:
    """`workbench: spot 100% above an on-demand base of 0 (spotPercent: default); desired 1 = ...`"""

    def counts(scenario: str) -> str:
        split = option[scenario]
        return f"{scenario} {split['capacity']} = {split['onDemand']} on-demand + {split['spot']} spot"

    return (f"{option['group']}: spot {option['spotPercent']}% above an on-demand base of "
            f"{option['onDemandBaseCapacity']} (spotPercent: {option['spotPercentSource']}); "
            f"{counts('desired')}; {counts('max')}")
