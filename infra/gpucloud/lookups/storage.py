"""Where the project's FSx for Lustre file system goes (`storage.lustre.zone`), and what the plan
must say about it that no lookup answers.

A file system has one subnet, so one zone (terraform-provider-aws
internal/service/fsx/lustre_file_system.go, `subnet_ids` MaxItems 1; read 2026-11-25). Nodes in
other zones mount it across zones, and data that crosses zones to or from FSx is billed at the
rate for data transfer within the same Region, in each direction (FSx for Lustre pricing, "Data
transfer", https://aws.amazon.com/fsx/lustre/pricing/; the rate itself: EC2 On-Demand pricing,
"Data Transfer within the same AWS Region", https://aws.amazon.com/ec2/pricing/on-demand/; both
read 2026-11-25).
"""

from __future__ import annotations

from collections.abc import Sequence

from gpucloud.config import StackSettings
from gpucloud.lookups.problems import Problems
from gpucloud.lookups.resolved import ResolvedGroup

CROSS_ZONE_BILLING = ("data between the nodes and the file system is billed as data transfer within the Region, in "
                      "each direction (https://aws.amazon.com/fsx/lustre/pricing/, Data transfer)")


def file_system_zone(zone: str | None, groups: Sequence[ResolvedGroup]) -> str | None:
    """`storage.lustre.zone`, else the first zone of the first group (every group mounts it)."""
    if zone:
        return zone
    return groups[0].zones[0] if groups and groups[0].zones else None


def stack_zones(network_zones: Sequence[str], groups: Sequence[ResolvedGroup]) -> list[str]:
    """The zones a file system can be placed in: the created network's, or those where a group
    has a listed subnet (the file system takes one of those subnets)."""
    if network_zones:
        return list(network_zones)
    return list(dict.fromkeys(subnet.availability_zone for group in groups for subnet in group.subnets))


def check_file_system_placement(
    settings: StackSettings, network_zones: Sequence[str], groups: Sequence[ResolvedGroup], problems: Problems,
) -> None:
    """A named zone must be one of the stack's; each group with a zone other than the file
    system's gets a warning line; and the data bucket's policy, which the stack does not manage,
    is a not-checked line."""
    config = settings.config
    lustre = config.storage.lustre
    if lustre is None or config.data is None:
        return
    zones = stack_zones(network_zones, groups)
    if lustre.zone is not None and lustre.zone not in zones:
        problems.add("storage.lustre.zone", f"{lustre.zone} is not one of the stack's zones ({', '.join(zones) or 'none'}): "
                     "the file system takes a subnet of the stack's network, so name one of those zones")
        return
    zone = file_system_zone(lustre.zone, groups)
    for group in groups:
        others = [name for name in group.zones if name != zone]
        if others:
            problems.warn("storage.lustre.zone", (
                f"the file system is in {zone} and group {group.config.name} runs in {', '.join(others)}: its nodes "
                f"there mount it across zones, and {CROSS_ZONE_BILLING}; put the group or the file system in one zone "
                "to avoid it"))
    problems.warn("data.bucket", (
        f"not checked: the policy of {config.data.bucket}, which the stack does not manage: FSx reaches the bucket "
        "through the file system's own service-linked role, which can reach the whole bucket unless the bucket "
        "policy denies it; add the statements of the stack output dataBucketPolicyForFileSystem to the bucket's "
        "policy after `pulumi up` (the role exists once the file system does)"))
