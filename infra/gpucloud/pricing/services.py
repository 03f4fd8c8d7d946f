"""The stack's shared services in the estimate, billed whatever the fleet does or with it: the
network, each endpoint's load balancer, Prometheus samples, Grafana users and KMS keys."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpucloud.config import StackConfig

from .catalog import HOURS_PER_MONTH, Catalog
from .lines import SCENARIOS, CostLine, GroupEstimate, Scenario, UnpricedLine, flat, lookup, scenario_values
from .load_balancer import ASSUMED_LCUS_PER_ENDPOINT, ASSUMED_LCUS_PER_NODE, assumed_lcus
from .monitoring import (
    BYTES_PER_SAMPLE,
    MAX_GPUS_PER_NODE,
    RETENTION_DAYS,
    samples_per_series_hour,
    series_per_node,
    stored_gb_months,
    tiered_ingestion,
)


def load_balancer_costs(config: StackConfig, region: str, catalog: Catalog) -> tuple[list[CostLine], list[UnpricedLine]]:
    """Each group endpoint's load balancer: its hours all month, and its LCU-hours at the load
    `gpucloud.pricing.load_balancer` assumes for the group's min, desired and max sizes."""
    lines: list[CostLine] = []
    unpriced: list[UnpricedLine] = []
    prices, missing = lookup(catalog.load_balancer_prices, region)
    for group in (group for group in config.groups if group.endpoint is not None):
        sizes = {"min": group.min_size, "desired": group.initial_capacity, "max": group.max_size}
        lcu_hours = {s: assumed_lcus(sizes[s]) * HOURS_PER_MONTH for s in SCENARIOS}
        hours = {s: float(HOURS_PER_MONTH) for s in SCENARIOS}
        wanted = [(f"{group.name}/endpoint load balancer", hours, "ALB-hours", "alb_usd_per_hour", ""),
                  (f"{group.name}/endpoint load balancer capacity units", lcu_hours, "LCU-hours", "lcu_usd_per_hour",
                   f"assumed {ASSUMED_LCUS_PER_ENDPOINT:g} LCU + {ASSUMED_LCUS_PER_NODE:g} per node (gpucloud.pricing.load_balancer)")]
        for resource, quantity, unit, field_name, note in wanted:
            if prices is None:
                unpriced.append(UnpricedLine(resource=resource, quantity=scenario_values(quantity), unit=unit, reason=missing))
                continue
            rate = getattr(prices, field_name)
            lines.append(CostLine(resource=resource, quantity=scenario_values(quantity), unit=unit,
                                  unit_price=flat(rate),
                                  monthly=scenario_values({s: quantity[s] * rate for s in SCENARIOS}), note=note))
    return lines, unpriced


def network_costs(config: StackConfig, region: str, catalog: Catalog) -> tuple[list[CostLine], list[UnpricedLine]]:
    """The created network's hourly charges, all month whatever the fleet does: NAT gateways and
    their public IPv4 addresses, and interface endpoints in every zone. Listed subnets cost nothing here."""
    network = config.network
    if not network.created:
        return [], []
    nat_gateways = 0 if network.egress == "endpointsOnly" else (network.zones if network.nat_gateways == "perZone" else 1)
    endpoint_zones = len(network.interface_endpoints) * network.zones
    # An internet-facing ALB holds a public IPv4 address in each zone at least (more as it scales),
    # billed like any other (https://aws.amazon.com/vpc/pricing/, "Public IPv4 Address", read 2026-11-25).
    facing_addresses = network.zones * sum(1 for group in config.groups if group.endpoint and group.endpoint.internet_facing)
    wanted = [
        (f"{config.project}/NAT gateways ({network.nat_gateways})", nat_gateways, "gateway-hours",
         "nat_gateway_usd_per_hour", "data processed through the NAT is billed per GB on top (not included)"),
        (f"{config.project}/NAT public IPv4 addresses", nat_gateways, "address-hours", "public_ipv4_usd_per_hour", ""),
        (f"{config.project}/internet-facing endpoint public IPv4 addresses", facing_addresses, "address-hours",
         "public_ipv4_usd_per_hour", "one per zone per load balancer; AWS adds addresses as it scales one out"),
        (f"{config.project}/interface endpoints ({len(network.interface_endpoints)} x {network.zones} zones)",
         endpoint_zones, "endpoint-AZ-hours", "interface_endpoint_usd_per_az_hour",
         "data processed through endpoints is billed per GB on top (not included)"),
    ]
    return _flat_lines(
        [(resource, count * HOURS_PER_MONTH, unit, field_name, note) for resource, count, unit, field_name, note in wanted],
        lookup(catalog.network_prices, region),
    )


def prometheus_costs(
    config: StackConfig, region: str, catalog: Catalog, groups: list[GroupEstimate], gpus_per_instance: Mapping[str, int],
) -> tuple[list[CostLine], list[UnpricedLine]]:
    """Samples ingested and stored in the project's AMP workspace (queries depend on use: not included)."""
    prometheus = config.monitoring.prometheus
    if not prometheus.enabled:
        return [], []
    per_series_hour = samples_per_series_hour(prometheus.scrape_interval_seconds)
    samples: dict[Scenario, float] = {scenario: 0.0 for scenario in SCENARIOS}
    counted_as_most: set[str] = set()
    for group in groups:
        for scenario in SCENARIOS:
            instance_type = group.max_instance_type if scenario == "max" else group.instance_type
            gpus = gpus_per_instance.get(instance_type)
            if gpus is None:
                counted_as_most.add(instance_type)
                gpus = MAX_GPUS_PER_NODE
            samples[scenario] += series_per_node(gpus) * group.instance_hours.get(scenario) * per_series_hour
    series_note = f"one sample per series every {prometheus.scrape_interval_seconds} s while a node runs"
    if counted_as_most:
        series_note += (f"; GPU count of {', '.join(sorted(counted_as_most))} not given to the estimate, "
                        f"counted as {MAX_GPUS_PER_NODE} GPUs")
    ingested = f"{config.project}/Prometheus samples ingested"
    stored = f"{config.project}/Prometheus storage ({RETENTION_DAYS}-day retention)"
    ten_millions = scenario_values({s: samples[s] / 1e7 for s in SCENARIOS})
    gb_months = scenario_values({s: stored_gb_months(samples[s]) for s in SCENARIOS})
    price, missing = lookup(catalog.prometheus_prices, region)
    if price is None:
        return [], [
            UnpricedLine(resource=ingested, quantity=ten_millions, unit="10M samples", reason=missing),
            UnpricedLine(resource=stored, quantity=gb_months, unit="GB-months", reason=missing),
        ]
    lines: list[CostLine] = []
    unpriced: list[UnpricedLine] = []
    tiered = {s: tiered_ingestion(samples[s], price) for s in SCENARIOS}
    priced = scenario_values({s: tiered[s][1] / 1e7 for s in SCENARIOS})
    cost = scenario_values({s: tiered[s][0] for s in SCENARIOS})
    lines.append(CostLine(
        resource=ingested, quantity=priced, unit="10M samples",
        unit_price=scenario_values({s: cost.get(s) / priced.get(s) if priced.get(s) else price.ingestion_tiers[0].usd_per_ten_million_samples
                            for s in SCENARIOS}),
        monthly=cost,
        note=series_note + "; tiered on the month's total, free tier not deducted",
    ))
    above = scenario_values({s: samples[s] / 1e7 - priced.get(s) for s in SCENARIOS})
    if any(above.get(s) > 0 for s in SCENARIOS):
        bound = price.ingestion_tiers[-1].up_to_samples
        unpriced.append(UnpricedLine(
            resource=f"{ingested} above {bound:,} a month", quantity=above, unit="10M samples",
            reason=f"the catalog's AMP row for {region} has no price above {bound:,} samples a month"))
    if price.storage_usd_per_gb_month is None:
        unpriced.append(UnpricedLine(resource=stored, quantity=gb_months, unit="GB-months",
                                     reason=f"the catalog's AMP row for {region} has no storage price"))
    else:
        rate = price.storage_usd_per_gb_month
        lines.append(CostLine(
            resource=stored, quantity=gb_months, unit="GB-months", unit_price=flat(rate),
            monthly=scenario_values({s: gb_months.get(s) * rate for s in SCENARIOS}),
            note=f"a month's samples at {BYTES_PER_SAMPLE} bytes each, kept for the retention; metadata not counted",
        ))
    return lines, unpriced


def grafana_costs(config: StackConfig, region: str, catalog: Catalog) -> tuple[list[CostLine], list[UnpricedLine]]:
    """Editor and viewer licences of the project's AMG workspace, all month whatever the fleet does."""
    grafana = config.monitoring.grafana
    if not grafana.enabled:
        return [], []
    wanted = [
        (f"{config.project}/Grafana editors", max(grafana.editors, 1), "editor_usd_per_user_month",
         "active editors and admins; a workspace pays for one even when nobody signs in"),
        (f"{config.project}/Grafana viewers", grafana.viewers, "viewer_usd_per_user_month", "active viewers"),
    ]
    return _flat_lines(
        [(resource, users, "user-months", field_name, note) for resource, users, field_name, note in wanted],
        lookup(catalog.grafana_prices, region),
    )


def _flat_lines(
    wanted: list[tuple[str, float, str, str, str]], found: tuple[Any, str | None]
) -> tuple[list[CostLine], list[UnpricedLine]]:
    """Lines billed the same in every scenario, each (resource, quantity, unit, the price row's
    field, note), priced from one catalog row or unpriced with the reason there is none; a
    quantity of 0 is no line at all."""
    prices, missing = found
    lines: list[CostLine] = []
    unpriced: list[UnpricedLine] = []
    for resource, quantity, unit, field_name, note in wanted:
        if not quantity:
            continue
        if prices is None:
            unpriced.append(UnpricedLine(resource=resource, quantity=flat(quantity), unit=unit, reason=missing))
            continue
        rate = getattr(prices, field_name)
        lines.append(CostLine(resource=resource, quantity=flat(quantity), unit=unit, unit_price=flat(rate),
                              monthly=flat(quantity * rate), note=note))
    return lines, unpriced


def key_line(resource: str, usd_per_key_month: float) -> CostLine:
    return CostLine(
        resource=resource,
        quantity=flat(1),
        unit="key-months",
        unit_price=flat(usd_per_key_month),
        monthly=flat(usd_per_key_month),
        note=("one key per stack; rotation is on, and AWS adds $1/month for each rotated backing key, "
              "so from the second year the key costs more than shown"),
    )
