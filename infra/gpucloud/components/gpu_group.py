"""GpuInstanceGroup: launch template(s) and an Auto Scaling group over GPU instance types.

Its args are `GpuInstanceGroupArgs` (`gpu_group_args`); the pieces the resources are built from
(node shapes, user data, network interfaces, block devices, hooks, overrides) are pure functions of
them in `_gpu_group_parts`.
"""

from __future__ import annotations

import datetime

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
from gpucloud.components.gpu_group_args import (
    LAUNCH_HOOK_TIMEOUT_SECONDS,
    TERMINATE_HOOK_TIMEOUT_SECONDS,
    GpuInstanceGroupArgs,
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
