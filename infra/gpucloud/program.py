"""The Pulumi program: load the stack config, check it against AWS, build the environment."""

from __future__ import annotations

import json
from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config

from gpucloud.config import ConfigError, StackSettings, parse_stack_config, split_namespace
from gpucloud.components.environment import ProjectEnvironment, ProjectEnvironmentArgs
from gpucloud.lookups.pulumi_aws import PulumiAwsLookups
from gpucloud.lookups import LookupUnavailable, ResolvedStack, resolve_stack
from gpucloud.observability import rule_file_text


def _decode(value: Any) -> Any:
    """Structured config reaches the program as JSON text."""
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def settings_from_pulumi_config() -> StackSettings:
    stack = pulumi.get_stack()
    source = f"stacks/Pulumi.{stack}.yaml"
    raw = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    values, region = split_namespace({key: _decode(value) for key, value in raw.items()}, stack=stack, source=source)
    if not region:
        raise ConfigError(f"stack {stack!r} ({source})", [("aws:region", "is not set")])
    return parse_stack_config(values, stack=stack, source=source, region=region)


def _schedule_warnings(settings: StackSettings) -> list[tuple[str, str]]:
    """A schedule that closes its group (maxSize 0) with none to open it again: a warning, as the
    stack may mean it (a group retired on a date), but most often a morning schedule is missing."""
    return [
        (f"gpu-cloud:groups[{index}].scaling.schedules[{position}]",
         f"{group.scaling.schedules[position].name} sets maxSize 0 and no schedule of {group.name} sets it above 0 again: "
         "after its first run the group stays empty (no job or scale-out can start a node) until maxSize is changed "
         "by hand; add a schedule that sets maxSize back (e.g. weekday mornings), or leave maxSize out and scale in "
         "with minSize 0 and desiredCapacity 0")
        for index, group in enumerate(settings.config.groups)
        for position in group.scaling.closed_for_good()
    ]


def build(settings: StackSettings, resolved: ResolvedStack | None = None) -> ProjectEnvironment:
    """Resolve AWS facts (failing before any resource on a bad config), then declare everything.

    What would deploy and never run (a quota below minSize) is logged as an error, so the offline
    plan shows the whole plan and fails; `main` stops a real preview or update on it instead,
    because an error log does not fail a Pulumi update (pulumi/pulumi#6090)."""
    resolved = resolved or resolve_stack(settings, PulumiAwsLookups())
    for key, reason in [*resolved.warnings, *_schedule_warnings(settings)]:
        pulumi.log.warn(f"{key}: {reason}")
    for failure in resolved.failures:
        pulumi.log.error(failure)
    monitoring = settings.config.monitoring
    dashboards: dict = {}
    if monitoring.grafana.enabled:
        # Imported only for stacks that have Grafana: the dashboard SDK takes a tenth of a second
        # to import, a plan of a one-group stack without it about 2.
        from gpucloud.observability.dashboards import dashboard_files

        dashboards = dashboard_files(settings)
    environment = ProjectEnvironment(settings.config.project, ProjectEnvironmentArgs(
        stack=resolved,
        prometheus_rules=rule_file_text(settings) if monitoring.prometheus.enabled else None,
        grafana_dashboards=dashboards,
    ))
    pulumi.export("kmsKeyArn", environment.kms_key_arn)
    pulumi.export("instanceRoleArn", environment.instance_role_arn)
    pulumi.export("alertsTopicArn", environment.alerts_topic_arn)
    pulumi.export("artifactsBucketName", environment.artifacts_bucket_name)
    pulumi.export("agentBundleKey", environment.agent_bundle_key)
    pulumi.export("groups", environment.groups)
    if environment.prometheus:
        pulumi.export("prometheusWorkspaceId", environment.prometheus.workspace_id)
        pulumi.export("prometheusRemoteWriteUrl", environment.prometheus.remote_write_url)
    if environment.grafana:
        pulumi.export("grafanaEndpoint", environment.grafana.endpoint)
    pulumi.export("jobDocumentName", environment.jobs.document_name)
    if environment.shared_file_system:
        shared = environment.shared_file_system
        pulumi.export("fileSystemId", shared.file_system_id)
        pulumi.export("fileSystemDnsName", shared.dns_name)
        pulumi.export("fileSystemMountName", shared.mount_name)
        pulumi.export("dataBucketPolicyForFileSystem", shared.data_bucket_policy)
    if environment.jobs.team_policy_arn is not None:
        pulumi.export("jobRunnerPolicyArn", environment.jobs.team_policy_arn)
    return environment


def main() -> None:
    try:
        settings = settings_from_pulumi_config()
        resolved = resolve_stack(settings, PulumiAwsLookups())
        if resolved.failures:
            raise pulumi.RunError(f"stack {settings.stack!r}: " + "\n".join(resolved.failures))
        build(settings, resolved)
    except ConfigError as error:
        raise pulumi.RunError(str(error)) from None
    except LookupUnavailable as error:
        raise pulumi.RunError(
            f"stack {settings.stack!r}: AWS could not be asked what the config's rules need "
            f"(credentials, permissions or an outage; not a config problem): {error}"
        ) from None
