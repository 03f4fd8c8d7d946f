"""PrometheusWorkspace: the project's Amazon Managed Service for Prometheus workspace, its rules,
and the node role's right to write to it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from gpucloud.documents import prometheus_remote_write_policy
from gpucloud.naming import PROMETHEUS_RULES_NAMESPACE, prometheus_log_group_prefix, prometheus_remote_write_url


@dataclass(frozen=True)
class PrometheusWorkspaceArgs:
    name_base: str
    """What the names AWS wants unique are built from (`gpucloud.naming.name_base`)."""
    region: str
    """The region it is deployed in."""
    kms_key_arn: pulumi.Input[str]
    """The project key: a new workspace is encrypted with it (AMP cannot change a workspace's key
    later, nor turn an AWS-owned-key workspace into a customer-managed one)."""
    node_role_name: pulumi.Input[str]
    """The role whose nodes remote-write; it gets aps:RemoteWrite on this workspace only."""
    rules: str
    """The rule file (YAML) for the workspace's rule groups namespace."""
    existing_workspace_id: str | None = None
    """The id of an existing workspace to use instead of a new one (with `existing_workspace_arn`)."""
    existing_workspace_arn: str | None = None
    """An existing workspace (looked up and found ACTIVE before any resource, and, where account
    facts say, without another stack's `gpu-cloud` namespace): the stack adds its rules namespace
    and writes to it, and creates no workspace or log group."""
    log_retention_days: int = 30
    """Days the workspace's log group keeps its records."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """Tags on every resource it creates."""


class PrometheusWorkspace(pulumi.ComponentResource):
    """A workspace encrypted with the project key, logging rule and alert manager errors to an
    encrypted log group, with the stack's recording and alerting rules; the node role may only
    remote-write to it. Where alerts go is the monitoring component's (the topic is its)."""

    workspace_id: pulumi.Output[str]
    """The workspace's id (the new one, or the existing one named)."""
    workspace_arn: pulumi.Output[str]
    """The workspace's ARN."""
    remote_write_url: pulumi.Output[str]
    """What the node's collector writes to."""
    query_url: pulumi.Output[str]
    """The workspace's Prometheus-compatible endpoint, which Grafana queries."""
    rules_namespace_arn: pulumi.Output[str]
    """The stack's rule groups namespace in the workspace."""

    def __init__(self, name: str, args: PrometheusWorkspaceArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-cloud:index:PrometheusWorkspace", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = {**args.tags, "Name": f"gpu-cloud-{args.name_base}"}
        if args.existing_workspace_id:
            self.workspace_id = pulumi.Output.from_input(args.existing_workspace_id)
            self.workspace_arn = pulumi.Output.from_input(args.existing_workspace_arn or "")
        else:
            self.log_group = aws.cloudwatch.LogGroup(
                f"{name}-logs",
                name=f"{prometheus_log_group_prefix(args.name_base)}workspace",
                kms_key_id=args.kms_key_arn,
                retention_in_days=args.log_retention_days,
                tags=tags,
                opts=child,
            )
            self.workspace = aws.amp.Workspace(
                f"{name}-workspace",
                alias=f"gpu-cloud-{args.name_base}",
                kms_key_arn=args.kms_key_arn,
                # AMP's LogGroupArn pattern wants the `:*` the provider's LogGroup.arn leaves out
                logging_configuration={"log_group_arn": self.log_group.arn.apply(lambda arn: f"{arn}:*")},
                tags=tags,
                opts=child,
            )
            self.workspace_id = self.workspace.id
            self.workspace_arn = self.workspace.arn
        self.rules_namespace = aws.amp.RuleGroupNamespace(
            f"{name}-rules",
            name=PROMETHEUS_RULES_NAMESPACE,
            workspace_id=self.workspace_id,
            data=args.rules,
            tags=args.tags,
            opts=child,
        )
        aws.iam.RolePolicy(
            f"{name}-remote-write",
            role=args.node_role_name,
            name="gpu-cloud-node-prometheus",
            policy=self.workspace_arn.apply(lambda arn: json.dumps(prometheus_remote_write_policy(arn))),
            opts=child,
        )
        self.remote_write_url = self.workspace_id.apply(lambda workspace: prometheus_remote_write_url(args.region, workspace))
        self.query_url = self.remote_write_url.apply(lambda url: url.removesuffix("api/v1/remote_write"))
        self.rules_namespace_arn = self.rules_namespace.arn
        self.register_outputs({
            "workspaceId": self.workspace_id,
            "workspaceArn": self.workspace_arn,
            "remoteWriteUrl": self.remote_write_url,
            "queryUrl": self.query_url,
            "rulesNamespaceArn": self.rules_namespace_arn,
        })
