"""What watches the fleet and its money (GPU alarms, the monthly budget, volume backups), and what
the stack may set up in the account."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, ValidationInfo, field_validator, model_validator

from gpucloud.config.fields import ConfigModel, shaped
from gpucloud.config.network import log_retention

PrometheusWorkspaceId = Annotated[str, shaped(
    r"ws-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    "expected an Amazon Managed Service for Prometheus workspace id such as ws-0123abcd-0123-4567-89ab-0123456789ab",
)]


class PrometheusConfig(ConfigModel):
    """Amazon Managed Service for Prometheus: every node remote-writes its GPU readings to the
    project's workspace, which holds the stack's recording and alerting rules and sends alerts to
    the project's SNS topic."""

    enabled: bool = False
    """Turn it on: an AMP workspace (or workspaceId's) with the stack's recording and alerting rules, and on every
    node a collector that remote-writes its GPU readings there."""
    workspace_id: PrometheusWorkspaceId | None = None
    """An existing workspace instead of one per project: the stack adds its rule groups namespace
    `gpu-cloud` (one per name per workspace, so one stack per workspace) and, unless
    `manage_alert_manager` is false, the workspace's one alert manager definition."""
    manage_alert_manager: bool = True
    """With `workspace_id`: false leaves the workspace's alert manager definition as it is (one an
    organisation already routes), so the stack's alerts go where it sends them; true makes the
    stack's own, which AMP refuses where the workspace already has one."""
    scrape_interval_seconds: int = Field(default=30, ge=10, le=300)
    """How often the node's collector reads the agent's readings; each reading is one sample per
    series, and AMP bills ingestion by the sample."""
    log_retention_days: int = 30
    """How long the workspace's rule and alert manager error logs are kept."""

    @field_validator("log_retention_days")
    @classmethod
    def retention_is_one_cloudwatch_takes(cls, days: int) -> int:
        return log_retention(days)

    @field_validator("manage_alert_manager")
    @classmethod
    def leaving_it_alone_needs_an_existing_workspace(cls, manage: bool, info: ValidationInfo) -> bool:
        if not manage and not info.data.get("workspace_id"):
            raise ValueError("false leaves an existing workspace's alert manager definition alone: set workspaceId too "
                             "(a workspace the stack creates has no other, and without one its alerts go nowhere)")
        return manage


RoleValue = Annotated[str, Field(min_length=1, max_length=256)]


class GrafanaSamlConfig(ConfigModel):
    """Your identity provider for a SAML workspace, and the groups of its role assertion that become
    Grafana admins and editors (everyone else signs in as a viewer)."""

    metadata_url: Annotated[str, shaped(r"https://[^\s]+", "expected the https URL of your IdP's SAML metadata", 2048)]
    """The https URL of your identity provider's SAML metadata."""
    admin_role_values: list[RoleValue] = Field(min_length=1)
    """Values of the role assertion that make a user a Grafana admin."""
    editor_role_values: list[RoleValue] = Field(min_length=1)
    """Values of the role assertion that make a user a Grafana editor."""
    role_assertion: str = Field(default="role", min_length=1, max_length=256)
    """The SAML attribute that carries a user's roles (groups), compared with adminRoleValues and editorRoleValues."""


class GrafanaConfig(ConfigModel):
    """Amazon Managed Grafana with the stack's dashboards, reading the project's Prometheus
    workspace. Users sign in through IAM Identity Center (where the account has none, Managed
    Grafana turns on Organizations and Identity Center at creation, if whoever runs `pulumi up`
    may) or your SAML identity provider; AMG bills per active user."""

    enabled: bool = False
    """Turn it on: a Managed Grafana workspace with the stack's dashboards (needs prometheus.enabled)."""
    authentication: Literal["AWS_SSO", "SAML"] = "AWS_SSO"
    """How users sign in: `AWS_SSO` (IAM Identity Center) or `SAML` (your identity provider, set in saml)."""
    saml: GrafanaSamlConfig | None = None
    """With SAML: without it nobody could sign in to the workspace."""
    editors: int = Field(default=1, ge=0, le=10_000)
    """Editors and admins expected in a month (the estimate prices them; who they are is set in
    IAM Identity Center or your identity provider)."""
    viewers: int = Field(default=0, ge=0, le=10_000)
    """Viewers expected in a month (the estimate prices them; AMG bills per active user)."""

    @model_validator(mode="after")
    def saml_settings_go_with_saml(self) -> GrafanaConfig:
        if self.enabled and self.authentication == "SAML" and self.saml is None:
            raise ValueError("authentication SAML needs saml (metadataUrl, adminRoleValues, editorRoleValues): "
                             "without them nobody can sign in to the workspace")
        if self.saml is not None and self.authentication != "SAML":
            raise ValueError("saml is set but authentication is AWS_SSO: set authentication: SAML, or drop saml")
        return self


class MonitoringConfig(ConfigModel):
    """GPU alarms sent to the project's SNS topic (the owner's e-mail is subscribed), and
    optionally the readings in Prometheus and Grafana."""

    temperature_threshold_c: int = Field(default=85, ge=40, le=100)
    """GPU temperature in °C: the group's alarm fires when its hottest GPU stays above it for 3 minutes (the
    Prometheus alert at or above it for 5), and the node's health check counts a GPU at or above it as
    unhealthy."""
    memory_saturation_percent: float = Field(default=95, gt=0, le=100)
    """GPU memory used, in percent of the total: the group's alarm fires when it stays above this for three
    5-minute periods."""
    idle_utilization_percent: float = Field(default=5, gt=0, le=100)
    """Average GPU utilisation of a group, in percent, below which it counts as idle for the idle alarm (which only
    notifies: idleShutdown is what scales a group in)."""
    idle_minutes: int = Field(default=60, ge=10, le=1440)
    """How long a group's GPUs must stay under idleUtilizationPercent before the idle alarm fires (read in 5-minute
    periods)."""
    dashboard: bool = True
    """Create the CloudWatch dashboard `gpu-cloud-<project>` with each group's GPU readings."""
    prometheus: PrometheusConfig = Field(default_factory=PrometheusConfig)
    grafana: GrafanaConfig = Field(default_factory=GrafanaConfig)

    @model_validator(mode="after")
    def grafana_reads_prometheus(self) -> MonitoringConfig:
        if self.grafana.enabled and not self.prometheus.enabled:
            raise ValueError("grafana.enabled needs prometheus.enabled: the dashboards read the project's Prometheus workspace")
        return self


class BackupConfig(ConfigModel):
    """AWS Backup of persistent volumes: daily, kept this many days."""

    retention_days: int = Field(default=7, ge=1, le=3650)
    """Days AWS Backup keeps each daily recovery point of the persistent volumes."""


class AccountConfig(ConfigModel):
    """What the stack may set up in the account that other stacks share."""

    create_service_linked_role: bool = True
    """Create the Auto Scaling service-linked role where the account has none: the program looks it
    up (iam:GetRole) at every preview and up and declares it only where it is missing (kept on
    destroy: every Auto Scaling group of the account uses it). The stack needs it before its first
    group, for its key policy. False, for a deploying role without iam:CreateServiceLinkedRole: a
    missing role is a config error."""


class BudgetConfig(ConfigModel):
    """The project's monthly AWS Budgets cost budget, filtered on its `Project` tag."""

    monthly_usd: float = Field(gt=0, le=10_000_000)
    """The monthly AWS Budgets limit in US dollars, alerting at 80% and 100% of actual spend and 100% of the
    forecast. The plan warns when the estimate at desired capacity is above it and fails when minimum capacity
    alone is."""
    accept_unpriced_compute: StrictBool = False
    """Let the budget check pass although the price catalog has no price for a group's GPU instance
    type in the stack's region (the check then covers only what is priced). Off by default: unpriced
    GPU compute fails the plan's budget check."""
