"""GpuInstanceGroup: launch template(s) and an Auto Scaling group over GPU instance types.

The pieces the resources are built from (node shapes, user data, network interfaces, block
devices, hooks, overrides) are pure functions in `_gpu_group_parts`.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from gpucloud.components._gpu_group_parts import (
    DATA_DEVICE_NAME,
    block_devices,
    launch_hook_name,
    lifecycle_hooks,
    mixed_instances_overrides,
    network_interfaces,
    node_bootstrap,
    node_shape,
    node_shapes,
    reservation_specification,
    template_spec,
    template_spec_plain,
    terminate_hook_name,
    user_data,
    warm_pool_settings,
)
from gpucloud.components.instances_distribution import instances_distribution
from gpucloud.components.node_services import CONTAINERS_TAG
from gpucloud.lookups import InstanceTypeFacts, capacity
from gpucloud.lookups.capacity import BLOCK_SCALE_IN_LEAD, SCHEDULE_LEAD

__all__ = [
    "DATA_DEVICE_NAME",
    "LAUNCH_HOOK_TIMEOUT_SECONDS",
    "TERMINATE_HOOK_TIMEOUT_SECONDS",
    "GpuInstanceGroup",
    "GpuInstanceGroupArgs",
    "launch_hook_name",
    "node_bootstrap",
    "node_shape",
    "terminate_hook_name",
]

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


def _utc(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class GpuInstanceGroup(pulumi.ComponentResource):
    """An Auto Scaling group of GPU instances, spot and on-demand, that rolls on template changes.

    The group points at the template's latest version number and refreshes instances when it
    changes; `desiredCapacity` is set at creation only, so `pulumi up` never fights the
    autoscaler. Launch and terminate lifecycle hooks let the node gate itself into service and
    checkpoint before it goes. The hooks are given twice, on purpose: in the group's
    `initialLifecycleHooks`, so that no instance launches before its launch hook exists, and as
    `LifecycleHook` resources, which carry later changes to AWS (the group reads its initial hooks
    only when it is created, so changes to them are ignored).
    """

    group_name: pulumi.Output[str]
    """Name of the Auto Scaling group."""
    group_arn: pulumi.Output[str]
    """ARN of the Auto Scaling group."""
    launch_template_ids: pulumi.Output[list[str]]
    """Ids of the group's launch templates: one per node shape (GPUs, scratch disks, EFA cards),
    since each template's user data tells the health gate what to expect."""
    placement_group_name: pulumi.Output[str] | None
    """Cluster placement group of a multi-node group."""

    def __init__(self, name: str, args: GpuInstanceGroupArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-cloud:index:GpuInstanceGroup", name, None, opts)
        self.placement_group = None
        if args.multi_node:
            self.placement_group = aws.ec2.PlacementGroup(
                f"{name}-placement",
                strategy="cluster",
                tags={**args.tags, "Name": args.group_name},
                opts=pulumi.ResourceOptions(parent=self),
            )

        shapes = node_shapes(args)
        self.launch_templates: dict[tuple, aws.ec2.LaunchTemplate] = {}
        for index, (shape, types) in enumerate(shapes.items()):
            suffix = "" if index == 0 else "-" + types[0].name.replace(".", "-")
            self.launch_templates[shape] = self._launch_template(f"{name}-lt{suffix}", args, types[0])
        primary = self.launch_templates[next(iter(shapes))]
        overrides = mixed_instances_overrides(args, shapes, self.launch_templates)

        desired = args.min_size if args.desired_capacity is None else args.desired_capacity
        min_size = args.min_size
        waits_for_block = args.capacity_block_window is not None and args.capacity_block_window[0] > capacity.utc_now() + SCHEDULE_LEAD
        if waits_for_block:
            min_size = desired = 0
        uses_spot = args.uses_spot
        hooks = lifecycle_hooks(args)
        self.group = aws.autoscaling.Group(
            f"{name}-asg",
            name=args.group_name,
            min_size=min_size,
            max_size=args.max_size,
            desired_capacity=desired,
            vpc_zone_identifiers=list(args.subnet_ids),
            capacity_rebalance=uses_spot if args.capacity_rebalance is None else args.capacity_rebalance,
            health_check_type="EC2",
            health_check_grace_period=args.health_check_grace_period_seconds,
            placement_group=self.placement_group.name if self.placement_group else None,
            wait_for_capacity_timeout="0",
            launch_template=template_spec_plain(primary) if args.single_launch_template else None,
            capacity_reservation_specification=reservation_specification(args),
            availability_zone_distribution=(
                {"capacity_distribution_strategy": "reservations-then-balanced"}
                if args.capacity_reservation_preference in ("capacity-reservations-first", "capacity-reservations-only")
                else None
            ),
            warm_pool=warm_pool_settings(args.warm_pool),
            mixed_instances_policy=None if args.single_launch_template else {
                "instances_distribution": instances_distribution(
                    on_demand_base_capacity=args.on_demand_base_capacity, spot_percent=args.spot_percent,
                    uses_spot=uses_spot, by_requirements=bool(args.instance_requirements),
                    spot_strategy=args.spot_allocation_strategy, on_demand_strategy=args.on_demand_allocation_strategy,
                    spot_instance_pools=args.spot_instance_pools,
                ),
                "launch_template": {
                    "launch_template_specification": template_spec(primary),
                    "overrides": overrides,
                },
            },
            instance_refresh={
                "strategy": "Rolling",
                "preferences": {
                    "min_healthy_percentage": 0 if args.max_size == 1 else 90,
                    "skip_matching": True,
                    "instance_warmup": str(args.health_check_grace_period_seconds),
                },
            },
            initial_lifecycle_hooks=[{**hook, "name": name} for name, hook in hooks.items()],
            tags=[
                {"key": key, "value": value, "propagate_at_launch": False}
                for key, value in {**args.tags, "Name": args.group_name}.items()
            ],
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["desiredCapacity", "initialLifecycleHooks"]),
        )
        self.lifecycle_hooks = [
            aws.autoscaling.LifecycleHook(
                f"{name}-{'launch' if hook['lifecycle_transition'].endswith('LAUNCHING') else 'terminate'}-hook",
                name=hook_name,
                autoscaling_group_name=self.group.name,
                **hook,
                opts=pulumi.ResourceOptions(parent=self),
            )
            for hook_name, hook in hooks.items()
        ]
        self.block_schedules = self._block_schedules(name, args, waits_for_block) if args.capacity_block_window else []
        self.group_name = self.group.name
        self.group_arn = self.group.arn
        self.launch_template_ids = pulumi.Output.all(*[lt.id for lt in self.launch_templates.values()])
        self.placement_group_name = self.placement_group.name if self.placement_group else None
        self.register_outputs(
            {
                "groupName": self.group_name,
                "groupArn": self.group_arn,
                "launchTemplateIds": self.launch_template_ids,
                "placementGroupName": self.placement_group_name,
            }
        )

    def _block_schedules(self, name: str, args: GpuInstanceGroupArgs, waits_for_block: bool) -> list[aws.autoscaling.Schedule]:
        """Scale to the configured size when the block starts (if it has not yet), and to zero
        BLOCK_SCALE_IN_LEAD before it ends, so each node drains and saves its checkpoint before EC2
        starts reclaiming the block's instances 30 minutes before the end. The times are the
        block's own (EC2's StartDate and EndDate); an action due within SCHEDULE_LEAD is not
        declared, so one that ran (AWS deletes it) never comes back with a time in the past."""
        start, end = args.capacity_block_window
        schedules = []
        if capacity.scale_in_missed(end):
            return schedules
        if waits_for_block:
            schedules.append(aws.autoscaling.Schedule(
                f"{name}-block-start", scheduled_action_name=f"{args.group_name}-block-start",
                autoscaling_group_name=self.group.name, start_time=_utc(start),
                min_size=args.min_size, max_size=args.max_size,
                desired_capacity=args.min_size if args.desired_capacity is None else args.desired_capacity,
                opts=pulumi.ResourceOptions(parent=self),
            ))
        schedules.append(aws.autoscaling.Schedule(
            f"{name}-block-end", scheduled_action_name=f"{args.group_name}-block-end",
            autoscaling_group_name=self.group.name, start_time=_utc(end - BLOCK_SCALE_IN_LEAD),
            min_size=0, max_size=0, desired_capacity=0,
            opts=pulumi.ResourceOptions(parent=self),
        ))
        return schedules

    def _launch_template(self, name: str, args: GpuInstanceGroupArgs, facts: InstanceTypeFacts) -> aws.ec2.LaunchTemplate:
        efa_interfaces = facts.efa_interfaces if args.multi_node else 0
        instance_tags = {**args.tags, "Name": args.group_name}
        return aws.ec2.LaunchTemplate(
            name,
            description=f"{args.group_name}: GPU nodes",
            image_id=args.ami_id,
            update_default_version=True,
            ebs_optimized="true",
            iam_instance_profile={"arn": args.instance_profile_arn},
            metadata_options={
                "http_endpoint": "enabled",
                "http_tokens": "required",
                # A container on Docker's bridge network is one hop further from IMDS: 2 lets it get a
                # token, and so the role's credentials (EC2 user guide, "Configure the instance
                # metadata options": hop limit 2 recommended for containers, read 2026-11-25).
                "http_put_response_hop_limit": 2 if args.runs_containers else 1,
                "instance_metadata_tags": "enabled",
            },
            monitoring={"enabled": True},
            block_device_mappings=block_devices(args),
            network_interfaces=network_interfaces(args, efa_interfaces),
            user_data=user_data(args, facts),
            # Only a mixed instances policy's overrides may name the type instead (EC2 Auto Scaling user
            # guide, "Create a launch template using advanced settings": instance type is optional only there).
            instance_type=facts.name if args.single_launch_template else None,
            instance_market_options={"market_type": "capacity-block"} if args.capacity_block_id is not None else None,
            capacity_reservation_specification=(
                {"capacity_reservation_target": {"capacity_reservation_id": args.capacity_block_id}}
                if args.capacity_block_id is not None else None
            ),
            hibernation_options=(
                {"configured": True} if args.warm_pool and args.warm_pool.get("pool_state") == "Hibernated" else None
            ),
            tag_specifications=[
                {"resource_type": kind, "tags": instance_tags}
                for kind in ("instance", "volume", "network-interface")
            ],
            tags={**args.tags, "Name": name, **({CONTAINERS_TAG: "true"} if args.runs_containers else {})},
            opts=pulumi.ResourceOptions(parent=self),
        )
