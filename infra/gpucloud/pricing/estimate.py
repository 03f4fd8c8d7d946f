"""The monthly cost of a stack before `pulumi up`, at minimum, desired and maximum capacity.

Rules, chosen to err on the expensive side:

- Hours per month: 730. USD only. Values are kept exact; only the renderer rounds to cents.
- Instance type: the min and desired scenarios are priced at the group's FIRST instance type
  (the launch template's first choice); the max scenario at the MOST EXPENSIVE type the group
  lists.
- Missing prices: what the catalog cannot price is left out of the totals and listed under
  `unpriced` with its quantity and the reason, so the totals are a lower bound (the estimate is
  partial) and the budget is still checked on the priced part. A listed type without a price
  leaves the max scenario priced at the dearest type that has one (a lower bound too); the
  first type without a price leaves min and desired instances unpriced.
- Purchase options: onDemandBaseCapacity instances run on demand; of the instances above it,
  spotPercent percent are spot, with the on-demand share rounded up (a half instance counts as
  on-demand). Spot is priced at on-demand x (1 - the family's conservative spot discount in
  the region); a family/region without a sourced discount is priced at on-demand and the
  output says so. Where the account facts recorded a fresh spot price of the priced type (the
  plan passes the dearest of the group's zones), that price is used instead, labelled
  "recorded spot price, <time>".
- Capacity over time: see `gpucloud.pricing.schedule`: scheduled actions simulated over a week;
  min follows the lower bound in force, max the upper bound, desired the scheduled desired.
- Reserved capacity: an On-Demand Capacity Reservation bills its instances at the on-demand rate
  of its type all month, used or not: the group's on-demand hours first fill the reservation
  ("reserved, used"), what it leaves idle is its own line ("reserved, unused"), and only the hours
  above it are billed as plain on-demand. A Capacity Block is its total (upfront) price, charged
  once; its instances bill nothing more.
- Volumes: root and data gp3 volumes exist only while their instance runs, so they are billed
  per instance-hour; the persistent volume and the stack's KMS key are billed all month. gp3
  volumes are priced at their free baseline (3000 IOPS, 125 MiB/s): the stack config sets no
  IOPS or throughput above it. One provisioned GiB is billed as one GB-month.
- Prometheus and Grafana, when the stack turns them on: see `gpucloud.pricing.monitoring`. The
  samples follow each group's instance-hours in the scenario, at the GPU count of the type that
  scenario is priced at (`gpus_per_instance`; a type missing there counts as 8 GPUs).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from gpucloud.config import GroupConfig, StackConfig
from gpucloud.config.groups import purchase_split

from .catalog import (
    HOURS_PER_MONTH,
    Catalog,
    InstancePrice,
    PriceNotFound,
    PricingError,
    StoragePrice,
    instance_family,
    load_catalog,
)
from .file_systems import file_system_lines
from .lines import (
    SCENARIOS,
    CostEstimate,
    CostLine,
    GroupEstimate,
    Scenario,
    ScenarioValues,
    UnpricedLine,
    flat,
    lookup,
    scenario_values,
)
from .schedule import approximated_schedules, capacity_profiles
from .services import grafana_costs, key_line, load_balancer_costs, network_costs, prometheus_costs

__all__ = [
    "CostEstimate", "CostLine", "GroupEstimate", "ReservedCapacity", "ScenarioValues", "UnpricedLine",
    "estimate_stack", "gp3_volume_month", "purchase_split",
]


@dataclass(frozen=True)
class ReservedCapacity:
    """Capacity a group runs on that is paid whether or not it is used."""

    kind: Literal["odcr", "capacity-block"]
    instance_type: str
    instance_count: int
    upfront_usd: float = 0.0
    """A Capacity Block's total price."""
    hours: float = HOURS_PER_MONTH
    """A Capacity Block's duration."""
    label: str = ""


def gp3_volume_month(price: StoragePrice, size_gib: float, iops: int = 3000, throughput_mibps: int = 125) -> float:
    """USD for one gp3 volume kept a whole month: size, plus IOPS and throughput above the free baseline."""
    extra_iops = max(0, iops - price.baseline_iops)
    extra_throughput = max(0, throughput_mibps - price.baseline_mibps)
    if extra_iops and price.usd_per_iops_month is None:
        raise PriceNotFound(f"no gp3 IOPS price for {price.region}: the catalog's gp3 row leaves it out")
    if extra_throughput and price.usd_per_mibps_month is None:
        raise PriceNotFound(f"no gp3 throughput price for {price.region}: the catalog's gp3 row leaves it out")
    return (
        size_gib * price.usd_per_gb_month
        + extra_iops * (price.usd_per_iops_month or 0.0)
        + extra_throughput * (price.usd_per_mibps_month or 0.0)
    )


def warm_pool_instances(group: GroupConfig, capacity: int) -> int:
    """Instances Auto Scaling keeps in the group's warm pool while the group runs `capacity`: what
    MaxGroupPreparedCapacity (else the group's maximum) leaves beside the desired capacity, and at
    least the pool's MinSize (Auto Scaling API reference, PutWarmPool, MaxGroupPreparedCapacity and
    MinSize, read 2026-11-28). They wait stopped or hibernated, which bills their EBS volumes and not
    the instance (EC2 API reference, StopInstances, read 2026-11-28)."""
    pool = group.warm_pool
    if pool is None:
        return 0
    prepared = pool.max_group_prepared_capacity if pool.max_group_prepared_capacity is not None else group.max_size
    return max(pool.min_size, prepared - capacity, 0)


def _estimate_group(
    group: GroupConfig, region: str, catalog: Catalog, reserved: ReservedCapacity | None = None,
    recorded_spot: Mapping[str, tuple[float, str]] | None = None,
) -> tuple[GroupEstimate, list[CostLine], list[UnpricedLine]]:
    found = {instance_type: lookup(catalog.instance, instance_type, region) for instance_type in group.instance_types}
    known = [price for price, _reason in found.values() if price is not None]
    missing = {instance_type: reason for instance_type, (price, reason) in found.items() if price is None}
    first_type = group.instance_types[0]
    first = found[first_type][0]
    dearest = max(known, key=lambda price: price.usd_per_hour) if known else None
    priced: dict[Scenario, InstancePrice | None] = {"min": first, "desired": first, "max": dearest}
    gp3, gp3_missing = lookup(catalog.gp3, region)
    notes = [f"min and desired priced at {first_type} "
             + ("(cheapest type instanceRequirements match)" if group.instance_requirements else "(first listed type)")]
    if dearest is not None and len(group.instance_types) > 1:
        notes.append(f"max priced at {dearest.instance_type} (most expensive listed type"
                     + (" that has a price)" if missing else ")"))

    on_demand_hours: dict[Scenario, float] = {}
    spot_hours: dict[Scenario, float] = {}
    profiles = capacity_profiles(group)
    for scenario in SCENARIOS:
        profile = profiles[scenario]
        on_demand_hours[scenario] = spot_hours[scenario] = 0.0
        for capacity, fraction in profile.fractions.items():
            on_demand, spot = purchase_split(capacity, group.on_demand_base_capacity, group.spot_percent)
            on_demand_hours[scenario] += on_demand * fraction * HOURS_PER_MONTH
            spot_hours[scenario] += spot * fraction * HOURS_PER_MONTH
    hours = {scenario: on_demand_hours[scenario] + spot_hours[scenario] for scenario in SCENARIOS}

    def hourly(scenario: Scenario) -> float:
        price = priced[scenario]
        return price.usd_per_hour if price is not None else 0.0

    spot_price: dict[Scenario, float] = {}
    spot_labels: list[str] = []
    for scenario in SCENARIOS:
        price = priced[scenario]
        recorded = (recorded_spot or {}).get(price.instance_type) if price is not None else None
        if recorded is not None and group.uses_spot:
            spot_price[scenario] = recorded[0]
            label = f"{price.instance_type}: {recorded[1]}"
            if label not in spot_labels:
                spot_labels.append(label)
            continue
        family = instance_family(price.instance_type if price is not None else first_type)
        discount = catalog.spot_discount(family, region)
        spot_price[scenario] = hourly(scenario) * (1 - (discount.discount if discount else 0.0))
        if group.uses_spot and discount is None and price is not None:
            note = (f"spot for {family} priced at on-demand: the catalog has no sourced spot discount for {family} "
                    f"in {region}")
            if note not in notes:
                notes.append(note)
    notes.extend(f"spot priced at {label}" for label in spot_labels)
    for name in approximated_schedules(group):
        notes.append(f"schedule {name!r} is restricted by day-of-month or month; the weekly simulation approximates it")

    unpriced: list[UnpricedLine] = []
    for instance_type, reason in missing.items():
        # The type would price min and desired if it is the first, and could be the dearest for max.
        in_use = {s: hours[s] if s == "max" or instance_type == first_type else 0.0 for s in SCENARIOS}
        if dearest is not None:
            reason += f"; max is priced at {dearest.instance_type} meanwhile, so it may be higher"
        unpriced.append(UnpricedLine(
            resource=f"{group.name}/instances ({instance_type})", quantity=scenario_values(in_use),
            unit="instance-hours", reason=reason,
        ))

    reserved_lines = _reserved_lines(group, reserved, on_demand_hours, priced, catalog, region) if reserved else None
    if reserved_lines is not None:
        lines, on_demand_hours = reserved_lines
    else:
        lines = []
    lines += [
        CostLine(
            resource=f"{group.name}/instances (on-demand)",
            quantity=scenario_values(on_demand_hours),
            unit="instance-hours",
            unit_price=scenario_values({scenario: hourly(scenario) for scenario in SCENARIOS}),
            monthly=scenario_values({s: on_demand_hours[s] * hourly(s) for s in SCENARIOS}),
            note="; ".join(notes[:2]),
        )
    ]
    if reserved is not None and reserved.kind == "capacity-block":
        lines = [line for line in lines if not line.resource.endswith("/instances (on-demand)")]
    if group.uses_spot:
        lines.append(CostLine(
            resource=f"{group.name}/instances (spot)",
            quantity=scenario_values(spot_hours),
            unit="instance-hours",
            unit_price=scenario_values(spot_price),
            monthly=scenario_values({s: spot_hours[s] * spot_price[s] for s in SCENARIOS}),
            note="; ".join(spot_labels) if spot_labels else "on-demand price less the family's conservative spot discount",
        ))
    volumes: list[tuple[str, dict[Scenario, float], str]] = [
        (f"{group.name}/{label} (gp3, {size} GiB per instance)", {s: size * hours[s] / HOURS_PER_MONTH for s in SCENARIOS},
         "exists while its instance runs; baseline 3000 IOPS / 125 MiB/s included")
        for label, size in (("root volume", group.root_volume_gib), ("data volume", group.data_volume_gib)) if size
    ]
    if group.warm_pool is not None and group.root_volume_gib + group.data_volume_gib:
        size = group.root_volume_gib + group.data_volume_gib
        pool = {s: sum(fraction * warm_pool_instances(group, capacity) for capacity, fraction in profiles[s].fractions.items())
                for s in SCENARIOS}
        volumes.append((f"{group.name}/warm pool volumes (gp3, {size} GiB per pool instance)",
                        {s: size * pool[s] for s in SCENARIOS},
                        "stopped or hibernated pool instances bill their EBS volumes only, all month"))
    if group.persistent_volume_gib:
        size = group.persistent_volume_gib
        volumes.append((f"{group.name}/persistent volume (gp3, {size} GiB)", {s: float(size) for s in SCENARIOS},
                        "kept all month, whether or not an instance runs"))
    for resource, gb_months, note in volumes:
        if gp3 is None:
            unpriced.append(UnpricedLine(resource=resource, quantity=scenario_values(gb_months), unit="GB-months",
                                         reason=gp3_missing))
            continue
        lines.append(CostLine(
            resource=resource,
            quantity=scenario_values(gb_months),
            unit="GB-months",
            unit_price=flat(gp3.usd_per_gb_month),
            monthly=scenario_values({s: gp3_volume_month(gp3, gb_months[s]) for s in SCENARIOS}),
            note=note,
        ))

    def total(selected: list[CostLine]) -> ScenarioValues:
        result = ScenarioValues()
        for line in selected:
            result = result + line.monthly
        return result

    compute_on_demand = total([line for line in lines if line.unit == "instance-hours" and "(spot)" not in line.resource])
    compute_on_demand = compute_on_demand + total([line for line in lines if line.unit == "block"])
    compute_spot = total([line for line in lines if line.resource.endswith("(spot)")])
    storage = total([line for line in lines if line.unit == "GB-months"])
    estimate = GroupEstimate(
        name=group.name,
        instance_type=first_type,
        max_instance_type=dearest.instance_type if dearest is not None else first_type,
        monthly=compute_on_demand + compute_spot + storage,
        on_demand=compute_on_demand,
        spot=compute_spot,
        storage=storage,
        instance_hours=scenario_values(hours),
        notes=notes,
    )
    return estimate, lines, unpriced


def _reserved_lines(
    group: GroupConfig, reserved: ReservedCapacity, on_demand_hours: dict[Scenario, float],
    priced: dict[Scenario, InstancePrice | None], catalog: Catalog, region: str,
) -> tuple[list[CostLine], dict[Scenario, float]] | None:
    """The reserved lines, and the on-demand hours left to bill above the reservation."""
    if reserved.kind == "capacity-block":
        hours = reserved.instance_count * reserved.hours
        rate = reserved.upfront_usd / hours if hours else 0.0
        line = CostLine(
            resource=f"{group.name}/capacity block ({reserved.label})", quantity=flat(hours),
            unit="block", unit_price=flat(rate),
            monthly=flat(reserved.upfront_usd),
            note="total price, paid once when bought; its instances bill nothing more",
        )
        return [line], {s: 0.0 for s in SCENARIOS}
    price, _reason = lookup(catalog.instance, reserved.instance_type, region)
    if price is None:
        return None
    rate = price.usd_per_hour
    reserved_hours = reserved.instance_count * HOURS_PER_MONTH
    used = {s: min(on_demand_hours[s], reserved_hours) for s in SCENARIOS}
    unused = {s: reserved_hours - used[s] for s in SCENARIOS}
    lines = [
        CostLine(resource=f"{group.name}/reserved capacity, used ({reserved.label})", quantity=scenario_values(used),
                 unit="instance-hours", unit_price=flat(rate),
                 monthly=scenario_values({s: used[s] * rate for s in SCENARIOS}),
                 note="the group's on-demand hours that run in the reservation"),
        CostLine(resource=f"{group.name}/reserved capacity, unused ({reserved.label})", quantity=scenario_values(unused),
                 unit="instance-hours", unit_price=flat(rate),
                 monthly=scenario_values({s: unused[s] * rate for s in SCENARIOS}),
                 note="an On-Demand Capacity Reservation bills its idle instances at the on-demand rate"),
    ]
    return lines, {s: on_demand_hours[s] - used[s] for s in SCENARIOS}


def estimate_stack(
    config: StackConfig, region: str, catalog: Catalog | None = None,
    reserved: dict[str, ReservedCapacity] | None = None,
    gpus_per_instance: Mapping[str, int] | None = None,
    recorded_spot: Mapping[str, Mapping[str, tuple[float, str]]] | None = None,
) -> CostEstimate:
    """Monthly cost of every group plus the stack's KMS key, network, Prometheus and Grafana, in
    USD, for min/desired/max; `reserved` names, per group, the capacity it runs on that is paid
    used or not; `gpus_per_instance` the GPUs of each instance type (DescribeInstanceTypes), which
    set the Prometheus series; `recorded_spot`, per group and type, a recorded spot price and its label.

    A price the catalog lacks does not stop the estimate: the line goes under `unpriced`."""
    catalog = catalog if catalog is not None else load_catalog()
    if catalog.currency != "USD":
        raise PricingError(f"the price catalog is in {catalog.currency}; estimates are in USD only")
    groups: list[GroupEstimate] = []
    lines: list[CostLine] = []
    unpriced: list[UnpricedLine] = []
    for group in config.groups:
        group_estimate, group_lines, group_unpriced = _estimate_group(
            group, region, catalog, (reserved or {}).get(group.name), (recorded_spot or {}).get(group.name))
        groups.append(group_estimate)
        lines.extend(group_lines)
        unpriced.extend(group_unpriced)
    key_resource = f"{config.project}/kms key (customer managed)"
    key, key_missing = lookup(catalog.kms_key, region)
    if key is None:
        unpriced.append(UnpricedLine(resource=key_resource, quantity=flat(1),
                                     unit="key-months", reason=key_missing))
    else:
        lines.append(key_line(key_resource, key.usd_per_key_month))
    network_lines, network_unpriced = network_costs(config, region, catalog)
    lines.extend(network_lines)
    unpriced.extend(network_unpriced)
    endpoint_lines, endpoint_unpriced = load_balancer_costs(config, region, catalog)
    lines.extend(endpoint_lines)
    unpriced.extend(endpoint_unpriced)
    prometheus_lines, prometheus_unpriced = prometheus_costs(config, region, catalog, groups, gpus_per_instance or {})
    grafana_lines, grafana_unpriced = grafana_costs(config, region, catalog)
    lines += prometheus_lines + grafana_lines
    unpriced += prometheus_unpriced + grafana_unpriced
    storage_lines, storage_unpriced = file_system_lines(config, region, catalog)
    lines += storage_lines
    unpriced += storage_unpriced
    monthly = ScenarioValues()
    for line in lines:
        monthly = monthly + line.monthly
    return CostEstimate(monthly=monthly, groups=groups, lines=lines, unpriced=unpriced)


