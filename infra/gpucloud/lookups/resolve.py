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
from gpucloud.naming import AUTOSCALING_SERVICE, AUTOSCALING_SERVICE_ROLE
from gpucloud.lookups.facts import DEEP_LEARNING_AMI_PARAMETER, Ami, AwsLookups, InstanceTypeFacts, Subnet


@dataclass(frozen=True)
class ResolvedGroup:
    """One group's config with the AWS facts its resources are built from."""

    config: GroupConfig
    instance_types: tuple[InstanceTypeFacts, ...]
    subnets: tuple[Subnet, ...]
    ami: Ami

    @property
    def availability_zone(self) -> str:
        return self.subnets[0].availability_zone


@dataclass(frozen=True)
class ResolvedStack:
    settings: StackSettings
    account_id: str
    partition: str
    vpc_id: str
    groups: tuple[ResolvedGroup, ...]
    warnings: tuple[tuple[str, str], ...] = ()
    """(key, reason) pairs that do not stop the stack but that a reviewer must see."""
    create_service_linked_role: bool = False
    """The account lacks the Auto Scaling service-linked role and the config asks the stack to create it."""


class _Problems:
    def __init__(self, settings: StackSettings):
        self.settings = settings
        self.items: list[tuple[str, str]] = []
        self.warnings: list[tuple[str, str]] = []

    def add(self, key: str, reason: str) -> None:
        self.items.append((f"gpu-cloud:{key}", reason))

    def warn(self, key: str, reason: str) -> None:
        self.warnings.append((f"gpu-cloud:{key}", reason))

    def raise_if_any(self) -> None:
        if self.items:
            raise ConfigError(f"stack {self.settings.stack!r} ({self.settings.source})", self.items)


def _stack_subnets(settings: StackSettings, lookups: AwsLookups, problems: _Problems) -> list[Subnet]:
    """The listed subnets in the order given (the first decides single-zone groups' zone), or the
    default VPC's, ordered by zone."""
    subnet_ids = settings.config.network.subnet_ids
    if subnet_ids is None:
        subnets = sorted(lookups.default_subnets(), key=lambda subnet: (subnet.availability_zone, subnet.id))
        if not subnets:
            problems.add("network.subnetIds", f"is not set and {settings.region} has no default VPC subnets")
        return subnets
    subnets = []
    for index, subnet_id in enumerate(subnet_ids):
        subnet = lookups.subnet(subnet_id)
        if subnet is None:
            problems.add(f"network.subnetIds[{index}]", f"{subnet_id} does not exist in {settings.region}")
        else:
            subnets.append(subnet)
    if len({subnet.vpc_id for subnet in subnets}) > 1:
        problems.add("network.subnetIds", "spans several VPCs; list subnets of one VPC")
    return subnets


def _group_instance_types(
    group: GroupConfig, key: str, lookups: AwsLookups, problems: _Problems
) -> list[InstanceTypeFacts]:
    facts = []
    for index, name in enumerate(group.instance_types):
        found = lookups.instance_type(name)
        where = f"{key}.instanceTypes[{index}]"
        if found is None:
            problems.add(where, f"{name} is not an instance type offered in this region")
        elif found.gpu_count == 0:
            problems.add(where, f"{name} has no GPU (DescribeInstanceTypes reports no GpuInfo)")
        elif group.multi_node and not found.efa_supported:
            problems.add(where, f"{name} does not support EFA, which multiNode needs for NCCL")
        else:
            facts.append(found)
    return facts


def _group_subnets(group: GroupConfig, subnets: list[Subnet]) -> tuple[Subnet, ...]:
    """Multi-node groups and groups with a persistent volume stay in the first subnet's zone."""
    if not subnets:
        return ()
    if group.multi_node:
        return (subnets[0],)
    if group.persistent_volume_gib:
        zone = subnets[0].availability_zone
        return tuple(subnet for subnet in subnets if subnet.availability_zone == zone)
    return tuple(subnets)


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
    appears with an account's first Auto Scaling group, so a new account has none."""
    if lookups.role_exists(AUTOSCALING_SERVICE_ROLE):
        return False
    if not settings.config.account.create_service_linked_role:
        problems.add(
            "account.createServiceLinkedRole",
            f"is false and the account has no {AUTOSCALING_SERVICE_ROLE}, which the project key's policy "
            "names (KMS refuses a policy naming a role that does not exist): create it once with "
            f"`aws iam create-service-linked-role --aws-service-name {AUTOSCALING_SERVICE}`, "
            "or set account.createServiceLinkedRole: true",
        )
    return True


def resolve_stack(settings: StackSettings, lookups: AwsLookups) -> ResolvedStack:
    """Check every rule that needs AWS facts; raise one ConfigError listing every problem."""
    problems = _Problems(settings)
    create_service_linked_role = _service_linked_role_missing(settings, lookups, problems)
    subnets = _stack_subnets(settings, lookups, problems)
    resolved = []
    for index, group in enumerate(settings.config.groups):
        key = f"groups[{index}]"
        instance_types = _group_instance_types(group, key, lookups, problems)
        ami = _group_ami(group, key, lookups, problems)
        if ami and instance_types:
            for facts in instance_types:
                if ami.architecture not in facts.architectures:
                    problems.add(
                        f"{key}.instanceTypes",
                        f"{facts.name} does not run {ami.architecture} AMIs such as {ami.id}",
                    )
        if ami and len(instance_types) == len(group.instance_types):
            resolved.append(
                ResolvedGroup(
                    config=group,
                    instance_types=tuple(instance_types),
                    subnets=_group_subnets(group, subnets),
                    ami=ami,
                )
            )
    problems.raise_if_any()
    return ResolvedStack(
        settings=settings,
        account_id=lookups.account_id(),
        partition=lookups.partition(),
        vpc_id=subnets[0].vpc_id,
        groups=tuple(resolved),
        warnings=tuple(problems.warnings),
        create_service_linked_role=create_service_linked_role,
    )
