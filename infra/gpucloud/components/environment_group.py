"""One group's part of ProjectEnvironment: its security group, persistent volume, instances,
autoscaling, notebook user policy and inference endpoint, built as children of the environment on
what every group shares (`SharedResources`), in the order they depend on each other."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from gpucloud.components.agent_artifacts import AgentArtifacts
from gpucloud.components.autoscaling import GpuAutoscaling, GpuAutoscalingArgs
from gpucloud.components.encrypted_volume import EncryptedVolume, EncryptedVolumeArgs
from gpucloud.components.gpu_group import GpuInstanceGroup, GpuInstanceGroupArgs
from gpucloud.components.inference_endpoint import InferenceEndpoint, InferenceEndpointArgs, endpoint_placement
from gpucloud.components.instances_distribution import allocation_args
from gpucloud.components.network import GpuNetwork
from gpucloud.components.node_services import NodeServices, node_services_document
from gpucloud.components.notebook_user import notebook_user
from gpucloud.components.prometheus_workspace import PrometheusWorkspace
from gpucloud.components.s3_access import S3PrefixAccess
from gpucloud.components.security_group import GpuSecurityGroup, GpuSecurityGroupArgs
from gpucloud.components.shared_file_system import SharedFileSystem
from gpucloud.config.cold_start_estimate import grace_period_seconds
from gpucloud.config.storage import s3_mount_entries
from gpucloud.lookups import ResolvedGroup, ResolvedStack
from gpucloud.lookups.requirements import aws_instance_requirements
from gpucloud.naming import (
    GROUP_TAG,
    autoscaling_group_name,
    elb_name,
    endpoint_logs_bucket_name,
    job_log_group_name,
    target_group_name,
)


@dataclass(frozen=True)
class SharedResources:
    """What the environment builds before its groups, as each group uses it."""

    key_arn: pulumi.Input[str]
    vpc_id: pulumi.Input[str]
    network: GpuNetwork | None
    node_role: S3PrefixAccess
    artifacts: AgentArtifacts
    file_system: SharedFileSystem | None
    prometheus: PrometheusWorkspace | None
    services: NodeServices | None


@dataclass(frozen=True)
class ProjectGroup:
    """A group's instances and what the environment's `groups` output says of it."""

    instances: GpuInstanceGroup
    outputs: dict


def project_group(name: str, stack: ResolvedStack, group: ResolvedGroup, shared: SharedResources,
                  parent: pulumi.Resource) -> ProjectGroup:
    """The group's children of `parent`, each named `<name>-<group>-...`."""
    settings = group.config
    prefix = f"{name}-{settings.name}"
    child = pulumi.ResourceOptions(parent=parent)
    tags = {**stack.settings.tags, GROUP_TAG: settings.name}
    security_group = _security_group(prefix, stack, group, shared, tags, child)
    outputs: dict = {"securityGroupId": security_group.security_group_id}
    if shared.file_system:
        shared.file_system.admit_clients(settings.name, security_group.security_group_id)
    if settings.persistent_volume_gib:
        outputs["persistentVolumeId"] = _persistent_volume(prefix, stack, group, shared.key_arn, tags, child).volume_id
    # The program never buys a Capacity Block (an offering in the stack file is a failure that
    # stops `pulumi up`): `gpucloud capacity buy` does, once, and the group runs in the block held.
    block_id = group.capacity_block.id if group.capacity_block else None
    if block_id:
        outputs["capacityBlockId"] = block_id
    instances = GpuInstanceGroup(
        f"{prefix}-nodes",
        instance_group_args(stack, group, shared, security_group.security_group_id, block_id, tags),
        opts=pulumi.ResourceOptions(
            parent=parent,
            depends_on=[shared.node_role, shared.artifacts,
                        *(shared.network.egress_dependencies if shared.network else []),
                        *([shared.services] if shared.services else [])],
        ),
    )
    GpuAutoscaling(f"{prefix}-scaling", GpuAutoscalingArgs(
        group_name=instances.group_name, scaling=settings.scaling, idle_shutdown=settings.idle_shutdown, tags=tags,
    ), opts=child)
    if settings.services.jupyter and settings.services.jupyter.user_policy:
        outputs["notebookUserPolicyArn"] = notebook_user(
            f"{prefix}-notebook-user", stack, settings.name, shared.key_arn, tags, child).policy_arn
    if settings.endpoint:
        outputs["endpointUrl"] = _endpoint(prefix, stack, group, shared, security_group.security_group_id,
                                           instances.group_name, tags, child).url
    outputs.update(autoScalingGroupName=instances.group_name, autoScalingGroupArn=instances.group_arn,
                   instanceTypes=[facts.name for facts in group.instance_types])
    return ProjectGroup(instances=instances, outputs=outputs)


def _security_group(prefix: str, stack: ResolvedStack, group: ResolvedGroup, shared: SharedResources,
                    tags: dict[str, str], opts: pulumi.ResourceOptions) -> GpuSecurityGroup:
    config, settings = stack.settings.config, group.config
    access = config.access
    return GpuSecurityGroup(
        f"{prefix}-net",
        GpuSecurityGroupArgs(
            vpc_id=shared.vpc_id,
            description=f"gpu-cloud {config.project}/{settings.name}: GPU nodes",
            ssh_cidrs=access.ssh_cidrs,
            jupyter_cidrs=access.jupyter_cidrs,
            tensorboard_cidrs=access.tensorboard_cidrs,
            allow_within_group=settings.multi_node,
            lustre_servers_security_group_id=shared.file_system.security_group_id if shared.file_system else None,
            tags=tags,
        ),
        opts=opts,
    )


def _persistent_volume(prefix: str, stack: ResolvedStack, group: ResolvedGroup, key_arn: pulumi.Input[str],
                       tags: dict[str, str], opts: pulumi.ResourceOptions) -> EncryptedVolume:
    base = stack.settings.name_base
    return EncryptedVolume(
        f"{prefix}-persist",
        EncryptedVolumeArgs(
            availability_zone=group.availability_zone,
            size_gib=group.config.persistent_volume_gib,
            kms_key_arn=key_arn,
            attach_to=autoscaling_group_name(base, group.config.name),
            backup_selection=base,
            tags=tags,
        ),
        opts=opts,
    )


def _endpoint(prefix: str, stack: ResolvedStack, group: ResolvedGroup, shared: SharedResources,
              security_group_id: pulumi.Input[str], autoscaling_group: pulumi.Input[str], tags: dict[str, str],
              opts: pulumi.ResourceOptions) -> InferenceEndpoint:
    settings, base = group.config, stack.settings.name_base
    endpoint = settings.endpoint
    subnet_ids, routing = endpoint_placement(endpoint, shared.network, [subnet.id for subnet in group.subnets])
    return InferenceEndpoint(f"{prefix}-endpoint", InferenceEndpointArgs(
        endpoint=endpoint, load_balancer_name=elb_name(base, settings.name, "lb"),
        target_group_name=target_group_name(base, settings.name, endpoint.port), vpc_id=shared.vpc_id,
        subnet_ids=subnet_ids, routing=routing,
        node_security_group_id=security_group_id, autoscaling_group_name=autoscaling_group,
        logs_bucket_name=endpoint_logs_bucket_name(base, settings.name, stack.account_id),
        account_id=stack.account_id, region=stack.settings.region, partition=stack.partition,
        instance_warmup_seconds=grace_period(stack, group), tags=tags), opts=opts)


def grace_period(stack: ResolvedStack, group: ResolvedGroup) -> int:
    """The stack file's grace period, else the default that follows the group's cold-start estimate."""
    instance_store = all(facts.instance_store_disks for facts in group.instance_types)
    return grace_period_seconds(stack.settings.config, group.config, instance_store)


def instance_group_args(stack: ResolvedStack, group: ResolvedGroup, shared: SharedResources,
                        security_group_id: pulumi.Input[str], block_id: str | None,
                        tags: dict[str, str]) -> GpuInstanceGroupArgs:
    """The group's nodes as the stack's settings and the shared resources describe them."""
    config = stack.settings.config
    settings = group.config
    base = stack.settings.name_base
    asg_name = autoscaling_group_name(base, settings.name)
    capacity = settings.capacity
    data = config.data
    return GpuInstanceGroupArgs(
        group_name=asg_name,
        instance_types=group.instance_types,
        subnet_ids=(
            [shared.network.private_subnet_ids[zone] for zone in group.zones]
            if shared.network
            else [subnet.id for subnet in group.subnets]
        ),
        ami_id=group.ami.id,
        root_device_name=group.ami.root_device_name,
        instance_profile_arn=shared.node_role.instance_profile_arn,
        kms_key_arn=shared.key_arn,
        security_group_id=security_group_id,
        min_size=settings.min_size,
        max_size=settings.max_size,
        desired_capacity=settings.initial_capacity,
        on_demand_base_capacity=settings.on_demand_base_capacity,
        spot_percent=settings.spot_percent,
        multi_node=settings.multi_node,
        root_volume_gib=settings.root_volume_gib,
        data_volume_gib=settings.data_volume_gib,
        health_check_grace_period_seconds=grace_period(stack, group),
        project=config.project,
        boot_phase_log_group=job_log_group_name(base),
        region=stack.settings.region,
        max_temperature_c=config.monitoring.temperature_threshold_c,
        persistent_volume_attach_to=asg_name if settings.persistent_volume_gib else None,
        checkpoint_bucket=data.bucket if data and data.write_prefixes else None,
        checkpoint_prefix=data.write_prefixes[0] if data and data.write_prefixes else None,
        checkpoint_command=settings.checkpoint.command,
        checkpoint_directory=settings.checkpoint.directory,
        checkpoint_timeout_seconds=settings.checkpoint.timeout_seconds,
        agent_bucket=shared.artifacts.args.bucket_name,
        agent_key=shared.artifacts.args.bundle.key,
        agent_sha256=shared.artifacts.args.bundle.sha256,
        health_interval_seconds=settings.health.interval_seconds,
        throttle_minutes=settings.health.throttle_minutes,
        max_replacements_per_hour=settings.health.max_replacements_per_hour,
        replace_faulty_nodes=settings.health.replace,
        prometheus_remote_write_url=shared.prometheus.remote_write_url if shared.prometheus else None,
        prometheus_scrape_interval_seconds=config.monitoring.prometheus.scrape_interval_seconds,
        capacity_reservation_ids=capacity.reservations.ids if capacity.reservations else (),
        capacity_reservation_group_arns=capacity.reservations.resource_group_arns if capacity.reservations else (),
        capacity_reservation_preference=capacity.reservations.preference if capacity.reservations else None,
        **allocation_args(settings),
        capacity_block_id=block_id,
        capacity_block_window=group.block_window,
        warm_pool=settings.warm_pool.model_dump() if settings.warm_pool else None,
        services=node_services_document(config, settings, base, stack.settings.region),
        shared_file_system=shared.file_system.mount if shared.file_system else None,
        s3_mounts=s3_mount_entries(config.storage, config.data),
        s3_mount_install=config.storage.s3_mount.install if config.storage.s3_mount else "ami",
        instance_requirements=(
            aws_instance_requirements(settings.instance_requirements, []) if settings.instance_requirements else None
        ),
        tags=tags,
    )
