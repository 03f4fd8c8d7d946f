"""GrafanaWorkspace: an Amazon Managed Grafana workspace reading the project's Prometheus
workspace, with the stack's dashboards provisioned into it."""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from gpucloud.documents import grafana_assume_role_policy, grafana_workspace_policy

GRAFANA_VERSION = "12.4"
"""Managed Grafana creates workspaces at Grafana 8, 9, 10 and 12 (its user guide has a "Working in
Grafana version 12" part; read 2026-11-25); the dashboards are generated for Grafana 11.6 and
Grafana migrates a dashboard forward on import, never back."""
TOKEN_SECONDS = 30 * 24 * 3600
"""The longest a workspace service account token lives (CreateWorkspaceServiceAccountToken,
`secondsToLive`: up to 30 days; pulumi-aws v7 docs; read 2026-11-25)."""


def utc_today() -> datetime.date:
    """Today's date in UTC, when the args are made."""
    return datetime.datetime.now(datetime.timezone.utc).date()


def token_generation(today: datetime.date) -> str:
    """A new token each month: `pulumi up` at least once a month keeps the provisioning working,
    and a later one replaces an expired token before it is used."""
    return today.strftime("%Y-%m")


@dataclass(frozen=True)
class GrafanaWorkspaceArgs:
    name_base: str
    account_id: str
    region: str
    prometheus_workspace_arn: pulumi.Input[str]
    prometheus_endpoint: pulumi.Input[str]
    """The workspace's query endpoint, `https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>/`."""
    dashboards: Mapping[str, str]
    """Dashboard file name -> Grafana dashboard JSON (the stack's, from gpucloud.observability.dashboards)."""
    authentication: str = "AWS_SSO"
    saml: Mapping[str, object] | None = None
    """With SAML: metadata_url, admin_role_values, editor_role_values, role_assertion."""
    partition: str = "aws"
    tags: Mapping[str, str] = field(default_factory=dict)
    today: datetime.date = field(default_factory=utc_today)


class GrafanaWorkspace(pulumi.ComponentResource):
    """A Grafana workspace whose own role may only query the project's Prometheus workspace, a
    default Prometheus data source signing with that role, and the dashboards, written through a
    service account whose token lives at most 30 days."""

    workspace_id: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    """Where users sign in (IAM Identity Center or SAML assigns who may)."""

    def __init__(self, name: str, args: GrafanaWorkspaceArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-cloud:index:GrafanaWorkspace", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        workspace_name = f"gpu-cloud-{args.name_base}"
        role = aws.iam.Role(
            f"{name}-role",
            name=f"{workspace_name}-grafana",
            description=f"gpu-cloud {args.name_base}: Managed Grafana reads the project's Prometheus",
            assume_role_policy=json.dumps(grafana_assume_role_policy(args.partition, args.region, args.account_id)),
            tags={**args.tags, "Name": f"{workspace_name}-grafana"},
            opts=child,
        )
        policy = aws.iam.RolePolicy(
            f"{name}-query",
            role=role.name,
            name="gpu-cloud-grafana-prometheus",
            policy=pulumi.Output.from_input(args.prometheus_workspace_arn).apply(
                lambda arn: json.dumps(grafana_workspace_policy(arn))
            ),
            opts=child,
        )
        self.workspace = aws.grafana.Workspace(
            f"{name}-workspace",
            name=workspace_name,
            description=f"gpu-cloud {args.name_base}: GPU fleet dashboards",
            account_access_type="CURRENT_ACCOUNT",
            authentication_providers=[args.authentication],
            permission_type="CUSTOMER_MANAGED",
            role_arn=role.arn,
            data_sources=["PROMETHEUS"],
            grafana_version=GRAFANA_VERSION,
            tags=dict(args.tags),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[policy]),
        )
        if args.saml is not None:
            aws.grafana.WorkspaceSamlConfiguration(
                f"{name}-saml",
                workspace_id=self.workspace.id,
                idp_metadata_url=args.saml["metadata_url"],
                admin_role_values=list(args.saml["admin_role_values"]),
                editor_role_values=list(args.saml["editor_role_values"]),
                role_assertion=args.saml["role_assertion"],
                opts=child,
            )
        account = aws.grafana.WorkspaceServiceAccount(
            f"{name}-provisioner",
            name="gpu-cloud-provisioner",
            grafana_role="ADMIN",
            workspace_id=self.workspace.id,
            opts=child,
        )
        token = aws.grafana.WorkspaceServiceAccountToken(
            f"{name}-provisioner-token",
            name=f"pulumi-{token_generation(args.today)}",
            seconds_to_live=TOKEN_SECONDS,
            service_account_id=account.service_account_id,
            workspace_id=self.workspace.id,
            opts=child,
        )
        import pulumiverse_grafana as grafana  # only stacks with Grafana pay for importing its provider SDK

        provider = grafana.Provider(
            f"{name}-grafana",
            url=self.workspace.endpoint.apply(lambda host: f"https://{host}"),
            auth=token.key,
            opts=child,
        )
        in_grafana = pulumi.ResourceOptions(parent=self, provider=provider)
        data_source = grafana.oss.DataSource(
            f"{name}-prometheus",
            name=f"gpu-cloud {args.name_base}",
            uid=f"gpucloud-{args.name_base}"[:40],
            type="prometheus",
            url=args.prometheus_endpoint,
            is_default=True,
            json_data_encoded=json.dumps({
                "httpMethod": "POST",
                "sigV4Auth": True,
                "sigV4AuthType": "ec2_iam_role",
                "sigV4Region": args.region,
            }),
            opts=in_grafana,
        )
        for file_name, model in sorted(args.dashboards.items()):
            grafana.oss.Dashboard(
                f"{name}-{file_name.removesuffix('.json')}",
                config_json=model,
                overwrite=True,
                opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[data_source]),
            )
        self.workspace_id = self.workspace.id
        self.endpoint = self.workspace.endpoint
        self.register_outputs({"workspaceId": self.workspace_id, "endpoint": self.endpoint})
