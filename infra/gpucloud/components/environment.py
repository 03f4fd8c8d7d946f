"""ProjectEnvironment: one project's whole GPU environment, built from the resolved stack config.

It reads as its steps: the resources every group shares (key, network, node role, file system,
agent bundle), the observability (Prometheus, alarms, Grafana), the node services, each group
(`environment_group`), the jobs, the backup and the budget. Each child is built in a method of its
own from what it needs, in the order they depend on each other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from gpucloud.components.agent_artifacts import AgentArtifacts, AgentArtifactsArgs
from gpucloud.components.cost_budget import CostBudget, CostBudgetArgs
from gpucloud.components.encryption_key import EncryptionKey, EncryptionKeyArgs
from gpucloud.components.environment_group import SharedResources, project_group
from gpucloud.components.gpu_group import GpuInstanceGroup
from gpucloud.components.grafana_workspace import GrafanaWorkspace, GrafanaWorkspaceArgs
from gpucloud.components.job_runner import job_runner
from gpucloud.components.job_supervisor import job_supervisor
from gpucloud.components.monitoring import GpuMonitoring, GpuMonitoringArgs
from gpucloud.components.network import GpuNetwork, GpuNetworkArgs
from gpucloud.components.node_services import node_services
from gpucloud.components.prometheus_workspace import PrometheusWorkspace, PrometheusWorkspaceArgs
from gpucloud.components.s3_access import S3PrefixAccess, S3PrefixAccessArgs
from gpucloud.components.shared_file_system import project_file_system
from gpucloud.components.volume_backup import VolumeBackup, VolumeBackupArgs
from gpucloud.config.node_role import node_services_grants
from gpucloud.documents import mountpoint_release_buckets
from gpucloud.lookups import ResolvedStack
from gpucloud.naming import (
    AUTOSCALING_SERVICE,
    access_logs_bucket_name,
    artifacts_bucket_name,
    autoscaling_group_name,
    backup_role_name,
    flow_log_group_prefix,
    instance_role_name,
    job_log_group_name,
    job_supervisor_role_name,
    prometheus_log_group_prefix,
)
from gpucloud.userdata.bundle import build_agent_bundle


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


def _backs_up(stack: ResolvedStack) -> bool:
    """Whether any group keeps a persistent volume, which the backup plan protects."""
    return any(group.persistent_volume_gib for group in stack.settings.config.groups)


def _group_names(stack: ResolvedStack) -> list[str]:
    return [autoscaling_group_name(stack.settings.name_base, group.config.name) for group in stack.groups]


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
        self.service_linked_role = self._service_linked_role(name, stack)
        self.key = self._key(name, stack, [self.service_linked_role] if self.service_linked_role else [], child)
        self.network = self._network(name, stack, self.key.key_arn, child)
        self.vpc_id: pulumi.Input[str] | None = self.network.vpc_id if self.network else stack.vpc_id
        self.access = self._node_role(name, stack, self.key.key_arn, child)
        self.shared_file_system = project_file_system(
            name, stack, self.vpc_id, self.network.private_subnet_ids if self.network else None, self.key.key_arn, child)
        self.artifacts = self._artifacts(name, stack, self.key.key_arn, self.access.role_arn, child)
        self.prometheus = self._prometheus(name, stack, self.key.key_arn, self.access.role_name, args.prometheus_rules,
                                           child)
        self.monitoring = self._monitoring(name, stack, self.key.key_arn, self.prometheus, child)
        self.grafana = self._grafana(name, stack, self.prometheus, args.grafana_dashboards, child)
        self.services = node_services(name, stack, self.access.role_name, self.key.key_arn, child)
        shared = SharedResources(
            key_arn=self.key.key_arn, vpc_id=self.vpc_id, network=self.network, node_role=self.access,
            artifacts=self.artifacts, file_system=self.shared_file_system, prometheus=self.prometheus,
            services=self.services)
        built = {group.config.name: project_group(name, stack, group, shared, self) for group in stack.groups}
        self.instance_groups: dict[str, GpuInstanceGroup] = {group: part.instances for group, part in built.items()}
        self.jobs = job_runner(name, stack, self.key.key_arn, child)
        self.job_supervisor = job_supervisor(name, stack, self.key.key_arn, self.monitoring.topic_arn, child)
        self.backup = self._backup(name, stack, self.key.key_arn, child) if _backs_up(stack) else None
        self.budget = self._budget(name, stack, self.monitoring.topic_arn, child)
        self._register({group: part.outputs for group, part in built.items()})

    def _service_linked_role(self, name: str, stack: ResolvedStack) -> aws.iam.ServiceLinkedRole | None:
        """Auto Scaling's service-linked role, where the stack creates it (kept on destroy)."""
        if not stack.create_service_linked_role:
            return None
        return aws.iam.ServiceLinkedRole(
            f"{name}-autoscaling-service-role",
            aws_service_name=AUTOSCALING_SERVICE,
            description="Auto Scaling's service-linked role (created by gpu-cloud; shared by the account)",
            tags=stack.settings.tags,
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True),
        )

    @staticmethod
    def _key(name: str, stack: ResolvedStack, waits_for: Sequence[pulumi.Resource],
             opts: pulumi.ResourceOptions) -> EncryptionKey:
        config, base = stack.settings.config, stack.settings.name_base
        prometheus = config.monitoring.prometheus
        log_groups = [job_log_group_name(base), *([flow_log_group_prefix(base)] if stack.network_zones else [])]
        if prometheus.enabled and not prometheus.workspace_id:
            log_groups.append(prometheus_log_group_prefix(base))
        grants = node_services_grants(config, stack.partition, stack.settings.region, stack.account_id, base)
        return EncryptionKey(f"{name}-key", EncryptionKeyArgs(
            project=base,
            account_id=stack.account_id,
            region=stack.settings.region,
            partition=stack.partition,
            # Only roles this stack creates: a role made later under a name the policy lists could
            # decrypt with the key.
            user_role_names=[instance_role_name(base), *([backup_role_name(base)] if _backs_up(stack) else [])],
            tags=stack.settings.tags,
            log_groups=log_groups,
            prometheus=prometheus.enabled,
            file_system=bool(config.storage.lustre and config.storage.lustre.deployment_type == "PERSISTENT_2"),
            parameter_arns=grants["token_parameter_arns"],
            topic_publisher_role_names=[job_supervisor_role_name(base)],
            waits_for=list(waits_for),
        ), opts=opts)

    @staticmethod
    def _network(name: str, stack: ResolvedStack, kms_key_arn: pulumi.Input[str],
                 opts: pulumi.ResourceOptions) -> GpuNetwork | None:
        """The VPC the stack creates (with `network.zones`), or None in subnets of your own."""
        if not stack.network_zones:
            return None
        config, base = stack.settings.config, stack.settings.name_base
        network = config.network
        downloads_mount_s3 = bool(config.storage.s3_mount and config.storage.s3_mount.install == "download")
        return GpuNetwork(f"{name}-network", GpuNetworkArgs(
            name_base=base,
            zones=stack.network_zones,
            region=stack.settings.region,
            account_id=stack.account_id,
            kms_key_arn=kms_key_arn,
            cidr=network.cidr,
            nat_gateways=network.nat_gateways,
            egress=network.egress,
            interface_endpoints=network.interface_endpoints,
            flow_logs_retention_days=network.flow_logs_retention_days,
            s3_buckets=[artifacts_bucket_name(base, stack.account_id), *([config.data.bucket] if config.data else [])],
            package_buckets=mountpoint_release_buckets(stack.partition, stack.settings.region) if downloads_mount_s3 else [],
            partition=stack.partition,
            public_subnets_in_every_zone=any(g.endpoint and g.endpoint.internet_facing for g in config.groups),
            tags=stack.settings.tags,
        ), opts=opts)

    @staticmethod
    def _node_role(name: str, stack: ResolvedStack, kms_key_arn: pulumi.Input[str],
                   opts: pulumi.ResourceOptions) -> S3PrefixAccess:
        """The role every node runs as, with the data prefixes it may read and write."""
        config = stack.settings.config
        data = config.data
        return S3PrefixAccess(f"{name}-access", S3PrefixAccessArgs(
            project=stack.settings.name_base,
            account_id=stack.account_id,
            region=stack.settings.region,
            partition=stack.partition,
            kms_key_arn=kms_key_arn,
            bucket=data.bucket if data else None,
            read_prefixes=data.read_prefixes if data else (),
            write_prefixes=data.write_prefixes if data else (),
            session_manager=config.access.ssm,
            group_names=_group_names(stack),
            tags=stack.settings.tags,
        ), opts=opts)

    @staticmethod
    def _artifacts(name: str, stack: ResolvedStack, kms_key_arn: pulumi.Input[str], reader_role_arn: pulumi.Input[str],
                   opts: pulumi.ResourceOptions) -> AgentArtifacts:
        """The bucket with the node agent bundle, which only the node role reads."""
        base = stack.settings.name_base
        return AgentArtifacts(f"{name}-artifacts", AgentArtifactsArgs(
            bucket_name=artifacts_bucket_name(base, stack.account_id),
            kms_key_arn=kms_key_arn,
            reader_role_arns=[reader_role_arn],
            bundle=build_agent_bundle(),
            log_bucket_name=access_logs_bucket_name(base, stack.account_id),
            account_id=stack.account_id,
            partition=stack.partition,
            tags=stack.settings.tags,
        ), opts=opts)

    @staticmethod
    def _prometheus(name: str, stack: ResolvedStack, kms_key_arn: pulumi.Input[str], node_role_name: pulumi.Input[str],
                    rules: str | None, opts: pulumi.ResourceOptions) -> PrometheusWorkspace | None:
        """With `monitoring.prometheus`: the workspace the nodes write to, with the stack's rules."""
        prometheus = stack.settings.config.monitoring.prometheus
        if not prometheus.enabled:
            return None
        existing = stack.prometheus_workspace
        return PrometheusWorkspace(f"{name}-prometheus", PrometheusWorkspaceArgs(
            name_base=stack.settings.name_base,
            region=stack.settings.region,
            kms_key_arn=kms_key_arn,
            node_role_name=node_role_name,
            rules=rules,
            existing_workspace_id=existing.id if existing else None,
            existing_workspace_arn=existing.arn if existing else None,
            log_retention_days=prometheus.log_retention_days,
            tags=stack.settings.tags,
        ), opts=opts)

    @staticmethod
    def _monitoring(name: str, stack: ResolvedStack, kms_key_arn: pulumi.Input[str],
                    prometheus: PrometheusWorkspace | None, opts: pulumi.ResourceOptions) -> GpuMonitoring:
        """The alerts topic and the alarms on every group."""
        config = stack.settings.config
        monitoring = config.monitoring
        return GpuMonitoring(f"{name}-monitoring", GpuMonitoringArgs(
            project=stack.settings.name_base,
            account_id=stack.account_id,
            region=stack.settings.region,
            owner_email=config.owner,
            kms_key_arn=kms_key_arn,
            group_names=_group_names(stack),
            temperature_threshold_c=monitoring.temperature_threshold_c,
            memory_saturation_percent=monitoring.memory_saturation_percent,
            idle_utilization_percent=monitoring.idle_utilization_percent,
            idle_minutes=monitoring.idle_minutes,
            dashboard=monitoring.dashboard,
            prometheus_workspace_id=prometheus.workspace_id if prometheus else None,
            prometheus_workspace_arn=prometheus.workspace_arn if prometheus else None,
            manage_alert_manager=monitoring.prometheus.manage_alert_manager,
            tags=stack.settings.tags,
        ), opts=opts)

    @staticmethod
    def _grafana(name: str, stack: ResolvedStack, prometheus: PrometheusWorkspace | None,
                 dashboards: Mapping[str, str], opts: pulumi.ResourceOptions) -> GrafanaWorkspace | None:
        """With `monitoring.grafana`: the workspace that shows the Prometheus workspace's dashboards."""
        grafana = stack.settings.config.monitoring.grafana
        if not grafana.enabled:
            return None
        assert prometheus is not None, "the config refuses grafana without prometheus"
        return GrafanaWorkspace(f"{name}-grafana", GrafanaWorkspaceArgs(
            name_base=stack.settings.name_base,
            account_id=stack.account_id,
            region=stack.settings.region,
            prometheus_workspace_arn=prometheus.workspace_arn,
            prometheus_endpoint=prometheus.query_url,
            dashboards=dashboards,
            authentication=grafana.authentication,
            saml=grafana.saml.model_dump() if grafana.saml else None,
            partition=stack.partition,
            tags=stack.settings.tags,
        ), opts=opts)

    @staticmethod
    def _backup(name: str, stack: ResolvedStack, kms_key_arn: pulumi.Input[str],
                opts: pulumi.ResourceOptions) -> VolumeBackup:
        """The backup plan over the groups' persistent volumes."""
        return VolumeBackup(f"{name}-backup", VolumeBackupArgs(
            project=stack.settings.name_base,
            kms_key_arn=kms_key_arn,
            retention_days=stack.settings.config.backup.retention_days,
            partition=stack.partition,
            tags=stack.settings.tags,
        ), opts=opts)

    @staticmethod
    def _budget(name: str, stack: ResolvedStack, topic_arn: pulumi.Input[str],
                opts: pulumi.ResourceOptions) -> CostBudget:
        config = stack.settings.config
        return CostBudget(f"{name}-budget", CostBudgetArgs(
            project=config.project,
            monthly_usd=config.budget.monthly_usd,
            owner_email=config.owner,
            topic_arn=topic_arn,
            tags=stack.settings.tags,
            name_base=stack.settings.name_base,
        ), opts=opts)

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
