"""The rules that need AWS facts: GPU types, EFA, subnets and AMIs, checked before any resource.

`resolve_stack` turns validated settings into a `ResolvedStack`: the config plus every fact the
components need (instance type details, subnets and their zones, the AMI and its root device).
Facts come through the `AwsLookups` protocol, so the same rules run against the real provider's
data sources (`gpucloud.lookups.PulumiAwsLookups`) or any stand-in. Each concern's rules live in
their own module (account, monitoring, prometheus, subnets, instances, capacity, zones, quotas);
this one runs them in order and builds the result.
"""

from __future__ import annotations

from typing import NamedTuple

from gpucloud.config import GroupConfig, StackSettings
from gpucloud.config.network import WITHOUT_INTERNET, NetworkConfig
from gpucloud.lookups.account import service_linked_role_missing
from gpucloud.lookups.buckets import check_data_bucket
from gpucloud.lookups.certificates import check_certificates
from gpucloud.lookups.ecr import check_ecr_repositories
from gpucloud.lookups.capacity import GroupCapacity, group_capacity, reservation_problem
from gpucloud.lookups.facts import Ami, AwsLookups, InstanceTypeFacts, Subnet
from gpucloud.lookups.instances import (
    check_architectures,
    check_hibernation,
    group_ami,
    group_instance_types,
    with_matching_types,
)
from gpucloud.lookups.monitoring import managed_monitoring_offered
from gpucloud.lookups.problems import Problems
from gpucloud.lookups.prometheus import existing_prometheus_workspace
from gpucloud.lookups.quotas import check_quotas
from gpucloud.lookups.secrets import check_secret_references
from gpucloud.lookups.security_groups import check_security_groups
from gpucloud.lookups.resolved import ResolvedGroup, ResolvedStack
from gpucloud.lookups.storage import check_file_system_placement
from gpucloud.lookups.subnets import listed_subnets
from gpucloud.lookups.zones import choose_network_zones, group_zones, offered_zones

__all__ = ["ResolvedGroup", "ResolvedStack", "resolve_stack"]


class _CheckedGroup(NamedTuple):
    """A group whose types and AMI all passed, with the zones offering each type and its capacity."""

    key: str
    group: GroupConfig
    instance_types: tuple[InstanceTypeFacts, ...]
    ami: Ami
    offered: dict[str, set[str]]
    capacity: GroupCapacity


def resolve_stack(settings: StackSettings, lookups: AwsLookups) -> ResolvedStack:
    """Check every rule that needs AWS facts; raise one ConfigError listing every problem."""
    problems = Problems(settings)
    network = settings.config.network
    create_service_linked_role = service_linked_role_missing(settings, lookups, problems)
    managed_monitoring_offered(settings, lookups.partition(), problems)
    prometheus_workspace = existing_prometheus_workspace(settings, lookups, problems)
    subnets = [] if network.created else listed_subnets(settings, lookups, problems)
    checked = _checked_groups(settings, lookups, problems)
    network_zones, zones = _stack_zones(network, lookups, checked, subnets, problems)
    resolved = _resolved_groups(checked, zones, None if network.created else subnets, problems)
    check_file_system_placement(settings, network_zones, resolved, problems)
    check_secret_references(settings, lookups, problems)
    check_data_bucket(settings, lookups, problems)
    check_ecr_repositories(settings, lookups, problems)
    check_security_groups(settings, lookups, problems)
    check_certificates(settings, lookups, problems)
    problems.raise_if_any()
    failures = problems.failures + check_quotas(
        settings, lookups, [(group.config, group.instance_types) for group in resolved], problems)
    return ResolvedStack(
        settings=settings,
        account_id=lookups.account_id(),
        partition=lookups.partition(),
        vpc_id=subnets[0].vpc_id if subnets else None,
        groups=tuple(resolved),
        warnings=tuple(problems.warnings),
        failures=tuple(failures),
        create_service_linked_role=create_service_linked_role,
        network_zones=network_zones,
        prometheus_workspace=prometheus_workspace,
    )


def _checked_groups(settings: StackSettings, lookups: AwsLookups, problems: Problems) -> list[_CheckedGroup]:
    """Each group's own rules (types, AMI, capacity, hibernation); a group with a type or AMI that
    failed goes no further, its problems already say why."""
    checked = []
    for index, group in enumerate(settings.config.groups):
        key = f"groups[{index}]"
        if group.instance_requirements is not None:
            group = with_matching_types(group, key, lookups, problems)
            if not group.instance_types:
                continue
        instance_types = group_instance_types(group, key, lookups, problems)
        ami = group_ami(group, key, lookups, problems)
        if ami and instance_types:
            check_architectures(key, ami, instance_types, problems)
        capacity = group_capacity(group, key, lookups, problems)
        check_hibernation(group, key, lookups, problems)
        if ami and len(instance_types) == len(group.instance_types):
            checked.append(_CheckedGroup(key, group, tuple(instance_types), ami,
                                         offered_zones(group, lookups, capacity.zone), capacity))
    return checked


def _stack_zones(
    network: NetworkConfig, lookups: AwsLookups, checked: list[_CheckedGroup], subnets: list[Subnet], problems: Problems,
) -> tuple[tuple[str, ...], list[str]]:
    """The created network's zones (chosen for the groups; empty with listed subnets) and the
    stack's zones in order: those, or the listed subnets' zones."""
    if not network.created:
        return (), list(dict.fromkeys(subnet.availability_zone for subnet in subnets))
    network_zones = choose_network_zones(
        [(key, group, offered) for key, group, _types, _ami, offered, _capacity in checked],
        lookups, network.zones, problems,
        reserved_zones={r.availability_zone for *_rest, capacity in checked for r in capacity.reservations},
    )
    if network.egress == "endpointsOnly":
        problems.warn("network.egress", f"endpointsOnly: the nodes reach only S3 and the interface endpoints; {WITHOUT_INTERNET}")
    return network_zones, list(network_zones)


def _resolved_groups(
    checked: list[_CheckedGroup], zones: list[str], subnets: list[Subnet] | None, problems: Problems,
) -> list[ResolvedGroup]:
    """Each checked group placed in the stack's zones (and, with listed `subnets`, its subnets),
    its reservations checked against its zones; a group with no zone is left out."""
    resolved = []
    for key, group, instance_types, ami, offered, capacity in checked:
        if capacity.zone and capacity.zone not in zones and subnets is not None:
            problems.add(f"{key}.capacity.capacityBlock", f"the block is in {capacity.zone}, where the stack has no "
                         f"subnet ({', '.join(zones)}): list a subnet in {capacity.zone}")
            continue
        group_zone_names, group_subnets = group_zones(key, group, offered, zones, problems, subnets=subnets)
        for reservation in capacity.reservations:
            problem = reservation_problem(reservation, group, set(group_zone_names))
            if problem:
                problems.add(f"{key}.capacity.reservations.ids[{group.capacity.reservations.ids.index(reservation.id)}]", problem)
        if group_zone_names:
            resolved.append(ResolvedGroup(config=group, instance_types=instance_types, subnets=group_subnets,
                                          ami=ami, zones=group_zone_names, reservations=capacity.reservations,
                                          capacity_block=capacity.block, block_offering=capacity.offering))
    return resolved
