"""ProjectEnvironment: one project's whole GPU environment, built from the resolved stack config."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from gpucloud.components import _environment_parts as parts
from gpucloud.components.agent_artifacts import AgentArtifacts
from gpucloud.components.autoscaling import GpuAutoscaling, GpuAutoscalingArgs
from gpucloud.components.cost_budget import CostBudget
from gpucloud.components.encrypted_volume import EncryptedVolume, EncryptedVolumeArgs
from gpucloud.components.encryption_key import EncryptionKey
from gpucloud.components.gpu_group import GpuInstanceGroup, GpuInstanceGroupArgs
from gpucloud.components.grafana_workspace import GrafanaWorkspace
from gpucloud.components.inference_endpoint import InferenceEndpoint, InferenceEndpointArgs, endpoint_placement
from gpucloud.components.job_runner import job_runner
from gpucloud.components.job_supervisor import job_supervisor
from gpucloud.components.monitoring import GpuMonitoring
from gpucloud.components.network import GpuNetwork
from gpucloud.components.notebook_user import notebook_user
from gpucloud.components.node_services import node_services, node_services_document
from gpucloud.components.prometheus_workspace import PrometheusWorkspace
from gpucloud.components.instances_distribution import allocation_args
from gpucloud.components.s3_access import S3PrefixAccess
from gpucloud.components.security_group import GpuSecurityGroup, GpuSecurityGroupArgs
from gpucloud.components.shared_file_system import project_file_system
from gpucloud.components.volume_backup import VolumeBackup
from gpucloud.config.cold_start_estimate import grace_period_seconds
from gpucloud.config.storage import s3_mount_entries
from gpucloud.lookups import ResolvedGroup, ResolvedStack
from gpucloud.lookups.requirements import aws_instance_requirements
from gpucloud.naming import (
    AUTOSCALING_SERVICE,
    GROUP_TAG,
    autoscaling_group_name,
    elb_name,
    endpoint_logs_bucket_name,
    target_group_name,
)


@dataclass(frozen=True)
class ProjectEnvironmentArgs:
    stack: ResolvedStack
    prometheus_rules: str | None = None
    """With `monitoring.prometheus` on: the rule file for the workspace (YAML), as
    `gpucloud.observability.rule_file_text` builds it for the stack."""
    grafana_dashboards: Mapping[str, str] = field(default_factory=dict)
    """With `monitoring.grafana` on: dashboard file name -> Grafana JSON, as
    `gpucloud.observability.dashboards` builds them for the stack."""


def _check_args(args: ProjectEnvironmentArgs) -> None:
    """What the monitoring settings need from the caller, checked before any resource is declared."""
    monitoring = args.stack.settings.config.monitoring
    if monitoring.prometheus.enabled and args.prometheus_rules is None:
        raise ValueError("monitoring.prometheus is on: pass prometheus_rules (gpucloud.observability.rule_file)")
    if monitoring.grafana.enabled and not args.grafana_dashboards:
        raise ValueError("monitoring.grafana is on: pass grafana_dashboards (gpucloud.observability.dashboards)")


class ProjectEnvironment(pulumi.ComponentResource):
    """Key, node role, the artifacts bucket with the node agent bundle, with `monitoring.prometheus`
    the Prometheus workspace (and with `.grafana` the Grafana workspace), the alerts topic and
    alarms, and per group: security group, persistent volume, instances, autoscaling.

    Where the account lacks the Auto Scaling service-linked role (looked up at every run) and the
    config does not forbid it, the role is created first (and kept on destroy: the account's
    other groups use it too); where it exists it is never declared."""

    kms_key_arn: pulumi.Output[str]
    """The project's customer-managed key."""
    instance_role_arn: pulumi.Output[str]
    """The role every node of the project runs as."""
    alerts_topic_arn: pulumi.Output[str]
    """SNS topic for GPU alarms and budget alerts."""
    artifacts_bucket_name: pulumi.Output[str]
    """The bucket holding the node agent bundle."""
    agent_bundle_key: pulumi.Output[str]
    """The bundle's content-addressed key, which every launch template pins with its SHA-256."""
    groups: pulumi.Output[dict]
    """Per group: Auto Scaling group name and ARN, security group id, persistent volume id."""

    def __init__(self, name: str, args: ProjectEnvironmentArgs, opts: pulumi.ResourceOptions | None = None):
        _check_args(args)
        super().__init__("gpu-cloud:index:ProjectEnvironment", name, None, opts)
        stack = args.stack
        child = pulumi.ResourceOptions(parent=self)
        self._shared_resources(name, stack, child)
        self._observability(name, args, child)
        self.services = node_services(name, stack, self.access.role_name, self.key.key_arn, child)
        self.instance_groups: dict[str, GpuInstanceGroup] = {}
        group_outputs = {group.config.name: self._group(name, stack, group, child) for group in stack.groups}
        self.jobs = job_runner(name, stack, self.key.key_arn, child)
        self.job_supervisor = job_supervisor(name, stack, self.key.key_arn, self.monitoring.topic_arn, child)
        self.backup = None
        if parts.backs_up(stack):
            self.backup = VolumeBackup(f"{name}-backup", parts.backup_args(stack, self.key.key_arn), opts=child)
        self.budget = CostBudget(f"{name}-budget", parts.budget_args(stack, self.monitoring.topic_arn), opts=child)
        self._register(group_outputs)

    def _shared_resources(self, name: str, stack: ResolvedStack, child: pulumi.ResourceOptions) -> None:
        """What every group uses: the service-linked role where it is created, the key, the network
        where the stack makes its own, the node role, the shared file system and the agent's bucket."""
        self.service_linked_role = None
        if stack.create_service_linked_role:
            self.service_linked_role = aws.iam.ServiceLinkedRole(
                f"{name}-autoscaling-service-role",
                aws_service_name=AUTOSCALING_SERVICE,
                description="Auto Scaling's service-linked role (created by gpu-cloud; shared by the account)",
                tags=stack.settings.tags,
                opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True),
            )
        waits_for = [self.service_linked_role] if self.service_linked_role else []
        self.key = EncryptionKey(f"{name}-key", parts.key_args(stack, waits_for), opts=child)
        self.network = None
        self.vpc_id: pulumi.Input[str] | None = stack.vpc_id
        if stack.network_zones:
            self.network = GpuNetwork(f"{name}-network", parts.network_args(stack, self.key.key_arn), opts=child)
            self.vpc_id = self.network.vpc_id
        self.access = S3PrefixAccess(f"{name}-access", parts.access_args(stack, self.key.key_arn), opts=child)
        self.shared_file_system = project_file_system(
            name, stack, self.vpc_id, self.network.private_subnet_ids if self.network else None, self.key.key_arn, child)
        self.artifacts = AgentArtifacts(
            f"{name}-artifacts", parts.artifacts_args(stack, self.key.key_arn, self.access.role_arn), opts=child)

    def _observability(self, name: str, args: ProjectEnvironmentArgs, child: pulumi.ResourceOptions) -> None:
        """The Prometheus workspace (with `monitoring.prometheus`), the alarms and their topic, and
        the Grafana workspace (with `monitoring.grafana`)."""
        stack = args.stack
        monitoring = stack.settings.config.monitoring
        self.prometheus = None
        if monitoring.prometheus.enabled:
            self.prometheus = PrometheusWorkspace(
                f"{name}-prometheus",
                parts.prometheus_args(stack, self.key.key_arn, self.access.role_name, args.prometheus_rules),
                opts=child,
            )
        self.monitoring = GpuMonitoring(
            f"{name}-monitoring", parts.monitoring_args(stack, self.key.key_arn, self.prometheus), opts=child)
        self.grafana = None
        if monitoring.grafana.enabled:
            self.grafana = GrafanaWorkspace(
                f"{name}-grafana", parts.grafana_args(stack, self.prometheus, args.grafana_dashboards), opts=child)

    def _register(self, group_outputs: dict[str, dict]) -> None:
        self.kms_key_arn = self.key.key_arn
        self.instance_role_arn = self.access.role_arn
        self.alerts_topic_arn = self.monitoring.topic_arn
        self.artifacts_bucket_name = self.artifacts.bucket_name
        self.agent_bundle_key = self.artifacts.bundle_key
        self.groups = pulumi.Output.from_input(group_outputs)
        self.register_outputs(
            {
                "vpcId": self.vpc_id,
                "kmsKeyArn": self.kms_key_arn,
                "instanceRoleArn": self.instance_role_arn,
                "artifactsBucketName": self.artifacts_bucket_name,
                "agentBundleKey": self.agent_bundle_key,
                "alertsTopicArn": self.alerts_topic_arn,
                "prometheusWorkspaceId": self.prometheus.workspace_id if self.prometheus else None,
                "grafanaEndpoint": self.grafana.endpoint if self.grafana else None,
                "budgetName": self.budget.budget_name,
                "jobDocumentName": self.jobs.document_name,
                "jobLogGroupName": self.jobs.log_group_name,
                "jobRunnerPolicyArn": self.jobs.team_policy_arn,
                "jobSupervisorArn": self.job_supervisor.state_machine_arn,
                "groups": self.groups,
            }
        )

    def _group(self, name: str, stack: ResolvedStack, group: ResolvedGroup, child: pulumi.ResourceOptions) -> dict:
        config = stack.settings.config
        settings = group.config
        prefix = f"{name}-{settings.name}"
        base = stack.settings.name_base
        asg_name = autoscaling_group_name(base, settings.name)
        tags = {**stack.settings.tags, GROUP_TAG: settings.name}
        access = config.access
        security_group = GpuSecurityGroup(
            f"{prefix}-net",
            GpuSecurityGroupArgs(
                vpc_id=self.vpc_id,
                description=f"gpu-cloud {config.project}/{settings.name}: GPU nodes",
                ssh_cidrs=access.ssh_cidrs,
                jupyter_cidrs=access.jupyter_cidrs,
                tensorboard_cidrs=access.tensorboard_cidrs,
                allow_within_group=settings.multi_node,
                lustre_servers_security_group_id=(
                    self.shared_file_system.security_group_id if self.shared_file_system else None),
                tags=tags,
            ),
            opts=child,
        )
        outputs: dict = {"securityGroupId": security_group.security_group_id}
        if self.shared_file_system:
            self.shared_file_system.admit_clients(settings.name, security_group.security_group_id)
        if settings.persistent_volume_gib:
            volume = EncryptedVolume(
                f"{prefix}-persist",
                EncryptedVolumeArgs(
                    availability_zone=group.availability_zone,
                    size_gib=settings.persistent_volume_gib,
                    kms_key_arn=self.key.key_arn,
                    attach_to=asg_name,
                    backup_selection=base,
                    tags=tags,
                ),
                opts=child,
            )
            outputs["persistentVolumeId"] = volume.volume_id
        # The program never buys a Capacity Block (an offering in the stack file is a failure that
        # stops `pulumi up`): `gpucloud capacity buy` does, once, and the group runs in the block held.
        block_id = group.capacity_block.id if group.capacity_block else None
        if block_id:
            outputs["capacityBlockId"] = block_id
        instances = GpuInstanceGroup(
            f"{prefix}-nodes",
            self._instance_group_args(stack, group, security_group.security_group_id, block_id, tags),
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[self.access, self.artifacts, *(self.network.egress_dependencies if self.network else []),
                            *([self.services] if self.services else [])],
            ),
        )
        self.instance_groups[settings.name] = instances
        GpuAutoscaling(
            f"{prefix}-scaling",
            GpuAutoscalingArgs(
                group_name=instances.group_name,
                scaling=settings.scaling,
                idle_shutdown=settings.idle_shutdown,
                tags=tags,
            ),
            opts=child,
        )
        if settings.services.jupyter and settings.services.jupyter.user_policy:
            outputs["notebookUserPolicyArn"] = notebook_user(
                f"{prefix}-notebook-user", stack, settings.name, self.key.key_arn, tags, child).policy_arn
        if settings.endpoint:
            subnet_ids, routing = endpoint_placement(settings.endpoint, self.network, [s.id for s in group.subnets])
            outputs["endpointUrl"] = InferenceEndpoint(f"{prefix}-endpoint", InferenceEndpointArgs(
                endpoint=settings.endpoint, load_balancer_name=elb_name(base, settings.name, "lb"),
                target_group_name=target_group_name(base, settings.name, settings.endpoint.port), vpc_id=self.vpc_id,
                subnet_ids=subnet_ids, routing=routing,
                node_security_group_id=security_group.security_group_id, autoscaling_group_name=instances.group_name,
                logs_bucket_name=endpoint_logs_bucket_name(base, settings.name, stack.account_id),
                account_id=stack.account_id, region=stack.settings.region, partition=stack.partition,
                instance_warmup_seconds=_grace_period(stack, group), tags=tags), opts=child).url
        outputs.update(autoScalingGroupName=instances.group_name, autoScalingGroupArn=instances.group_arn,
                       instanceTypes=[facts.name for facts in group.instance_types])
        return outputs

    def _instance_group_args(self, stack: ResolvedStack, group: ResolvedGroup, security_group_id: pulumi.Input[str],
                             block_id: str | None, tags: dict[str, str]) -> GpuInstanceGroupArgs:
        """The group's nodes as the stack's settings and the shared resources describe them."""
        config = stack.settings.config
        settings = group.config
        base = stack.settings.name_base
        asg_name = autoscaling_group_name(base, settings.name)
        capacity = settings.capacity
        return GpuInstanceGroupArgs(
            group_name=asg_name,
            instance_types=group.instance_types,
            subnet_ids=(
                [self.network.private_subnet_ids[zone] for zone in group.zones]
                if self.network
                else [subnet.id for subnet in group.subnets]
            ),
            ami_id=group.ami.id,
            root_device_name=group.ami.root_device_name,
            instance_profile_arn=self.access.instance_profile_arn,
            kms_key_arn=self.key.key_arn,
            security_group_id=security_group_id,
            min_size=settings.min_size,
            max_size=settings.max_size,
            desired_capacity=settings.initial_capacity,
            on_demand_base_capacity=settings.on_demand_base_capacity,
            spot_percent=settings.spot_percent,
            multi_node=settings.multi_node,
            root_volume_gib=settings.root_volume_gib,
            data_volume_gib=settings.data_volume_gib,
            health_check_grace_period_seconds=_grace_period(stack, group),
            project=config.project,
            region=stack.settings.region,
            max_temperature_c=config.monitoring.temperature_threshold_c,
            persistent_volume_attach_to=asg_name if settings.persistent_volume_gib else None,
            checkpoint_bucket=config.data.bucket if config.data and config.data.write_prefixes else None,
            checkpoint_prefix=config.data.write_prefixes[0] if config.data and config.data.write_prefixes else None,
            checkpoint_command=settings.checkpoint.command,
            checkpoint_directory=settings.checkpoint.directory,
            checkpoint_timeout_seconds=settings.checkpoint.timeout_seconds,
            agent_bucket=self.artifacts.args.bucket_name,
            agent_key=self.artifacts.args.bundle.key,
            agent_sha256=self.artifacts.args.bundle.sha256,
            health_interval_seconds=settings.health.interval_seconds,
            throttle_minutes=settings.health.throttle_minutes,
            max_replacements_per_hour=settings.health.max_replacements_per_hour,
            replace_faulty_nodes=settings.health.replace,
            prometheus_remote_write_url=self.prometheus.remote_write_url if self.prometheus else None,
            prometheus_scrape_interval_seconds=config.monitoring.prometheus.scrape_interval_seconds,
            capacity_reservation_ids=capacity.reservations.ids if capacity.reservations else (),
            capacity_reservation_group_arns=capacity.reservations.resource_group_arns if capacity.reservations else (),
            capacity_reservation_preference=capacity.reservations.preference if capacity.reservations else None,
            **allocation_args(settings),
            capacity_block_id=block_id,
            capacity_block_window=group.block_window,
            warm_pool=settings.warm_pool.model_dump() if settings.warm_pool else None,
            services=node_services_document(config, settings, base, stack.settings.region),
            shared_file_system=self.shared_file_system.mount if self.shared_file_system else None,
            s3_mounts=s3_mount_entries(config.storage, config.data),
            s3_mount_install=config.storage.s3_mount.install if config.storage.s3_mount else "ami",
            instance_requirements=(
                aws_instance_requirements(settings.instance_requirements, []) if settings.instance_requirements else None
            ),
            tags=tags,
        )


def _grace_period(stack: ResolvedStack, group: ResolvedGroup) -> int:
    """The stack file's grace period, else the default that follows the group's cold-start estimate."""
    instance_store = all(facts.instance_store_disks for facts in group.instance_types)
    return grace_period_seconds(stack.settings.config, group.config, instance_store)
