"""The rules that need AWS facts: GPU types, EFA, subnets and AMIs, checked before any resource.

`resolve_stack` turns validated settings into a `ResolvedStack`: the config plus every fact the
components need (instance type details, subnets and their zones, the AMI and its root device).
Facts come through the `AwsLookups` protocol, so the same rules run against the real provider's
data sources (`gpucloud.lookups.PulumiAwsLookups`) or any stand-in.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from gpucloud.config import ConfigError, GroupConfig, StackSettings
from gpucloud.config.network import WITHOUT_INTERNET
from gpucloud.config.node_endpoints import describe, needed_endpoints
from gpucloud.lookups.capacity import (
    BLOCK_SCALE_IN_LEAD,
    SCHEDULE_LEAD,
    CapacityBlockOffering,
    CapacityReservation,
    reservation_problem,
    utc_now,
)
from gpucloud.lookups.facts import (
    DEEP_LEARNING_AMI_PARAMETER,
    EGRESS_TARGETS,
    Ami,
    AwsLookups,
    InstanceTypeFacts,
    PrometheusWorkspace,
    Subnet,
)
from gpucloud.lookups.prometheus import workspace_conflicts
from gpucloud.lookups.quotas import increase_command, quota_needs
from gpucloud.lookups.requirements import matching_types
from gpucloud.naming import AUTOSCALING_SERVICE, AUTOSCALING_SERVICE_ROLE


@dataclass(frozen=True)
class ResolvedGroup:
    """One group's config with the AWS facts its resources are built from."""

    config: GroupConfig
    instance_types: tuple[InstanceTypeFacts, ...]
    subnets: tuple[Subnet, ...]
    """The listed subnets it uses; empty in a network the stack creates (see `zones`)."""
    ami: Ami
    zones: tuple[str, ...] = ()
    """Its availability zones, in order; a single-zone group has one, offering every type it lists."""
    reservations: tuple[CapacityReservation, ...] = ()
    """The On-Demand Capacity Reservations `capacity.reservations.ids` names, as EC2 describes them."""
    capacity_block: CapacityReservation | None = None
    """The Capacity Block the group runs in, when it holds one already."""
    block_offering: CapacityBlockOffering | None = None
    """The Capacity Block offering `capacity.capacityBlock.offering` asks for, not bought yet (the
    program never buys one: `gpucloud capacity buy` does); the plan prices it and fails."""

    @property
    def block_window(self) -> tuple[datetime.datetime, datetime.datetime] | None:
        """When the group's Capacity Block starts and ends, as EC2 describes the block it holds."""
        if self.capacity_block and self.capacity_block.start and self.capacity_block.end:
            return self.capacity_block.start, self.capacity_block.end
        return None

    @property
    def availability_zone(self) -> str:
        return self.zones[0]


@dataclass(frozen=True)
class ResolvedStack:
    settings: StackSettings
    account_id: str
    partition: str
    vpc_id: str | None
    """The VPC of the listed subnets; None when the stack creates its network."""
    groups: tuple[ResolvedGroup, ...]
    warnings: tuple[tuple[str, str], ...] = ()
    """(key, reason) pairs that do not stop the stack but that a reviewer must see."""
    failures: tuple[str, ...] = ()
    """What makes the stack deploy and never run (a vCPU quota below minSize): `pulumi up` must not go on."""
    create_service_linked_role: bool = False
    """The account lacks the Auto Scaling service-linked role and the config asks the stack to create it."""
    network_zones: tuple[str, ...] = ()
    """The zones of the network the stack creates (empty with listed subnets)."""
    prometheus_workspace: PrometheusWorkspace | None = None
    """The existing workspace `monitoring.prometheus.workspaceId` names, as the account has it."""


class _Problems:
    def __init__(self, settings: StackSettings):
        self.settings = settings
        self.items: list[tuple[str, str]] = []
        self.warnings: list[tuple[str, str]] = []
        self.failures: list[str] = []

    def add(self, key: str, reason: str) -> None:
        """One problem per key: the first rule that fails for it says why."""
        if not any(named == f"gpu-cloud:{key}" for named, _reason in self.items):
            self.items.append((f"gpu-cloud:{key}", reason))

    def warn(self, key: str, reason: str) -> None:
        self.warnings.append((f"gpu-cloud:{key}", reason))

    def raise_if_any(self) -> None:
        if self.items:
            raise ConfigError(f"stack {self.settings.stack!r} ({self.settings.source})", self.items)


def _listed_subnets(settings: StackSettings, lookups: AwsLookups, problems: _Problems) -> list[Subnet]:
    """The listed subnets in the order given (a single-zone group takes the first whose zone offers its types)."""
    subnets = []
    for index, subnet_id in enumerate(settings.config.network.subnet_ids or ()):
        subnet = lookups.subnet(subnet_id)
        if subnet is None:
            problems.add(f"network.subnetIds[{index}]", f"{subnet_id} does not exist in {settings.region}")
        else:
            _check_egress(settings, lookups, subnet, f"network.subnetIds[{index}]", problems)
            subnets.append(subnet)
    if len({subnet.vpc_id for subnet in subnets}) > 1:
        problems.add("network.subnetIds", "spans several VPCs; list subnets of one VPC")
    return subnets


def _check_egress(settings: StackSettings, lookups: AwsLookups, subnet: Subnet, key: str, problems: _Problems) -> None:
    """Nodes get no public IP, so a node in a subnet whose only way out is an internet gateway, or
    that has no default route and lacks an endpoint it calls, never passes its launch hook."""
    defaults = [route for route in lookups.subnet_routes(subnet) if route.destination == "0.0.0.0/0"]
    if any(route.target_kind in EGRESS_TARGETS for route in defaults):
        return
    if any(route.target_kind == "internet-gateway" for route in defaults):
        problems.add(key, f"{subnet.id} routes 0.0.0.0/0 only to internet gateway "
                     f"{next(route.target for route in defaults if route.target_kind == 'internet-gateway')}, and "
                     "nodes get no public IP: they could not reach Auto Scaling, S3 or CloudWatch. List private "
                     "subnets whose default route goes to a NAT gateway (or a transit gateway or firewall), or drop "
                     "network.subnetIds to let the stack create its network")
        return
    missing = {service: why for service, why in needed_endpoints(settings.config).items()
               if not lookups.has_vpc_endpoint(subnet.vpc_id, f"com.amazonaws.{settings.region}.{service}")}
    if missing:
        problems.add(key, f"{subnet.id} has no default route (no NAT, transit gateway or firewall) and its VPC "
                     f"lacks the VPC endpoints for {describe(missing)}, which the nodes call: add them, or a "
                     "default route to a NAT gateway")


def _group_instance_types(
    group: GroupConfig, key: str, lookups: AwsLookups, problems: _Problems
) -> list[InstanceTypeFacts]:
    facts = []
    for index, name in enumerate(group.instance_types):
        found = lookups.instance_type(name)
        where = f"{key}.instanceTypes[{index}]"
        if found is None:
            problems.add(where, f"{name} is not an instance type offered in this region")
        elif not found.has_gpu:
            problems.add(where, f"{name} has no GPU: DescribeInstanceTypes reports {found.gpu_report} for it")
        elif group.multi_node and not found.efa_supported:
            problems.add(where, f"{name} does not support EFA, which multiNode needs for NCCL")
        else:
            if found.fractional_gpu:
                problems.warn(where, f"{name} is fractional: {found.gpu_report}; its node sees one {found.gpu_model} "
                              "and its gate expects one")
            facts.append(found)
    return facts


def _with_matching_types(group: GroupConfig, key: str, lookups: AwsLookups, problems: _Problems) -> GroupConfig:
    """The group with the region's GPU types its instanceRequirements match as its instance types,
    so that every rule on types (GPU, EFA, zones, quotas, prices) holds for each of them."""
    names = matching_types(group.instance_requirements, list(lookups.gpu_instance_types()))
    if not names:
        problems.add(f"{key}.instanceRequirements", f"matches no GPU instance type offered in {problems.settings.region}: "
                     "widen the GPU count, memory or names")
        return group
    problems.warn(f"{key}.instanceRequirements", f"match {len(names)} GPU types in {problems.settings.region}: {', '.join(names)}")
    return group.model_copy(update={"instance_types": names})


def _offered(group: GroupConfig, lookups: AwsLookups, pinned_zone: str | None = None) -> dict[str, set[str]]:
    """Per instance type of the group, the zones that offer it (DescribeInstanceTypeOfferings);
    only the block's zone for a group in a Capacity Block."""
    offered = {name: lookups.instance_type_zones(name) for name in group.instance_types}
    if pinned_zone:
        offered = {name: zones & {pinned_zone} for name, zones in offered.items()}
    return offered


def _check_hibernation(group: GroupConfig, key: str, lookups: AwsLookups, problems: _Problems) -> None:
    """A hibernated warm pool needs a type that can hibernate and a root volume that holds its
    memory (EC2 user guide, "Prerequisites for EC2 instance hibernation", read 2026-11-25)."""
    if group.warm_pool is None or group.warm_pool.pool_state != "Hibernated":
        return
    supported, memory_mib = lookups.hibernation(group.instance_types[0])
    if not supported:
        problems.add(f"{key}.warmPool.poolState", f"Hibernated: {group.instance_types[0]} cannot hibernate "
                     "(DescribeInstanceTypes reports HibernationSupported false); use Stopped")
    elif group.root_volume_gib * 1024 < memory_mib + 30 * 1024:
        problems.add(f"{key}.rootVolumeGiB", f"{group.root_volume_gib} GiB cannot hold the {memory_mib // 1024} GiB of "
                     f"memory a hibernated {group.instance_types[0]} writes to its root volume, plus the system: "
                     f"use at least {memory_mib // 1024 + 30}")


@dataclass(frozen=True)
class _Capacity:
    reservations: tuple[CapacityReservation, ...] = ()
    block: CapacityReservation | None = None
    offering: CapacityBlockOffering | None = None

    @property
    def zone(self) -> str | None:
        if self.block:
            return self.block.availability_zone
        return self.offering.availability_zone if self.offering else None


def _group_capacity(group: GroupConfig, key: str, lookups: AwsLookups, problems: _Problems) -> _Capacity:
    """The reservations and Capacity Block a group names, as EC2 describes them; each reference
    that EC2 would not launch into is a problem naming the reservation."""
    capacity = group.capacity
    reservations = []
    if capacity.reservations:
        for index, reservation_id in enumerate(capacity.reservations.ids):
            where = f"{key}.capacity.reservations.ids[{index}]"
            found = lookups.capacity_reservation(reservation_id)
            if found is None:
                problems.add(where, f"{reservation_id} does not exist in {problems.settings.region}")
            elif found.reservation_type == "capacity-block":
                problems.add(where, f"{reservation_id} is a Capacity Block: name it in capacity.capacityBlock.reservationId")
            else:
                problem = reservation_problem(found, group, set())
                if problem:
                    problems.add(where, problem)
                else:
                    reservations.append(found)
        if capacity.reservations.resource_group_arns:
            problems.warn(f"{key}.capacity.reservations.resourceGroupArns",
                          "the reservations in these resource groups are not checked here (their members change "
                          "without a stack update): each must match a listed type, Linux/UNIX and a zone of the group")
    block = capacity.capacity_block
    if block is None:
        return _Capacity(reservations=tuple(reservations))
    where = f"{key}.capacity.capacityBlock"
    if block.reservation_id:
        found = lookups.capacity_reservation(block.reservation_id)
        if found is None:
            problems.add(f"{where}.reservationId", f"{block.reservation_id} does not exist in {problems.settings.region}")
            return _Capacity()
        if found.reservation_type != "capacity-block":
            problems.add(f"{where}.reservationId", f"{block.reservation_id} is an On-Demand Capacity Reservation, not a "
                         "Capacity Block: name it in capacity.reservations.ids")
            return _Capacity()
        problem = reservation_problem(found, group, set())
        if problem is None and found.instance_count < group.max_size:
            problem = f"{block.reservation_id} holds {found.instance_count} instances, fewer than maxSize {group.max_size}"
        if problem is None and found.end and found.end - BLOCK_SCALE_IN_LEAD <= utc_now() + SCHEDULE_LEAD:
            problem = (f"{block.reservation_id} ends {found.end:%Y-%m-%d %H:%M} UTC: the group's scale-in, "
                       f"{BLOCK_SCALE_IN_LEAD.seconds // 60} minutes before the end so that nodes drain before EC2 "
                       "reclaims them, has run or cannot be scheduled in time; drop capacity.capacityBlock or name "
                       "your next block")
        if problem:
            problems.add(f"{where}.reservationId", problem)
            return _Capacity()
        return _Capacity(block=found)
    offer = block.offering
    offering = lookups.capacity_block_offering(offer)
    if offering is None:
        problems.add(f"{where}.offering", f"EC2 offers no Capacity Block of {offer.count} x {offer.instance_type} for "
                     f"{offer.duration_hours} hours between {offer.start_after} and {offer.end_before}: widen the "
                     "window, or change the count or duration")
        return _Capacity()
    problems.failures.append(
        f"gpu-cloud:{where}.offering: not bought yet: EC2 offers {offering.id}, {offering.instance_count} x "
        f"{offering.instance_type} in {offering.availability_zone} for {offering.duration_hours} hours between "
        f"{offer.start_after} and {offer.end_before}, {offering.upfront_usd:,.2f} {offering.currency} upfront (not "
        f"refundable). The program never buys it: run `gpucloud capacity buy --config {problems.settings.source} "
        f"--group {group.name}` to see its dates, then with --confirm <offering id> to buy it once and put its "
        "reservationId here")
    return _Capacity(offering=offering)


def _choose_network_zones(
    groups: list[tuple[str, GroupConfig, dict[str, set[str]]]], region_zones: list[str], wanted: int,
    problems: _Problems, reserved_zones: set[str] = frozenset(),
) -> tuple[str, ...]:
    """The created network's zones: first, for each single-zone group, a zone offering every type
    it lists; then zones covering the types not yet offered in a chosen zone; then the zones that
    offer the most of the groups' types, up to `network.zones` (more only where a single-zone
    group needs its own). Zones holding the groups' capacity reservations rank first."""
    def score(zone: str) -> int:
        offered_here = sum(zone in zones for _key, _group, offered in groups for zones in offered.values())
        return offered_here + (1000 if zone in reserved_zones else 0)

    ranked = sorted(region_zones, key=lambda zone: (-score(zone), zone))
    chosen: list[str] = []
    for key, group, offered in groups:
        for index, (name, zones) in enumerate(offered.items()):
            if not zones & set(region_zones):
                problems.add(f"{key}.instanceTypes[{index}]", f"{name} is not offered in any zone of the region "
                             f"(DescribeInstanceTypeOfferings lists none of {', '.join(region_zones)})")
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


def _group_zones(
    key: str, group: GroupConfig, offered: dict[str, set[str]], zones: list[str], problems: _Problems,
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


def _group_ami(group: GroupConfig, key: str, lookups: AwsLookups, problems: _Problems) -> Ami | None:
    if group.ami_id:
        ami_id, where = group.ami_id, f"{key}.amiId"
    else:
        ami_id, where = lookups.parameter(DEEP_LEARNING_AMI_PARAMETER), f"{key}.amiId"
        if ami_id is None:
            problems.add(where, f"is not set and the public parameter {DEEP_LEARNING_AMI_PARAMETER} is missing")
            return None
    ami = lookups.ami(ami_id)
    if ami is None:
        problems.add(where, f"{ami_id} does not exist or is not visible to this account")
    elif ami.deprecation_time and ami.deprecation_time <= datetime.datetime.now(datetime.UTC).isoformat():
        problems.warn(
            where,
            f"{ami_id} was deprecated by its owner on {ami.deprecation_time[:10]}: it still launches, but "
            "gets no fixes and leaves default image searches; pin a current image",
        )
    return ami


def _service_linked_role_missing(settings: StackSettings, lookups: AwsLookups, problems: _Problems) -> bool:
    """The project key's policy names the Auto Scaling service-linked role (EBS encryption at launch
    needs it), and KMS refuses a key policy naming a principal that does not exist
    (https://docs.aws.amazon.com/kms/latest/APIReference/API_CreateKey.html, `Policy`: "the
    principals in the key policy must exist and be visible to AWS KMS", read 2026-11-24). The role
    appears with an account's first Auto Scaling group, so a new account has none. Where it exists
    the stack never declares it: IAM refuses a second (CreateServiceLinkedRole answers "InvalidInput:
    Service role name AWSServiceRoleForAutoScaling has been taken in this account", as quoted in
    DataDog/pathfinding-labs issue 23; read 2026-11-25).
    Offline without account facts that say, it is not known: one line says so, nothing is declared,
    and the real `pulumi preview` looks it up in the real account."""
    exists = lookups.role_exists(AUTOSCALING_SERVICE_ROLE)
    if exists is None:
        then = ("`pulumi up` creates it where it is missing" if settings.config.account.create_service_linked_role
                else "with createServiceLinkedRole false a missing one stops `pulumi preview`")
        problems.warn("account.createServiceLinkedRole", f"not checked: whether the account has {AUTOSCALING_SERVICE_ROLE} "
                      f"is not known here (offline, give the plan account facts; `pulumi preview` looks it up); {then}")
        return False
    if exists:
        return False
    if not settings.config.account.create_service_linked_role:
        problems.add(
            "account.createServiceLinkedRole",
            f"is false and the account has no {AUTOSCALING_SERVICE_ROLE}, which the project key's policy "
            "names (KMS refuses a policy naming a role that does not exist): create it once with "
            f"`aws iam create-service-linked-role --aws-service-name {AUTOSCALING_SERVICE}`, "
            "or set account.createServiceLinkedRole: true (the default) to let the stack create it",
        )
    return True


MANAGED_MONITORING = (
    ("monitoring.prometheus.enabled", "prometheus", "amp", "Amazon Managed Service for Prometheus"),
    ("monitoring.grafana.enabled", "grafana", "grafana", "Amazon Managed Grafana"),
)
"""The managed services `monitoring` may turn on: config key, config section, the AWS SDK's name
for the service, and its name in words."""


def _managed_monitoring_offered(settings: StackSettings, partition: str, problems: _Problems) -> None:
    """Neither service is in every region, and creating a workspace where it has no endpoint fails
    at `pulumi up` (moto takes it anywhere). Where they are is the AWS SDK's own endpoint data, as
    the installed botocore carries it (`Session.get_available_regions`)."""
    import boto3
    import botocore

    for key, section, service, words in MANAGED_MONITORING:
        if not getattr(settings.config.monitoring, section).enabled:
            continue
        regions = boto3.session.Session().get_available_regions(service, partition_name=partition)
        if settings.region not in regions:
            problems.add(key, f"{words} has no endpoint in {settings.region} (botocore {botocore.__version__} lists "
                              f"{', '.join(regions)}): deploy the stack in one of those regions, or turn it off")


def _existing_prometheus_workspace(settings: StackSettings, lookups: AwsLookups, problems: _Problems) -> PrometheusWorkspace | None:
    """A named workspace must exist in the stack's region and be ACTIVE: AMP refuses rule groups
    and an alert manager definition in one that is CREATING, UPDATING or DELETING (AMP API
    reference, WorkspaceStatus; read 2026-11-25)."""
    prometheus = settings.config.monitoring.prometheus
    if not (prometheus.enabled and prometheus.workspace_id):
        return None
    key = "monitoring.prometheus.workspaceId"
    workspace = lookups.prometheus_workspace(prometheus.workspace_id)
    if workspace is None:
        problems.add(key, f"{prometheus.workspace_id} does not exist in {settings.region}")
    elif workspace.status != "ACTIVE":
        problems.add(key, f"{prometheus.workspace_id} is {workspace.status}, not ACTIVE")
    else:
        refusals, unchecked = workspace_conflicts(settings, lookups.prometheus_workspace_contents(workspace.id))
        for named, reason in refusals:
            problems.add(named, reason)
        for named, reason in unchecked:
            problems.warn(named, reason)
    return workspace


def _check_quotas(settings: StackSettings, lookups: AwsLookups, groups, problems: _Problems) -> list[str]:
    """Each EC2 vCPU quota the groups draw on against its applied value: below minSize is a failure,
    below maxSize a warning, both with the command that asks for more."""
    failures, unknown = [], []
    for need in quota_needs(groups):
        available = lookups.ec2_quota(need.code)
        if available is None:
            unknown.append(need.code)
            continue
        where = f"groups {', '.join(need.groups)} need"
        for scenario, vcpus in (("minSize", need.vcpus_at_min), ("maxSize", need.vcpus_at_max)):
            if vcpus <= available:
                continue
            message = (f"EC2 quota {need.name} ({need.code}): {where} {vcpus} vCPUs at {scenario}, the account has "
                       f"{available:g} in {settings.region}; no instance beyond it ever starts. Ask for more: "
                       f"{increase_command(need.code, vcpus, settings.region)}")
            if scenario == "minSize":
                failures.append(message)
                break
            problems.warn("groups", message)
    if unknown:
        problems.warn("groups", f"EC2 vCPU quotas were not checked ({', '.join(unknown)}): their values are not "
                      "known here (offline, give the plan account facts with quotas; online, the deploying role "
                      "needs servicequotas:GetServiceQuota)")
    return failures


def resolve_stack(settings: StackSettings, lookups: AwsLookups) -> ResolvedStack:
    """Check every rule that needs AWS facts; raise one ConfigError listing every problem."""
    problems = _Problems(settings)
    network = settings.config.network
    create_service_linked_role = _service_linked_role_missing(settings, lookups, problems)
    _managed_monitoring_offered(settings, lookups.partition(), problems)
    prometheus_workspace = _existing_prometheus_workspace(settings, lookups, problems)
    subnets = [] if network.created else _listed_subnets(settings, lookups, problems)
    checked = []
    for index, group in enumerate(settings.config.groups):
        key = f"groups[{index}]"
        if group.instance_requirements is not None:
            group = _with_matching_types(group, key, lookups, problems)
            if not group.instance_types:
                continue
        instance_types = _group_instance_types(group, key, lookups, problems)
        ami = _group_ami(group, key, lookups, problems)
        if ami and instance_types:
            for facts in instance_types:
                if ami.architecture not in facts.architectures:
                    problems.add(
                        f"{key}.instanceTypes",
                        f"{facts.name} does not run {ami.architecture} AMIs such as {ami.id}",
                    )
        capacity = _group_capacity(group, key, lookups, problems)
        _check_hibernation(group, key, lookups, problems)
        if ami and len(instance_types) == len(group.instance_types):
            checked.append((key, group, tuple(instance_types), ami, _offered(group, lookups, capacity.zone), capacity))
    if network.created:
        network_zones = _choose_network_zones(
            [(key, group, offered) for key, group, _types, _ami, offered, _capacity in checked],
            lookups.availability_zones(), network.zones, problems,
            reserved_zones={r.availability_zone for *_rest, capacity in checked for r in capacity.reservations},
        )
        zones = list(network_zones)
        if network.egress == "endpointsOnly":
            problems.warn("network.egress", f"endpointsOnly: the nodes reach only S3 and the interface endpoints; {WITHOUT_INTERNET}")
    else:
        network_zones = ()
        zones = list(dict.fromkeys(subnet.availability_zone for subnet in subnets))
    resolved = []
    for key, group, instance_types, ami, offered, capacity in checked:
        if capacity.zone and capacity.zone not in zones and not network.created:
            problems.add(f"{key}.capacity.capacityBlock", f"the block is in {capacity.zone}, where the stack has no "
                         f"subnet ({', '.join(zones)}): list a subnet in {capacity.zone}")
            continue
        group_zones, group_subnets = _group_zones(
            key, group, offered, zones, problems, subnets=None if network.created else subnets
        )
        for reservation in capacity.reservations:
            problem = reservation_problem(reservation, group, set(group_zones))
            if problem:
                problems.add(f"{key}.capacity.reservations.ids[{group.capacity.reservations.ids.index(reservation.id)}]", problem)
        if group_zones:
            resolved.append(ResolvedGroup(config=group, instance_types=instance_types, subnets=group_subnets,
                                          ami=ami, zones=group_zones, reservations=capacity.reservations,
                                          capacity_block=capacity.block, block_offering=capacity.offering))
    problems.raise_if_any()
    failures = problems.failures + _check_quotas(
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
