"""What a node's role may do: S3 by prefix, the agent bundle, the project key, Session Manager, the
CloudWatch agent, its own groups' lifecycle, its persistent volume, Prometheus remote write."""

from __future__ import annotations

from collections.abc import Sequence

from gpucloud.documents.keys import KEY_USE_ACTIONS
from gpucloud.documents.services import Document, service_trust_policy
from gpucloud.naming import (
    AGENT_BUNDLE_PREFIX,
    NODE_METRICS_NAMESPACE,
    STACK_TAG,
    artifacts_bucket_name,
    autoscaling_group_arn_pattern,
    log_group_prefix,
)


def ec2_assume_role_policy() -> Document:
    return service_trust_policy("ec2.amazonaws.com")


S3_READ_ACTIONS = ["s3:GetObject", "s3:GetObjectTagging", "s3:GetObjectVersion"]
S3_WRITE_ACTIONS = [
    "s3:AbortMultipartUpload",
    "s3:DeleteObject",
    "s3:ListMultipartUploadParts",
    "s3:PutObject",
    "s3:PutObjectTagging",
]


def s3_prefix_statements(partition: str, bucket: str, read_prefixes: Sequence[str], write_prefixes: Sequence[str]) -> list[Document]:
    """Read on read prefixes, read/write on write prefixes, listing only under those prefixes."""
    bucket_arn = f"arn:{partition}:s3:::{bucket}"
    readable = sorted(set(read_prefixes) | set(write_prefixes))
    statements: list[Document] = [
        {
            "Sid": "ListOnlyGrantedPrefixes",
            "Effect": "Allow",
            "Action": "s3:ListBucket",
            "Resource": bucket_arn,
            "Condition": {"StringLike": {"s3:prefix": [f"{prefix}*" for prefix in readable]}},
        },
        {
            "Sid": "ReadGrantedPrefixes",
            "Effect": "Allow",
            "Action": S3_READ_ACTIONS,
            "Resource": [f"{bucket_arn}/{prefix}*" for prefix in readable],
        },
    ]
    if write_prefixes:
        statements.append(
            {
                "Sid": "WriteGrantedPrefixes",
                "Effect": "Allow",
                "Action": S3_WRITE_ACTIONS,
                "Resource": [f"{bucket_arn}/{prefix}*" for prefix in sorted(write_prefixes)],
            }
        )
    return statements


def node_statements(
    partition: str,
    region: str,
    account_id: str,
    project: str,
    key_arn: str,
    session_manager: bool = True,
    group_names: Sequence[str] = (),
) -> list[Document]:
    """What the node needs besides data: the agent bundle, the project key, Session Manager (unless
    SSH replaces it), the CloudWatch agent, its own Auto Scaling lifecycle, and attaching the
    group's persistent volume.

    The lifecycle actions and SetInstanceHealth name each of the stack's groups exactly
    (`group_names`, the Auto Scaling group names): a pattern `gpu-cloud-<base>-*` also matched
    project `vision-train`'s groups from project `vision`. They are further held to groups tagged
    with the stack's own `gpu-cloud:stack` (the Service Authorization Reference, "Actions,
    resources, and condition keys for Amazon EC2 Auto Scaling", lists CompleteLifecycleAction,
    RecordLifecycleActionHeartbeat and SetInstanceHealth on the autoScalingGroup resource with the
    condition key autoscaling:ResourceTag/${TagKey}; the Auto Scaling user guide, "Tags for
    security", uses that key to allow actions on tagged groups only; both read 2026-11-25). No
    group names, no lifecycle statement."""
    instances = f"arn:{partition}:ec2:{region}:{account_id}:instance/*"
    volumes = f"arn:{partition}:ec2:{region}:{account_id}:volume/*"
    groups = [autoscaling_group_arn_pattern(partition, region, account_id, name) for name in sorted(set(group_names))]
    log_groups = f"arn:{partition}:logs:{region}:{account_id}:log-group:{log_group_prefix(project)}*"
    own_stack = {"StringEquals": {f"aws:ResourceTag/{STACK_TAG}": project}}
    statements = [
        {
            "Sid": "FetchAgentBundle",
            "Effect": "Allow",
            "Action": "s3:GetObject",
            "Resource": f"arn:{partition}:s3:::{artifacts_bucket_name(project, account_id)}/{AGENT_BUNDLE_PREFIX}*",
        },
        {"Sid": "UseProjectKey", "Effect": "Allow", "Action": KEY_USE_ACTIONS, "Resource": key_arn},
        {
            "Sid": "AttachEncryptedVolumesWithProjectKey",
            "Effect": "Allow",
            "Action": "kms:CreateGrant",
            "Resource": key_arn,
            "Condition": {"Bool": {"kms:GrantIsForAWSResource": "true"}},
        },
        {
            "Sid": "SessionManagerRegistersOwnInstance",
            "Effect": "Allow",
            "Action": "ssm:UpdateInstanceInformation",
            "Resource": instances,
        },
        {
            "Sid": "SessionManagerChannelsHaveNoResourceLevelPermissions",
            "Effect": "Allow",
            "Action": [
                "ec2messages:AcknowledgeMessage",
                "ec2messages:DeleteMessage",
                "ec2messages:FailMessage",
                "ec2messages:GetEndpoint",
                "ec2messages:GetMessages",
                "ec2messages:SendReply",
                "ssmmessages:CreateControlChannel",
                "ssmmessages:CreateDataChannel",
                "ssmmessages:OpenControlChannel",
                "ssmmessages:OpenDataChannel",
            ],
            "Resource": "*",
        },
        {
            "Sid": "CloudWatchAgentMetricsHaveNoResourceLevelPermissions",
            "Effect": "Allow",
            "Action": "cloudwatch:PutMetricData",
            "Resource": "*",
            "Condition": {"StringEquals": {"cloudwatch:namespace": ["CWAgent", NODE_METRICS_NAMESPACE]}},
        },
        {
            "Sid": "ReplacementCountReadsHaveNoResourceLevelPermissions",
            "Effect": "Allow",
            "Action": "cloudwatch:GetMetricStatistics",
            "Resource": "*",
        },
        {
            "Sid": "DescribeCallsHaveNoResourceLevelPermissions",
            "Effect": "Allow",
            "Action": [
                "autoscaling:DescribeAutoScalingInstances",
                "autoscaling:DescribeLifecycleHooks",
                "ec2:DescribeInstances",
                "ec2:DescribeTags",
                "ec2:DescribeVolumes",
                # The SSM Agent looks the job log group up before sending a job's output to it and,
                # not finding it, tries to create it and sends nothing (aws/amazon-ssm-agent,
                # cloudwatchlogspublisher: createLogGroupAndStream, IsLogGroupPresent; read 2026-11-25).
                "logs:DescribeLogGroups",
            ],
            "Resource": "*",
        },
        {
            "Sid": "CloudWatchAgentLogsUnderProjectPrefix",
            "Effect": "Allow",
            "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:DescribeLogStreams", "logs:PutLogEvents"],
            "Resource": [log_groups, f"{log_groups}:log-stream:*"],
        },
        {
            "Sid": "NodeCompletesOwnLifecycle",
            "Effect": "Allow",
            "Action": [
                "autoscaling:CompleteLifecycleAction",
                "autoscaling:RecordLifecycleActionHeartbeat",
                "autoscaling:SetInstanceHealth",
            ],
            "Resource": groups,
            "Condition": {"StringEquals": {f"autoscaling:ResourceTag/{STACK_TAG}": project}},
        },
        {
            "Sid": "NodeAttachesProjectPersistentVolume",
            "Effect": "Allow",
            "Action": "ec2:AttachVolume",
            "Resource": [instances, volumes],
            "Condition": own_stack,
        },
    ]
    if not session_manager:
        statements = [s for s in statements if not s["Sid"].startswith("SessionManager")]
    if not groups:
        statements = [s for s in statements if s["Sid"] != "NodeCompletesOwnLifecycle"]
    return statements


def instance_role_policy(
    *,
    partition: str,
    region: str,
    account_id: str,
    project: str,
    key_arn: str,
    bucket: str | None,
    read_prefixes: Sequence[str],
    write_prefixes: Sequence[str],
    session_manager: bool = True,
    group_names: Sequence[str] = (),
) -> Document:
    statements = node_statements(partition, region, account_id, project, key_arn, session_manager, group_names)
    if bucket:
        statements = s3_prefix_statements(partition, bucket, read_prefixes, write_prefixes) + statements
    return {"Version": "2012-10-17", "Statement": statements}


def prometheus_remote_write_policy(workspace_arn: str) -> Document:
    """The node role's one Prometheus permission: remote write to the project's workspace
    (aps:RemoteWrite, "perform a remote write operation", AMP user guide "IAM permissions and
    policies"; read 2026-11-25)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "RemoteWriteToProjectWorkspace", "Effect": "Allow", "Action": "aps:RemoteWrite", "Resource": workspace_arn}
        ],
    }
