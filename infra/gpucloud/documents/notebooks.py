"""The managed policy a group's notebook user needs (`groups[].services.jupyter.userPolicy`):
`gpucloud connect --group <group> --start` and reading the group's JupyterLab token, on that
group only, and each of its nodes' boot phases while `--start` waits.

Each action and condition key is the Service Authorization Reference's (read 2026-11-28):
"Actions, resources, and condition keys for AWS Systems Manager": StartSession on `document` and
`instance` with `ssm:resourceTag/${TagKey}`; ResumeSession and TerminateSession on `session*`
with `ssm:resourceTag/${TagKey}`;
GetParameter on `parameter*`. "... for Amazon EC2 Auto Scaling": SetDesiredCapacity on
`autoScalingGroup*` with `autoscaling:ResourceTag/${TagKey}`; DescribeAutoScalingGroups lists no
resource type. "... for AWS Key Management Service": Decrypt on `key*` with `kms:ViaService` and
`kms:EncryptionContext:${EncryptionContextKey}`.
"""

from __future__ import annotations

from gpucloud.documents.services import Document
from gpucloud.naming import (
    BOOT_PHASE_STREAM_PREFIX,
    GROUP_TAG,
    STACK_TAG,
    autoscaling_group_arn_pattern,
    job_log_group_name,
)

PORT_FORWARDING_DOCUMENT = "AWS-StartPortForwardingSession"
"""The AWS-owned Session document `gpucloud connect` starts (no account in its ARN)."""


def notebook_user_policy(*, partition: str, region: str, account_id: str, name_base: str, group: str,
                         autoscaling_group_name: str, token_parameter_arn: str, key_arn: str) -> Document:
    """Port forwarding to the group's nodes, the person's own sessions, the group's token, and
    raising the group from zero; no other group's nodes, token or capacity.

    The nodes are held by two tags the launch template puts on each (components/environment.py):
    `gpu-cloud:stack` and `GpuGroup` (Session Manager user guide, "Additional sample IAM policies
    for Session Manager", Example 3, restricting access based on tags). A holder resumes and ends
    only their own sessions (same page, Example 4, "Allow users to end only sessions they started";
    read 2026-11-28): Session Manager tags each session `aws:ssmmessages:session-id` with the
    starter's `aws:userid`, which is how a role's session (IAM Identity Center included) is told
    apart, since its id starts with the role session name rather than the user id; an IAM user's
    session id starts with `${aws:username}`. The token is a SecureString under the project
    key, decrypted by Parameter Store with the caller's credentials and the parameter's ARN as
    encryption context (KMS developer guide, "How AWS Systems Manager Parameter Store uses AWS KMS";
    read 2026-11-28); the key policy's Parameter Store statement allows it for the account
    (documents/keys.py). Whoever may tag an instance `GpuGroup` may have a holder reach it."""
    session = f"arn:{partition}:ssm:{region}:{account_id}:session"
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "PortForwardToGroupNodes",
                "Effect": "Allow",
                "Action": "ssm:StartSession",
                "Resource": f"arn:{partition}:ec2:{region}:{account_id}:instance/*",
                "Condition": {"StringEquals": {f"ssm:resourceTag/{STACK_TAG}": name_base,
                                               f"ssm:resourceTag/{GROUP_TAG}": group}},
            },
            {
                "Sid": "PortForwardingDocument",
                "Effect": "Allow",
                "Action": "ssm:StartSession",
                "Resource": f"arn:{partition}:ssm:{region}::document/{PORT_FORWARDING_DOCUMENT}",
            },
            {
                "Sid": "OwnSessionsOfARole",
                "Effect": "Allow",
                "Action": ["ssm:ResumeSession", "ssm:TerminateSession"],
                "Resource": f"{session}/*",
                "Condition": {"StringLike": {"ssm:resourceTag/aws:ssmmessages:session-id": "${aws:userid}"}},
            },
            {
                "Sid": "OwnSessionsOfAnIamUser",
                "Effect": "Allow",
                "Action": ["ssm:ResumeSession", "ssm:TerminateSession"],
                "Resource": f"{session}/${{aws:username}}-*",
            },
            {
                "Sid": "FindNodesHasNoResourceLevelPermissions",
                "Effect": "Allow",
                "Action": "autoscaling:DescribeAutoScalingGroups",
                "Resource": "*",
            },
            {
                "Sid": "RaiseGroupFromZero",
                "Effect": "Allow",
                "Action": "autoscaling:SetDesiredCapacity",
                "Resource": autoscaling_group_arn_pattern(partition, region, account_id, autoscaling_group_name),
                "Condition": {"StringEquals": {f"autoscaling:ResourceTag/{STACK_TAG}": name_base}},
            },
            {
                # While --start waits: each node's latest boot phase, from the group's nodes' streams
                # of the job log group and no other stream there (GetLogEvents on `log-stream*`: Service
                # Authorization Reference, "Actions, resources, and condition keys for Amazon
                # CloudWatch Logs", read 2026-11-28; documents/jobs.log_group_read_resource).
                "Sid": "ReadNodeBootPhases",
                "Effect": "Allow",
                "Action": "logs:GetLogEvents",
                "Resource": f"arn:{partition}:logs:{region}:{account_id}:log-group:{job_log_group_name(name_base)}"
                            f":log-stream:{BOOT_PHASE_STREAM_PREFIX}{autoscaling_group_name}/*",
            },
            {
                "Sid": "ReadGroupToken",
                "Effect": "Allow",
                "Action": "ssm:GetParameter",
                "Resource": token_parameter_arn,
            },
            {
                "Sid": "DecryptGroupTokenThroughParameterStore",
                "Effect": "Allow",
                "Action": "kms:Decrypt",
                "Resource": key_arn,
                "Condition": {"StringEquals": {"kms:ViaService": f"ssm.{region}.amazonaws.com",
                                               "kms:EncryptionContext:PARAMETER_ARN": token_parameter_arn}},
            },
        ],
    }
