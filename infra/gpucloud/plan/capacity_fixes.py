"""What a group whose spot capacity is thin or unlikely can change, each fix with what it costs:
more types of the same GPU, more zones, `capacity-optimized-prioritized`, an on-demand base, a
reservation or a Capacity Block. Prices come from the catalog (`data/prices.json`) and, for spot,
from the spot prices the account facts recorded, where fresh."""

from __future__ import annotations

import datetime
from collections.abc import Container
from typing import Any

from moto.ec2.models.instance_types import INSTANCE_TYPES

from gpucloud.lookups import ResolvedGroup
from gpucloud.lookups.quotas import quota_family
from gpucloud.pricing.catalog import SUPPORTED_INSTANCE_TYPES, PricingError, instance_family, load_catalog
from gpucloud.testing.capacity_facts import CapacityFacts, SpotScoreFacts, fresh

MAX_ALTERNATIVES = 4
SCORED_TYPES_MINIMUM = 3
"""EC2 scores a request of one or two instance types always low (API reference,
GetSpotPlacementScores `InstanceTypes`, read 2026-11-28)."""


class Prices:
    """On-demand prices from the catalog; spot prices as recorded in the facts (the highest of a
    type's recorded zones, where fresh), else the catalog's estimate (on-demand less the family's
    conservative discount)."""

    def __init__(self, region: str, facts: CapacityFacts | None, now: datetime.datetime):
        self.region = region
        self.catalog = load_catalog()
        self.recorded = [price for price in (facts.spot_prices if facts else ()) if fresh(price.taken_at, now)]

    def on_demand(self, instance_type: str) -> float | None:
        try:
            return self.catalog.instance(instance_type, self.region).usd_per_hour
        except PricingError:
            return None

    def recorded_spot(self, instance_type: str, zones: list[str] | None = None) -> tuple[float, str] | None:
        """The dearest fresh recorded spot price of the type in the zones, labelled with its time."""
        recorded = [price for price in self.recorded if price.instance_type == instance_type
                    and (not zones or price.zone in zones)]
        if not recorded:
            return None
        dearest = max(recorded, key=lambda price: price.usd_per_hour)
        return dearest.usd_per_hour, f"recorded spot price, {dearest.since:%Y-%m-%d %H:%M} UTC"

    def spot(self, instance_type: str, zones: list[str] | None = None) -> tuple[float | None, str]:
        """The spot price and its label: `recorded spot price, <time>` or `catalog estimate`."""
        recorded = self.recorded_spot(instance_type, zones)
        if recorded:
            return recorded
        on_demand = self.on_demand(instance_type)
        discount = self.catalog.spot_discount(instance_family(instance_type), self.region)
        if on_demand is None:
            return None, "no price"
        return on_demand * (1 - (discount.discount if discount else 0.0)), "catalog estimate"


def _money(value: float | None) -> str:
    return "unpriced" if value is None else f"${value:,.3f}/h"


def same_gpu_types(group: ResolvedGroup, prices: Prices,
                   offered: Container[str] | None = None) -> list[tuple[str, str, float | None]]:
    """Catalog types with a GPU model and count of one of the group's types that it does not list,
    cheapest first: (type, GPU, on-demand USD/h); only types some zone of the region offers, where
    `offered` says which (the offerings the plan refuses an unoffered type by). The GPUs come from
    EC2's DescribeInstanceTypes data as the offline engine holds it."""
    shapes = {(kind.gpu_model, kind.node_gpu_count) for kind in group.instance_types}
    listed = {kind.name for kind in group.instance_types}
    found = []
    for name in SUPPORTED_INSTANCE_TYPES:
        gpus = (INSTANCE_TYPES.get(name) or {}).get("GpuInfo", {}).get("Gpus") or []
        if name in listed or not gpus or (gpus[0].get("Name"), gpus[0].get("Count")) not in shapes:
            continue
        if offered is not None and name not in offered:
            continue
        found.append((name, f"{gpus[0]['Count']} x {gpus[0]['Name']}", prices.on_demand(name)))
    return sorted(found, key=lambda item: (item[2] is None, item[2] or 0.0))[:MAX_ALTERNATIVES]


def capacity_fixes(group: ResolvedGroup, scores: SpotScoreFacts, facts: CapacityFacts, prices: Prices,
                   candidates: list[dict[str, Any]], allocation: dict[str, Any], now: datetime.datetime,
                   offered: Container[str] | None = None) -> list[dict[str, str]]:
    """Each fix as {fix, cost}; the costs per instance-hour unless said. `offered`: the GPU types
    the region offers (None: not known, no type is left out)."""
    fixes = [fix for fix in (
        _more_types(group, prices, offered),
        _more_zones(group, scores, candidates, prices),
        _prioritized(group, allocation, prices),
        _on_demand_base(group, prices),
        _reservation(group, facts, prices, now),
        _block(group, facts, now),
    ) if fix]
    return fixes


def _more_types(group: ResolvedGroup, prices: Prices, offered: Container[str] | None) -> dict[str, str] | None:
    alternatives = same_gpu_types(group, prices, offered)
    if not alternatives:
        return None
    named = ", ".join(f"{name} ({gpus})" for name, gpus, _price in alternatives)
    if group.config.instance_requirements is not None:
        return {"fix": f"widen instanceRequirements (allowedInstanceTypes, totalGpuMemoryMiB, vcpus) to match more types "
                       f"of the same GPU: {named}",
                "cost": "each at its own price, on-demand "
                        + ", ".join(f"{name} {_money(price)}" for name, _gpus, price in alternatives)}
    few = len(group.instance_types) < SCORED_TYPES_MINIMUM
    return {
        "fix": "list more instance types of the same GPU in instanceTypes: " + named
               + (" (EC2 scores one or two types always low)" if few else ""),
        "cost": "each at its own price, on-demand " + ", ".join(f"{name} {_money(price)}" for name, _gpus, price in alternatives),
    }


def _more_zones(group: ResolvedGroup, scores: SpotScoreFacts, candidates: list[dict[str, Any]],
                prices: Prices) -> dict[str, str] | None:
    best = max((candidate["score"] or 0 for candidate in candidates), default=0)
    better = {zone: score for zone, score in scores.zone_scores.items() if zone not in group.zones and score > best}
    if not better:
        return None
    zones = ", ".join(f"{zone} (score {score})" for zone, score in sorted(better.items(), key=lambda item: -item[1]))
    if group.config.single_zone:
        return {"fix": f"move the group to {zones}: it stays in one zone (multiNode, a persistent volume or a block)",
                "cost": "no charge for a zone; a persistent volume would have to be copied there"}
    if group.subnets:
        return {"fix": f"add a subnet of your VPC in {zones} to network.subnetIds",
                "cost": "no charge for a zone or a subnet; its route out is your VPC's"}
    try:
        nat = f"${prices.catalog.network_prices(prices.region).nat_gateway_usd_per_hour:,.3f}/h"
    except PricingError:
        nat = "unpriced"
    return {"fix": f"raise network.zones to {len(group.zones) + len(better)} so the created network may reach zones "
                   f"scored higher: {zones}",
            "cost": f"no charge for a zone or its subnet; with natGateways perZone, one more NAT gateway per zone "
                    f"({nat} each, catalog)"}


def _prioritized(group: ResolvedGroup, allocation: dict[str, Any], prices: Prices) -> dict[str, str] | None:
    if allocation.get("spot") in ("capacity-optimized", "capacity-optimized-prioritized"):
        return None
    if group.config.instance_requirements is not None:
        # Auto Scaling refuses a prioritized strategy with instanceRequirements (config/rules/allocation.py)
        return None
    zones = list(group.zones)
    spots = [(kind.name, *prices.spot(kind.name, zones)) for kind in group.instance_types]
    priced = [price for _name, price, _label in spots if price is not None]
    spread = f"spot prices of its types span {_money(min(priced))} to {_money(max(priced))}" if priced else "spot unpriced"
    labels = sorted({label for _name, _price, label in spots})
    return {"fix": "set capacity.allocation.spot: capacity-optimized-prioritized (EC2's scores assume capacity-optimized; "
                   "your instanceTypes order breaks ties)",
            "cost": f"it may launch the dearer pools: {spread} ({'; '.join(labels)})"}


def _on_demand_base(group: ResolvedGroup, prices: Prices) -> dict[str, str] | None:
    config = group.config
    wanted = max(config.min_size, 1)
    if config.on_demand_base_capacity >= wanted:
        return None
    first = group.instance_types[0].name
    on_demand = prices.on_demand(first)
    spot, label = prices.spot(first, list(group.zones))
    extra = None if on_demand is None or spot is None else on_demand - spot
    return {"fix": f"set onDemandBaseCapacity: {wanted}, so {wanted} node(s) never wait for spot",
            "cost": f"{_money(extra)} more per node on {first} (on-demand {_money(on_demand)} against spot "
                    f"{_money(spot)}, {label}); on-demand capacity itself can run short"}


def _reservation(group: ResolvedGroup, facts: CapacityFacts, prices: Prices, now: datetime.datetime) -> dict[str, str]:
    types = {kind.name for kind in group.instance_types}
    free = [item for item in facts.free_reservations if item.instance_type in types and item.zone in group.zones
            and fresh(item.taken_at, now)]
    if free:
        listed = ", ".join(f"{item.id} ({item.available_count} x {item.instance_type} in {item.zone}, "
                           f"{item.match_criteria})" for item in free)
        return {"fix": f"launch on-demand into the reservations with instances free: {listed}; name targeted ones "
                       "in capacity.reservations.ids",
                "cost": "already billed at the on-demand rate whether used or not: using them costs nothing more"}
    first = group.instance_types[0].name
    return {"fix": f"reserve {first} in one of its zones (an On-Demand Capacity Reservation, then "
                   "capacity.reservations.ids)",
            "cost": f"{_money(prices.on_demand(first))} per reserved instance, every hour it exists, used or not"}


def _block(group: ResolvedGroup, facts: CapacityFacts, now: datetime.datetime) -> dict[str, str] | None:
    quote = next((item for item in facts.block_quotes if item.group == group.config.name and fresh(item.taken_at, now)),
                 None)
    if quote:
        per_hour = quote.upfront_usd / (quote.duration_hours * quote.instance_count)
        return {"fix": f"buy a Capacity Block: {quote.instance_count} x {quote.instance_type} in {quote.zone} from "
                       f"{quote.start:%Y-%m-%d %H:%M} UTC (capacity.capacityBlock.offering, `gpucloud capacity buy`)",
                "cost": f"${quote.upfront_usd:,.2f} upfront for {quote.duration_hours} h (${per_hour:,.3f} per "
                        "instance-hour), not refundable; the group then runs on-demand in that zone only"}
    if quota_family(group.instance_types[0].name) == "P":
        return {"fix": "a Capacity Block for the days you train (capacity.capacityBlock.offering, `gpucloud capacity buy`)",
                "cost": "its upfront price, quoted by `gpucloud capacity buy` (not refundable)"}
    return None
