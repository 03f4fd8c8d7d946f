"""Each group's capacity in the plan: the types x zones it may launch into, their Spot placement
scores from the account facts, a verdict, how Auto Scaling allocates over them, and the fixes
when the verdict is not good (`plan/capacity_fixes.py`). `capacity` in `--json`.

EC2 scores a spot request from 1 ("not likely to succeed") to 10 ("highly likely to succeed"),
for the request's types and target capacity, per region or per zone (API reference,
GetSpotPlacementScores and SpotPlacementScore `Score`, read 2026-11-28); the page defines no
bands in between, so the plan splits the scale in thirds: 7-10 good, 4-6 thin, 1-3 unlikely.
"""

from __future__ import annotations

import datetime
from collections.abc import Container, Sequence
from typing import Any

from gpucloud.config.groups import GroupConfig
from gpucloud.config.rules.allocation import on_demand_strategy, rebalances, spot_strategy
from gpucloud.lookups import ResolvedGroup
from gpucloud.plan.capacity_fixes import Prices, capacity_fixes
from gpucloud.plan.capacity_snapshot import score_selection, spot_capacity
from gpucloud.policy import PackConfig, PlannedResource, PolicyConfig, Violation, evaluate
from gpucloud.policy.resource_types import SPOT_CAPACITY
from gpucloud.testing.capacity_facts import (
    OFFERINGS_STALE_AFTER,
    SCORES_STALE_AFTER,
    CapacityFacts,
    SpotScoreFacts,
    age,
    fresh,
)

GOOD_SCORE = 7
"""The lowest score called good: the top third of EC2's 1-10 scale."""
THIN_SCORE = 4
"""The lowest score called thin; below it, unlikely (the bottom third, down to EC2's "not likely")."""
NOT_CHECKED = "not checked"
POLICY = "capacity-feasible"
NO_FACTS = "no capacity facts (`gpucloud account snapshot` records them)"


def verdict_of(score: int) -> str:
    return "good" if score >= GOOD_SCORE else "thin" if score >= THIN_SCORE else "unlikely"


def capacity_entries(groups: Sequence[ResolvedGroup], facts: CapacityFacts | None, region: str,
                     now: datetime.datetime, offered: Container[str] | None = None) -> list[dict[str, Any]]:
    """One entry per group. Without capacity facts, or with facts too old, each group is not checked.
    `offered`: the GPU types some zone of the region offers, which the fixes suggest from."""
    return [_entry(group, facts, region, now, offered) for group in groups]


def _entry(group: ResolvedGroup, facts: CapacityFacts | None, region: str, now: datetime.datetime,
           offered: Container[str] | None = None) -> dict[str, Any]:
    config = group.config
    types = [kind.name for kind in group.instance_types]
    entry: dict[str, Any] = {"group": config.name, "instanceTypes": types, "zones": list(group.zones),
                             "allocation": allocation(config, types)}
    held = _held_capacity(group)
    if held:
        return {**entry, "verdict": "good", "reason": held, "fixes": []}
    if facts is None:
        return {**entry, "verdict": NOT_CHECKED, "reason": NO_FACTS, "fixes": []}
    if not config.uses_spot:
        return {**entry, "verdict": NOT_CHECKED, "fixes": [],
                "reason": "on-demand only: EC2 publishes placement scores for spot requests only"}
    scores = facts.scores_of(config.name)
    if scores is None:
        return {**entry, "verdict": NOT_CHECKED, "reason": "the capacity facts have no scores for this group", "fixes": []}
    hours = age(scores.taken_at, now).total_seconds() / 3600
    entry.update(takenAt=scores.taken_at.isoformat(), ageHours=round(hours, 1))
    if not fresh(scores.taken_at, now):
        return {**entry, "verdict": NOT_CHECKED, "stale": True, "fixes": [],
                "reason": f"capacity facts are {hours:.0f} h old (more than {SCORES_STALE_AFTER.total_seconds() / 3600:.0f})"}
    if scores.not_scored:
        return {**entry, "verdict": NOT_CHECKED, "reason": f"EC2 gave no score ({scores.not_scored})", "fixes": []}
    changed = _scored_otherwise(config, scores, types)
    if changed:
        return {**entry, "verdict": NOT_CHECKED, "fixes": [], "reason": f"{changed}: take the snapshot again"}
    candidates = _candidates(group, scores, facts, now)
    entry.update(regionScore=scores.region_score, targetCapacity=scores.target_capacity, candidates=candidates)
    scored = [candidate["score"] for candidate in candidates if candidate["score"] is not None]
    if not scored:
        return {**entry, "verdict": NOT_CHECKED, "reason": "EC2 scored none of the group's zones", "fixes": []}
    entry["verdict"] = verdict_of(max(scored))
    entry["fixes"] = [] if entry["verdict"] == "good" else capacity_fixes(
        group, scores, facts, Prices(region, facts, now), candidates, entry["allocation"], now, offered)
    return entry


def _scored_otherwise(config: GroupConfig, scores: SpotScoreFacts, types: list[str]) -> str | None:
    """Why the facts' scores are not of the group as the stack file has it now, or None."""
    if config.instance_requirements is not None:
        asked = score_selection(config)["InstanceRequirementsWithMetadata"]
        return None if scores.instance_requirements == asked else "the facts scored other instanceRequirements"
    if scores.instance_requirements is not None or sorted(scores.instance_types) != sorted(types):
        return f"the facts scored {', '.join(scores.instance_types) or 'instanceRequirements'}"
    return _scored_for_another_size(config, scores)


def _scored_for_another_size(config: GroupConfig, scores: SpotScoreFacts) -> str | None:
    """A score answers a request for its target capacity only (API reference, GetSpotPlacementScores
    `TargetCapacity`, read 2026-11-28): scores taken for fewer or more spot instances than the group
    runs at maxSize say nothing of the group as it is now."""
    wanted = spot_capacity(config)
    if scores.target_capacity == wanted:
        return None
    return (f"the facts scored {scores.target_capacity} spot instance(s), and the group runs {wanted} at maxSize "
            f"{config.max_size}")


def scored_groups_not_in_stack(groups: Sequence[ResolvedGroup], facts: CapacityFacts | None) -> list[str]:
    """The groups the facts' spot scores name that the stack does not have (a renamed group, a typo),
    whose scores the capacity line never reads."""
    names = {group.config.name for group in groups}
    return sorted({scores.group for scores in (facts.spot_scores if facts else ()) if scores.group not in names})


def _held_capacity(group: ResolvedGroup) -> str | None:
    """Capacity the group holds already: a Capacity Block, or named reservations for maxSize."""
    if group.capacity_block:
        return f"runs in Capacity Block {group.capacity_block.id} ({group.capacity_block.instance_count} instances)"
    reserved = sum(reservation.instance_count for reservation in group.reservations)
    if group.reservations and reserved >= group.config.max_size and not group.config.uses_spot:
        return f"{reserved} reserved instances for maxSize {group.config.max_size}"
    return None


def _candidates(group: ResolvedGroup, scores: SpotScoreFacts, facts: CapacityFacts,
                now: datetime.datetime) -> list[dict[str, Any]]:
    """The group's zones that offer one of its types (per the facts' zone offerings, where fresh),
    each with its single-zone score (None: EC2 did not list the zone); a group scored by its
    requirements offers the types the plan resolved them to."""
    kinds = scores.instance_types or [kind.name for kind in group.instance_types]
    offering = {kind: zones for kind in kinds if (zones := _fresh_offering(facts, kind, now)) is not None}
    candidates = []
    for zone in group.zones:
        offered = [kind for kind in kinds if kind not in offering or zone in offering[kind]]
        if offered:
            candidates.append({"zone": zone, "score": scores.zone_scores.get(zone), "instanceTypes": offered})
    return candidates


def _fresh_offering(facts: CapacityFacts, kind: str, now: datetime.datetime) -> set[str] | None:
    found = next((offer for offer in facts.zone_offerings if offer.instance_type == kind), None)
    return set(found.zones) if found and fresh(found.taken_at, now, OFFERINGS_STALE_AFTER) else None


def allocation(config: GroupConfig, types: list[str]) -> dict[str, Any]:
    """How Auto Scaling allocates the group's instances, and where each setting comes from."""
    spot, spot_source = spot_strategy(config)
    on_demand, on_demand_source = on_demand_strategy(config)
    rebalance, rebalance_source = rebalances(config)
    found: dict[str, Any] = {"onDemand": on_demand, "onDemandSource": on_demand_source, "priority": types}
    if config.uses_spot:
        found.update(spot=spot, spotSource=spot_source)
        pools = config.capacity.allocation.spot_instance_pools if config.capacity.allocation else None
        if pools:
            found["spotInstancePools"] = pools
    found.update(capacityRebalance=rebalance, capacityRebalanceSource=rebalance_source,
                 zoneDistribution=zone_distribution(config))
    return found


def zone_distribution(config: GroupConfig) -> str:
    """The group's AvailabilityZoneDistribution: reservations-then-balanced where it targets
    reservations (the component sets it), else Auto Scaling's default balanced-best-effort, which
    launches in another healthy zone when a zone fails to launch (Auto Scaling API reference,
    AvailabilityZoneDistribution, read 2026-11-28)."""
    reservations = config.capacity.reservations
    return "reservations-then-balanced" if reservations and reservations.targets_reservations else "balanced-best-effort"


SPOT_MEANINGS = {
    "price-capacity-optimized": "the pools least likely to be interrupted, then the cheapest of them",
    "capacity-optimized": "the pools with the most spare capacity, whatever their price",
    "capacity-optimized-prioritized": "the pools with the most spare capacity, then your order of instanceTypes",
    "lowest-price": "the cheapest pools only, which are interrupted most",
}
"""What each spot strategy does (Auto Scaling API reference, InstancesDistribution, read 2026-11-28)."""
ZONE_MEANINGS = {
    "balanced-best-effort": "a zone that fails to launch is passed over for another",
    "reservations-then-balanced": "reservations first, then balanced over the healthy zones",
}


def allocation_line(found: dict[str, Any]) -> str:
    """`spot capacity-optimized-prioritized (stack file): ...; on-demand prioritized (default) in the
    order g5.xlarge > g6.xlarge; capacity rebalancing on (default)`"""
    parts = []
    if "spot" in found:
        pools = f", {found['spotInstancePools']} pools" if found.get("spotInstancePools") else ""
        parts.append(f"spot {found['spot']}{pools} ({found['spotSource']}): {SPOT_MEANINGS[found['spot']]}")
    order = f" in the order {' > '.join(found['priority'])}" if found["onDemand"] == "prioritized" else ""
    parts.append(f"on-demand {found['onDemand']} ({found['onDemandSource']}){order}")
    parts.append(f"capacity rebalancing {'on' if found['capacityRebalance'] else 'off'} ({found['capacityRebalanceSource']})")
    parts.append(f"zones {found['zoneDistribution']}: {ZONE_MEANINGS[found['zoneDistribution']]}")
    return "; ".join(parts)


def capacity_line(entry: dict[str, Any]) -> str:
    """`batch: thin: g5.xlarge, g6.xlarge x us-east-1a 5, us-east-1b 3 (region 6; for 4 spot instances at
    maxSize; scores taken 3 h ago)`; `batch: capacity not checked: capacity facts are 30 h old`"""
    if entry.get("stale"):
        return f"{entry['group']}: {entry['reason']}: not checked"
    if entry["verdict"] == NOT_CHECKED:
        return f"{entry['group']}: capacity not checked: {entry['reason']}"
    if "candidates" not in entry:
        return f"{entry['group']}: {entry['verdict']}: {entry['reason']}"
    zones = ", ".join(f"{candidate['zone']} {candidate['score'] if candidate['score'] is not None else 'not scored'}"
                      for candidate in entry["candidates"])
    region = f"region {entry['regionScore']}; " if entry.get("regionScore") else ""
    return (f"{entry['group']}: {entry['verdict']}: {', '.join(entry['instanceTypes'])} x {zones} ({region}"
            f"for {entry['targetCapacity']} spot instances at maxSize; scores taken {entry['ageHours']:g} h ago)")


def recorded_spot_prices(groups: Sequence[ResolvedGroup], facts: CapacityFacts | None, region: str,
                         now: datetime.datetime) -> dict[str, dict[str, tuple[float, str]]]:
    """Per group and type, the fresh recorded spot price the estimate uses (the dearest of the
    group's zones), with its label."""
    if facts is None or not facts.spot_prices:
        return {}
    prices = Prices(region, facts, now)
    found: dict[str, dict[str, tuple[float, str]]] = {}
    for group in groups:
        for kind in group.instance_types:
            recorded = prices.recorded_spot(kind.name, list(group.zones))
            if recorded:
                found.setdefault(group.config.name, {})[kind.name] = recorded
    return found


def spot_capacity_entries(entries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the capacity-feasible policy reads of each scored group."""
    return [{key: entry[key] for key in ("group", "instanceTypes", "targetCapacity", "candidates", "fixes")}
            for entry in entries if entry.get("candidates")]


def check_capacity(groups: Sequence[ResolvedGroup], facts: CapacityFacts | None, region: str,
                   policy_config: PolicyConfig | PackConfig | None, now: datetime.datetime,
                   offered: Container[str] | None = None) -> tuple[list[dict[str, Any]], list[Violation]]:
    """Each group's capacity entry, and what capacity-feasible says of the scored ones."""
    entries = capacity_entries(groups, facts, region, now, offered)
    scored = [PlannedResource(urn="", type=SPOT_CAPACITY, name=entry["group"], props=entry)
              for entry in spot_capacity_entries(entries)]
    violations = [violation for violation in evaluate(scored, policy_config) if violation.policy_name == POLICY]
    return entries, violations


def render_capacity(entries: Sequence[dict[str, Any]], console) -> None:
    """The plan's Capacity section (one line when the plan has no capacity facts: like the quotas,
    capacity is then not checked, and nothing fails), then each group's allocation."""
    if all(entry["reason"] == NO_FACTS for entry in entries if entry["verdict"] == NOT_CHECKED) and all(
            entry["verdict"] == NOT_CHECKED for entry in entries):
        console.print(f"\nCapacity not checked: {NO_FACTS}", soft_wrap=True)
    else:
        console.print("\nCapacity (Spot placement scores of each group's types x zones, 1-10: 7+ good, 4-6 thin, "
                      "1-3 unlikely):")
        for entry in entries:
            console.print(f"    {capacity_line(entry)}", soft_wrap=True)
            for fix in entry.get("fixes") or ():
                console.print(f"      fix: {fix['fix']}; costs {fix['cost']}", soft_wrap=True)
    console.print("\nAllocation (how Auto Scaling picks each group's instances over its types and zones):")
    for entry in entries:
        console.print(f"    {entry['group']}: {allocation_line(entry['allocation'])}", soft_wrap=True)
