"""What `resolve_stack` gives the components: each group's config with the AWS facts it is built
from, and the stack's account, network and monitoring facts."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from gpucloud.config import GroupConfig, StackSettings
from gpucloud.lookups.capacity import CapacityBlockOffering, CapacityReservation
from gpucloud.lookups.facts import Ami, InstanceTypeFacts, PrometheusWorkspace, Subnet


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
    """The stack's settings with every AWS fact its components need, and what the rules found."""

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
