"""ProjectEnvironment's pure pieces: the args of each child component, from the resolved stack.

Plain values from the resolved stack and the outputs of the children made before, so
`environment` only orders the children and each builder reads as the settings it passes on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulumi

from gpucloud.components.agent_artifacts import AgentArtifactsArgs
from gpucloud.components.cost_budget import CostBudgetArgs
from gpucloud.components.encryption_key import EncryptionKeyArgs
from gpucloud.components.grafana_workspace import GrafanaWorkspaceArgs
from gpucloud.components.monitoring import GpuMonitoringArgs
from gpucloud.components.network import GpuNetworkArgs
from gpucloud.components.prometheus_workspace import PrometheusWorkspace, PrometheusWorkspaceArgs
from gpucloud.components.s3_access import S3PrefixAccessArgs
from gpucloud.components.volume_backup import VolumeBackupArgs
from gpucloud.config.node_role import node_services_grants
from gpucloud.documents import mountpoint_release_buckets
from gpucloud.lookups import ResolvedStack
from gpucloud.naming import (
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


def backs_up(stack: ResolvedStack) -> bool:
    """Whether any group keeps a persistent volume, which the backup plan protects."""
    return any(group.persistent_volume_gib for group in stack.settings.config.groups)


def group_names(stack: ResolvedStack) -> list[str]:
    return [autoscaling_group_name(stack.settings.name_base, group.config.name) for group in stack.groups]


def key_args(stack: ResolvedStack, waits_for: Sequence[pulumi.Resource]) -> EncryptionKeyArgs:
    config, base = stack.settings.config, stack.settings.name_base
    prometheus = config.monitoring.prometheus
    log_groups = [job_log_group_name(base), *([flow_log_group_prefix(base)] if stack.network_zones else [])]
    if prometheus.enabled and not prometheus.workspace_id:
        log_groups.append(prometheus_log_group_prefix(base))
    return EncryptionKeyArgs(
        project=base,
        account_id=stack.account_id,
        region=stack.settings.region,
        partition=stack.partition,
        # Only roles this stack creates: a role made later under a name the policy lists could
        # decrypt with the key.
        user_role_names=[instance_role_name(base), *([backup_role_name(base)] if backs_up(stack) else [])],
        tags=stack.settings.tags,
        log_groups=log_groups,
        prometheus=prometheus.enabled,
        file_system=bool(config.storage.lustre and config.storage.lustre.deployment_type == "PERSISTENT_2"),
        parameter_arns=node_services_grants(config, stack.partition, stack.settings.region, stack.account_id,
                                            base)["token_parameter_arns"],
        topic_publisher_role_names=[job_supervisor_role_name(base)],
        waits_for=list(waits_for),
    )


def network_args(stack: ResolvedStack, kms_key_arn: pulumi.Input[str]) -> GpuNetworkArgs:
    config, base = stack.settings.config, stack.settings.name_base
    network = config.network
    downloads_mount_s3 = bool(config.storage.s3_mount and config.storage.s3_mount.install == "download")
    return GpuNetworkArgs(
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
    )


def access_args(stack: ResolvedStack, kms_key_arn: pulumi.Input[str]) -> S3PrefixAccessArgs:
    config = stack.settings.config
    data = config.data
    return S3PrefixAccessArgs(
        project=stack.settings.name_base,
        account_id=stack.account_id,
        region=stack.settings.region,
        partition=stack.partition,
        kms_key_arn=kms_key_arn,
        bucket=data.bucket if data else None,
        read_prefixes=data.read_prefixes if data else (),
        write_prefixes=data.write_prefixes if data else (),
        session_manager=config.access.ssm,
        group_names=group_names(stack),
        tags=stack.settings.tags,
    )


def artifacts_args(stack: ResolvedStack, kms_key_arn: pulumi.Input[str],
                   reader_role_arn: pulumi.Input[str]) -> AgentArtifactsArgs:
    base = stack.settings.name_base
    return AgentArtifactsArgs(
        bucket_name=artifacts_bucket_name(base, stack.account_id),
        kms_key_arn=kms_key_arn,
        reader_role_arns=[reader_role_arn],
        bundle=build_agent_bundle(),
        log_bucket_name=access_logs_bucket_name(base, stack.account_id),
        account_id=stack.account_id,
        partition=stack.partition,
        tags=stack.settings.tags,
    )


def prometheus_args(stack: ResolvedStack, kms_key_arn: pulumi.Input[str], node_role_name: pulumi.Input[str],
                    rules: str) -> PrometheusWorkspaceArgs:
    existing = stack.prometheus_workspace
    return PrometheusWorkspaceArgs(
        name_base=stack.settings.name_base,
        region=stack.settings.region,
        kms_key_arn=kms_key_arn,
        node_role_name=node_role_name,
        rules=rules,
        existing_workspace_id=existing.id if existing else None,
        existing_workspace_arn=existing.arn if existing else None,
        log_retention_days=stack.settings.config.monitoring.prometheus.log_retention_days,
        tags=stack.settings.tags,
    )


def monitoring_args(stack: ResolvedStack, kms_key_arn: pulumi.Input[str],
                    prometheus: PrometheusWorkspace | None) -> GpuMonitoringArgs:
    config = stack.settings.config
    monitoring = config.monitoring
    return GpuMonitoringArgs(
        project=stack.settings.name_base,
        account_id=stack.account_id,
        region=stack.settings.region,
        owner_email=config.owner,
        kms_key_arn=kms_key_arn,
        group_names=group_names(stack),
        temperature_threshold_c=monitoring.temperature_threshold_c,
        memory_saturation_percent=monitoring.memory_saturation_percent,
        idle_utilization_percent=monitoring.idle_utilization_percent,
        idle_minutes=monitoring.idle_minutes,
        dashboard=monitoring.dashboard,
        prometheus_workspace_id=prometheus.workspace_id if prometheus else None,
        prometheus_workspace_arn=prometheus.workspace_arn if prometheus else None,
        manage_alert_manager=monitoring.prometheus.manage_alert_manager,
        tags=stack.settings.tags,
    )


def grafana_args(stack: ResolvedStack, prometheus: PrometheusWorkspace,
                 dashboards: Mapping[str, str]) -> GrafanaWorkspaceArgs:
    grafana = stack.settings.config.monitoring.grafana
    return GrafanaWorkspaceArgs(
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
    )


def backup_args(stack: ResolvedStack, kms_key_arn: pulumi.Input[str]) -> VolumeBackupArgs:
    return VolumeBackupArgs(
        project=stack.settings.name_base,
        kms_key_arn=kms_key_arn,
        retention_days=stack.settings.config.backup.retention_days,
        partition=stack.partition,
        tags=stack.settings.tags,
    )


def budget_args(stack: ResolvedStack, topic_arn: pulumi.Input[str]) -> CostBudgetArgs:
    config = stack.settings.config
    return CostBudgetArgs(
        project=config.project,
        monthly_usd=config.budget.monthly_usd,
        owner_email=config.owner,
        topic_arn=topic_arn,
        tags=stack.settings.tags,
        name_base=stack.settings.name_base,
    )
