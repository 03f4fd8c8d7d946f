"""What a group launches, as the region has it: its instance types (GPU, EFA, the types its
instanceRequirements match), its AMI and its architecture, and hibernation for a warm pool."""

from __future__ import annotations

import datetime

from gpucloud.config import GroupConfig
from gpucloud.config.suggest import closest
from gpucloud.lookups.facts import DEEP_LEARNING_AMI_PARAMETER, Ami, AwsLookups, InstanceTypeFacts
from gpucloud.lookups.problems import Problems
from gpucloud.lookups.requirements import matching_types


def group_instance_types(
    group: GroupConfig, key: str, lookups: AwsLookups, problems: Problems
) -> list[InstanceTypeFacts]:
    """The facts of each listed type that exists in the region, has a GPU and, for multiNode, EFA."""
    facts = []
    for index, name in enumerate(group.instance_types):
        found = lookups.instance_type(name)
        where = f"{key}.instanceTypes[{index}]"
        if found is None:
            problems.add(where, f"{name} is not an instance type offered in this region"
                         f"{closest(name, lookups.offered_gpu_types())}; {offered_gpu_families(lookups, problems)}")
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


def offered_gpu_families(lookups: AwsLookups, problems: Problems) -> str:
    """What the region offers instead, by GPU family (`g5.*`), for a message refusing a type."""
    families = dict.fromkeys(name.split(".")[0] for name in lookups.offered_gpu_types())
    if not families:
        return f"{problems.settings.region} offers no GPU type"
    return f"{problems.settings.region} offers GPU types {', '.join(f'{family}.*' for family in families)}"


def with_matching_types(group: GroupConfig, key: str, lookups: AwsLookups, problems: Problems) -> GroupConfig:
    """The group with the region's GPU types its instanceRequirements match as its instance types,
    so that every rule on types (GPU, EFA, zones, quotas, prices) holds for each of them."""
    names = matching_types(group.instance_requirements, list(lookups.gpu_instance_types()))
    if not names:
        problems.add(f"{key}.instanceRequirements", f"matches no GPU instance type offered in {problems.settings.region}: "
                     "widen the GPU count, memory or names")
        return group
    problems.warn(f"{key}.instanceRequirements", f"match {len(names)} GPU types in {problems.settings.region}: {', '.join(names)}")
    return group.model_copy(update={"instance_types": names})


def check_architectures(key: str, ami: Ami, instance_types: list[InstanceTypeFacts], problems: Problems) -> None:
    """Every listed type runs the AMI's architecture."""
    for facts in instance_types:
        if ami.architecture not in facts.architectures:
            problems.add(
                f"{key}.instanceTypes",
                f"{facts.name} does not run {ami.architecture} AMIs such as {ami.id}",
            )


def check_hibernation(group: GroupConfig, key: str, lookups: AwsLookups, problems: Problems) -> None:
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


def group_ami(group: GroupConfig, key: str, lookups: AwsLookups, problems: Problems) -> Ami | None:
    """The group's AMI (amiId, else the Deep Learning AMI's public parameter), if visible; a
    deprecated one is a warning."""
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
