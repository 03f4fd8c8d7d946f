"""What an existing Prometheus workspace (`monitoring.prometheus.workspaceId`) already holds of what
a stack adds to it, against what AMP lets a stack create there.

The provider creates both parts: the alert manager definition through CreateAlertManagerDefinition
(a workspace has at most one; Put only on update) and the rules through CreateRuleGroupsNamespace
(one namespace per name), and AMP answers either with ConflictException, "the request would cause
an inconsistent state" (terraform-provider-aws internal/service/amp/alert_manager_definition.go and
rule_group_namespace.go; botocore's amp model 2020-08-01, both operations' errors; read 2026-11-25).
What a stack made itself (its definition sends to its alerts topic; its namespace carries its
`gpu-cloud:stack` tag) is its own on a later run, not a conflict. `existing_prometheus_workspace`
applies these rules to the workspace the stack names, once it is known to exist and be ACTIVE.
"""

from __future__ import annotations

from gpucloud.config import StackSettings
from gpucloud.lookups.facts import AwsLookups, PrometheusWorkspace, PrometheusWorkspaceContents
from gpucloud.lookups.problems import Problems
from gpucloud.naming import PROMETHEUS_RULES_NAMESPACE, alerts_topic_name

Findings = list[tuple[str, str]]
"""(config key, reason) pairs."""


def workspace_conflicts(settings: StackSettings, contents: PrometheusWorkspaceContents | None) -> tuple[Findings, Findings]:
    """The refusals (what `pulumi up` would fail on) and the not-checked lines for the stack's
    workspace; without contents, one line says they were not checked."""
    prometheus = settings.config.monitoring.prometheus
    workspace = prometheus.workspace_id
    if contents is None:
        return [], [("monitoring.prometheus.workspaceId", (
            f"not checked: whether {workspace} already has an alert manager definition or a rule groups namespace "
            f"{PROMETHEUS_RULES_NAMESPACE} (no pulumi-aws data source reads either; `gpucloud account snapshot` "
            "records both for the offline plan); AMP refuses a second of either at `pulumi up` (ConflictException)"))]
    refusals = []
    own_topic = alerts_topic_name(settings.name_base)
    topics = contents.alert_manager_topics
    if prometheus.manage_alert_manager and topics is not None and not any(topic.rsplit(":", 1)[-1] == own_topic for topic in topics):
        refusals.append(("monitoring.prometheus.manageAlertManager", (
            f"is true and workspace {workspace} already has an alert manager definition "
            f"(sending to {', '.join(topics) or 'no SNS topic'}): AMP keeps one per workspace and refuses another "
            "(ConflictException). Set manageAlertManager: false to leave it as it is (the stack's alerts then go "
            "where it routes them), or use a workspace without one")))
    owner = contents.rule_groups_namespaces.get(PROMETHEUS_RULES_NAMESPACE)
    if owner is not None and owner != settings.name_base:
        made_by = f"made by stack {owner}" if owner else "not made by a gpu-cloud stack"
        refusals.append(("monitoring.prometheus.workspaceId", (
            f"{workspace} already has a rule groups namespace {PROMETHEUS_RULES_NAMESPACE} ({made_by}): AMP refuses "
            "a second of that name (ConflictException). Use a workspace no other stack adds its rules to, or drop "
            "workspaceId to let the stack create its own")))
    return refusals, []


def existing_prometheus_workspace(settings: StackSettings, lookups: AwsLookups, problems: Problems) -> PrometheusWorkspace | None:
    """A named workspace must exist in the stack's region and be ACTIVE: AMP refuses rule groups
    and an alert manager definition in one that is CREATING, UPDATING or DELETING (AMP API
    reference, WorkspaceStatus; read 2026-11-25)."""
    prometheus = settings.config.monitoring.prometheus
    if not (prometheus.enabled and prometheus.workspace_id):
        return None
    key = "monitoring.prometheus.workspaceId"
    workspace = lookups.prometheus_workspace(prometheus.workspace_id)
    if workspace is None:
        problems.add(key, f"{prometheus.workspace_id} does not exist in {settings.region}")
    elif workspace.status != "ACTIVE":
        problems.add(key, f"{prometheus.workspace_id} is {workspace.status}, not ACTIVE")
    else:
        refusals, unchecked = workspace_conflicts(settings, lookups.prometheus_workspace_contents(workspace.id))
        for named, reason in refusals:
            problems.add(named, reason)
        for named, reason in unchecked:
            problems.warn(named, reason)
    return workspace
