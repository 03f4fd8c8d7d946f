"""Trust and resource policies of the roles and resources AWS services use for a stack: AWS
Backup, the alerts topic, the Grafana workspace, VPC flow logs."""

from __future__ import annotations

from typing import Any

Document = dict[str, Any]


def service_trust_policy(service: str, account_id: str | None = None, source_arn: str | None = None) -> Document:
    """A role only `service` may assume; with `account_id` and `source_arn`, only on behalf of
    that account's matching resources (the confused-deputy guard, IAM user guide, "The confused
    deputy problem": aws:SourceAccount and aws:SourceArn; read 2026-11-24)."""
    statement: Document = {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}
    if account_id is not None and source_arn is not None:
        statement["Condition"] = {
            "StringEquals": {"aws:SourceAccount": account_id},
            "ArnLike": {"aws:SourceArn": source_arn},
        }
    return {"Version": "2012-10-17", "Statement": [statement]}


def backup_assume_role_policy() -> Document:
    return service_trust_policy("backup.amazonaws.com")


TOPIC_PUBLISHERS = ("cloudwatch.amazonaws.com", "budgets.amazonaws.com")
"""The services that publish alarms and budget alerts to the project's topic."""


def alerts_topic_policy(topic_arn: str, account_id: str, prometheus_workspace_arn: str | None = None) -> Document:
    """Only CloudWatch alarms and AWS Budgets of this account may publish to the alerts topic, and
    the project's Prometheus workspace when it has one: AMP's alert manager needs sns:Publish and
    sns:GetTopicAttributes on the topic, held here to that one workspace by `aws:SourceArn`
    (AMP user guide, "Give Amazon Managed Service for Prometheus permission to send alert messages
    to your Amazon SNS topic", and its troubleshooting page's "No resource based policy" error;
    read 2026-11-25)."""
    statements: list[Document] = [
        {
            "Sid": "AlarmsAndBudgetsOfThisAccountPublish",
            "Effect": "Allow",
            "Principal": {"Service": list(TOPIC_PUBLISHERS)},
            "Action": "sns:Publish",
            "Resource": topic_arn,
            "Condition": {"StringEquals": {"aws:SourceAccount": account_id}},
        }
    ]
    if prometheus_workspace_arn:
        statements.append({
            "Sid": "ProjectPrometheusWorkspacePublishes",
            "Effect": "Allow",
            "Principal": {"Service": "aps.amazonaws.com"},
            "Action": ["sns:Publish", "sns:GetTopicAttributes"],
            "Resource": topic_arn,
            "Condition": {
                "StringEquals": {"aws:SourceAccount": account_id},
                "ArnEquals": {"aws:SourceArn": prometheus_workspace_arn},
            },
        })
    return {"Version": "2012-10-17", "Statement": statements}


def grafana_assume_role_policy(partition: str, region: str, account_id: str) -> Document:
    """The Grafana workspace's own role: a workspace created through the API must be
    CUSTOMER_MANAGED and name a role it assumes (Managed Grafana API reference, CreateWorkspace
    `permissionType`; read 2026-11-25). Held to Managed Grafana workspaces of this account and
    region, the confused-deputy guard of the IAM user guide."""
    return service_trust_policy(
        "grafana.amazonaws.com", account_id, f"arn:{partition}:grafana:{region}:{account_id}:/workspaces/*"
    )


PROMETHEUS_QUERY_ACTIONS = ["aps:GetLabels", "aps:GetMetricMetadata", "aps:GetSeries", "aps:QueryMetrics"]
"""What a reader of a workspace needs: AWS's AmazonPrometheusQueryAccess managed policy grants
these four (AWS Managed Policy reference, read 2026-11-25); here they are held to one workspace."""


def grafana_workspace_policy(workspace_arn: str) -> Document:
    """Grafana reads the project's Prometheus workspace and nothing else."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "QueryProjectPrometheus", "Effect": "Allow", "Action": PROMETHEUS_QUERY_ACTIONS, "Resource": workspace_arn},
        ],
    }


def flow_logs_assume_role_policy(partition: str, region: str, account_id: str) -> Document:
    """VPC flow logs assume the role only for this account's flow logs (confused deputy guard,
    VPC user guide, "IAM role for publishing flow logs to CloudWatch Logs", read 2026-11-24)."""
    return service_trust_policy(
        "vpc-flow-logs.amazonaws.com", account_id, f"arn:{partition}:ec2:{region}:{account_id}:vpc-flow-log/*"
    )


def flow_logs_role_policy(log_group_arn: str) -> Document:
    """Write to the one flow log group; `logs:DescribeLogGroups` has no resource-level permission."""
    group = log_group_arn.removesuffix(":*")
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "WriteFlowLogGroup",
                "Effect": "Allow",
                "Action": ["logs:CreateLogStream", "logs:DescribeLogStreams", "logs:PutLogEvents"],
                "Resource": [group, f"{group}:log-stream:*"],
            },
            {
                "Sid": "DescribeLogGroupsHasNoResourceLevelPermissions",
                "Effect": "Allow",
                "Action": "logs:DescribeLogGroups",
                "Resource": "*",
            },
        ],
    }
