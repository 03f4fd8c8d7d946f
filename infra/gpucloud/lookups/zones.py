"""Which availability zones the stack and each group use: the zones that offer each type, the
created network's zones chosen for the groups, and each group's zones (and listed subnets)."""

from __future__ import annotations

from gpucloud.config import GroupConfig
from gpucloud.lookups.facts import AwsLookups, Subnet
from gpucloud.lookups.instances import offered_gpu_families
from gpucloud.lookups.problems import Problems


def offered_zones(group: GroupConfig, lookups: AwsLookups, pinned_zone: str | None = None) -> dict[str, set[str]]:
    """Per instance type of the group, the zones that offer it (DescribeInstanceTypeOfferings);
    only the block's zone for a group in a Capacity Block."""
    offered = {name: lookups.instance_type_zones(name) for name in group.instance_types}
    if pinned_zone:
        offered = {name: zones & {pinned_zone} for name, zones in offered.items()}
    return offered


def choose_network_zones(
    groups: list[tuple[str, GroupConfig, dict[str, set[str]]]], lookups: AwsLookups, wanted: int,
    problems: Problems, reserved_zones: set[str] = frozenset(),
) -> tuple[str, ...]:
    """The created network's zones: first, for each single-zone group, a zone offering every type
    it lists; then zones covering the types not yet offered in a chosen zone; then the zones that
    offer the most of the groups' types, up to `network.zones` (more only where a single-zone
    group needs its own). Zones holding the groups' capacity reservations rank first."""
    region_zones = lookups.availability_zones()

    def score(zone: str) -> int:
        offered_here = sum(zone in zones for _key, _group, offered in groups for zones in offered.values())
        return offered_here + (1000 if zone in reserved_zones else 0)

    ranked = sorted(region_zones, key=lambda zone: (-score(zone), zone))
    chosen: list[str] = []
    for key, group, offered in groups:
        for index, (name, zones) in enumerate(offered.items()):
            if not zones & set(region_zones):
                problems.add(f"{key}.instanceTypes[{index}]", f"{name} is not offered in any zone of the region "
                             f"(DescribeInstanceTypeOfferings lists none of {', '.join(region_zones)}); "
                             f"{offered_gpu_families(lookups, problems)}")
        if not group.single_zone:
            continue
        fitting = [zone for zone in ranked if all(zone in zones for zones in offered.values())]
        if not fitting:
            if all(zones & set(region_zones) for zones in offered.values()):
                problems.add(f"{key}.instanceTypes", f"no zone of the region offers all of {', '.join(offered)}, and "
                             "a multi-node group or one with a persistent volume stays in one zone: list types one "
                             "zone offers")
        elif not set(fitting) & set(chosen):
            chosen.append(fitting[0])
    uncovered = [zones & set(region_zones) for _key, _group, offered in groups for zones in offered.values()]
    while len(chosen) < wanted and any(zones and not zones & set(chosen) for zones in uncovered):
        chosen.append(max((zone for zone in ranked if zone not in chosen),
                          key=lambda zone: sum(zone in zones for zones in uncovered if not zones & set(chosen))))
    for zone in ranked:
        if len(chosen) >= wanted:
            break
        if zone not in chosen:
            chosen.append(zone)
    return tuple(sorted(chosen, key=ranked.index))


def group_zones(
    key: str, group: GroupConfig, offered: dict[str, set[str]], zones: list[str], problems: Problems,
    subnets: list[Subnet] | None = None,
) -> tuple[tuple[str, ...], tuple[Subnet, ...]]:
    """The group's zones (and listed subnets) among the stack's: a single-zone group takes the first
    zone offering every type it lists; a multi-zone group every zone offering one of its types.
    A type no zone offers is an error; a type missing from some zones, a warning."""
    if group.single_zone:
        fitting = [zone for zone in zones if all(zone in offered_in for offered_in in offered.values())]
        if not fitting:
            lacking = "; ".join(
                f"{name} is not offered in {', '.join(zone for zone in zones if zone not in offered_in)}"
                for name, offered_in in offered.items() if not set(zones) <= offered_in
            )
            problems.add(f"{key}.instanceTypes", f"no zone of the stack's subnets offers every type ({lacking}), and a "
                         "multi-node group or one with a persistent volume stays in one zone")
            return (), ()
        chosen = fitting[:1]
    else:
        chosen = [zone for zone in zones if any(zone in offered_in for offered_in in offered.values())]
        for index, (name, offered_in) in enumerate(offered.items()):
            missing = [zone for zone in zones if zone not in offered_in]
            if len(missing) == len(zones):
                problems.add(f"{key}.instanceTypes[{index}]", f"{name} is offered in none of the zones "
                             f"({', '.join(zones)}) of the stack's subnets")
            elif missing:
                problems.warn(f"{key}.instanceTypes[{index}]", f"{name} is not offered in {', '.join(missing)}: "
                              "the group launches it only in its other zones")
    if subnets is None:
        return tuple(chosen), ()
    if group.single_zone:
        first = next(subnet for subnet in subnets if subnet.availability_zone == chosen[0])
        if first.availability_zone != subnets[0].availability_zone:
            problems.warn(f"{key}", f"stays in {chosen[0]}, the first zone of the listed subnets that offers every "
                          f"type it lists, not {subnets[0].availability_zone}")
        return tuple(chosen), tuple(subnet for subnet in subnets if subnet.availability_zone == chosen[0])
    return tuple(chosen), tuple(subnet for subnet in subnets if subnet.availability_zone in chosen)
