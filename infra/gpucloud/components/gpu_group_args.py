"""GpuInstanceGroupArgs: what a GPU instance group is built from, read by the component
(`gpu_group`) and by the pure pieces it is built of (`_gpu_group_parts`), below both."""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi

from gpucloud.lookups import InstanceTypeFacts

LAUNCH_HOOK_TIMEOUT_SECONDS = 900
TERMINATE_HOOK_TIMEOUT_SECONDS = 600


@dataclass(frozen=True)
class GpuInstanceGroupArgs:
    group_name: str
    """The Auto Scaling group's name (fixed, so node policies and alarms can refer to it)."""
    instance_types: Sequence[InstanceTypeFacts]
    subnet_ids: Sequence[pulumi.Input[str]]
    ami_id: str
    root_device_name: str
    instance_profile_arn: pulumi.Input[str]
    kms_key_arn: pulumi.Input[str]
    security_group_id: pulumi.Input[str]
    max_size: int
    min_size: int = 0
    desired_capacity: int | None = None
    on_demand_base_capacity: int = 0
    spot_percent: int = 100
    multi_node: bool = False
    root_volume_gib: int = 100
    data_volume_gib: int = 0
    health_check_grace_period_seconds: int = 900
    project: str = ""
    boot_phase_log_group: str | None = None
    """The log group the CloudWatch agent sends the node's boot-phase lines to (the stack's job log
    group, stream `boot-phases/<Auto Scaling group>/<instance id>`); None sends none."""
    region: str = "us-east-1"
    max_temperature_c: int = 85
    persistent_volume_attach_to: str | None = None
    """`gpu-cloud:attach-to` tag value of the volume the node attaches at boot, if any."""
    checkpoint_bucket: str | None = None
    checkpoint_prefix: str | None = None
    """Where the node syncs checkpoints when it is told to go (spot notice, scale-in)."""
    checkpoint_command: Sequence[str] | None = None
    """Runs instead of the sync (argv, no shell) when set."""
    checkpoint_directory: str = "/scratch/checkpoints"
    checkpoint_timeout_seconds: int = 90
    agent_bucket: str = ""
    agent_key: str = ""
    agent_sha256: str = ""
    """The agent bundle the nodes fetch: an AgentArtifacts component's bucket name and its
    bundle's key and SHA-256 (plain values, since they are pinned in the user data)."""
    health_interval_seconds: int = 60
    throttle_minutes: int = 10
    max_replacements_per_hour: int = 2
    replace_faulty_nodes: bool = True
    """What the node's watch does on a GPU fault: mark the node Unhealthy (True) or only report it."""
    prometheus_remote_write_url: pulumi.Input[str] | None = None
    """The Prometheus workspace the node's collector remote-writes to; None: no collector."""
    prometheus_scrape_interval_seconds: int = 30
    capacity_reservation_ids: Sequence[str] = ()
    capacity_reservation_group_arns: Sequence[str] = ()
    capacity_reservation_preference: str | None = None
    """On-Demand Capacity Reservations the group launches into (Auto Scaling's preference:
    capacity-reservations-only, capacity-reservations-first or none)."""
    spot_allocation_strategy: str = "price-capacity-optimized"
    """Auto Scaling's SpotAllocationStrategy (`capacity.allocation.spot`)."""
    on_demand_allocation_strategy: str | None = None
    """Auto Scaling's OnDemandAllocationStrategy; None: prioritized, or lowest-price with instance requirements."""
    spot_instance_pools: int | None = None
    """With spot lowest-price only: the pools to spread over."""
    capacity_rebalance: bool | None = None
    """Replace spot instances at risk of interruption early; None: whenever the group runs spot."""
    capacity_block_id: pulumi.Input[str] | None = None
    """The Capacity Block the group runs in: its launch template targets it with market type capacity-block."""
    capacity_block_window: tuple[datetime.datetime, datetime.datetime] | None = None
    """When the block starts and ends: the group waits at zero until the start, and goes back to
    zero before EC2 reclaims the block's instances."""
    instance_requirements: Mapping[str, object] | None = None
    """pulumi-aws InstanceRequirements the instance types were chosen by: each node shape's override
    carries them, with that shape's types as its allowed types (and on-demand is lowest-price, the
    only allocation Auto Scaling takes with requirements)."""
    warm_pool: Mapping[str, object] | None = None
    """min_size, max_group_prepared_capacity, pool_state, reuse_on_scale_in (Auto Scaling's WarmPool)."""
    services: Mapping[str, object] | None = None
    """What the nodes serve after the gate (`node_services.node_services_document`); None: nothing."""
    shared_file_system: pulumi.Input[Mapping[str, str]] | None = None
    """The project's Lustre file system (`SharedFileSystem.mount`: dns_name and mount_name), which
    every node mounts at /fsx before its gate passes; None: none."""
    s3_mounts: Sequence[str] = ()
    """Mountpoint for Amazon S3 mounts (`storage.s3Mount`), as `gpucloud.node.storage_mounts` reads them."""
    s3_mount_install: str = "ami"
    tags: Mapping[str, str] = field(default_factory=dict)
    launch_hook_timeout_seconds: int = LAUNCH_HOOK_TIMEOUT_SECONDS
    """How long a new node has to pass its gate (it sends heartbeats while it works) before it is abandoned."""
    terminate_hook_timeout_seconds: int = TERMINATE_HOOK_TIMEOUT_SECONDS
    """How long a leaving node has to drain and save its checkpoint."""

    @property
    def uses_spot(self) -> bool:
        return self.spot_percent > 0 and self.max_size > self.on_demand_base_capacity

    @property
    def runs_containers(self) -> bool:
        return bool(self.services and self.services.get("containers"))

    @property
    def single_launch_template(self) -> bool:
        """A Capacity Block or a warm pool group names its one launch template itself: Auto Scaling
        takes neither with a mixed instances policy."""
        return self.capacity_block_id is not None or self.warm_pool is not None

    def __post_init__(self) -> None:
        if not (self.agent_bucket and self.agent_key and self.agent_sha256):
            raise ValueError(
                "agent_bucket, agent_key and agent_sha256 name the node agent bundle: create an "
                "AgentArtifacts component and pass its bucket name and its bundle's key and sha256"
            )
        if self.single_launch_template and (self.uses_spot or len(self.instance_types) != 1):
            raise ValueError("a Capacity Block or warm pool group runs one instance type on-demand (spot_percent 0): "
                             "Auto Scaling takes neither with a mixed instances policy")
        if self.persistent_volume_attach_to and self.uses_spot:
            raise ValueError(
                "a group whose node attaches a persistent volume must run on-demand (spot_percent 0 or "
                "on_demand_base_capacity >= max_size): spot capacity rebalancing would start the "
                "replacement while the old node still holds the volume"
            )
