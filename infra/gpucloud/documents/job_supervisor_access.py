"""Who may do what for the job supervisor: the state machine's role (trust and permissions) and
the team's statements to start, follow and stop supervised jobs.

Each action is cited against the Service Authorization Reference ("Actions, resources, and
condition keys for <service>"; all read 2026-11-28): where the reference lists a resource type
for an action the statement names the stack's own resource, where it lists none it stands on `*`.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpucloud.documents.services import Document
from gpucloud.naming import STACK_TAG, autoscaling_group_arn_pattern

LOG_DELIVERY_ACTIONS = [
    "logs:CreateLogDelivery", "logs:DeleteLogDelivery", "logs:DescribeLogGroups", "logs:DescribeResourcePolicies",
    "logs:GetLogDelivery", "logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:UpdateLogDelivery",
]
"""What a state machine's role needs to log to CloudWatch Logs (Step Functions developer guide,
"Using CloudWatch Logs to log execution history in Step Functions", IAM policy; read 2026-11-28).
The reference lists no resource type for the log-delivery actions, DescribeLogGroups or
DescribeResourcePolicies, and PutResourcePolicy's is account-wide: all stand on `*`."""


def state_machine_arn(partition: str, region: str, account_id: str, name: str) -> str:
    return f"arn:{partition}:states:{region}:{account_id}:stateMachine:{name}"


def supervisor_trust_policy(*, partition: str, region: str, account_id: str, name: str) -> Document:
    """Step Functions assumes the role for this state machine only: `aws:SourceArn` and
    `aws:SourceAccount` keep another account's or machine's executions out (Step Functions
    developer guide, "Cross-service confused deputy prevention"; read 2026-11-28)."""
    return {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "states.amazonaws.com"}, "Action": "sts:AssumeRole",
        "Condition": {"StringEquals": {"aws:SourceAccount": account_id},
                      "ArnLike": {"aws:SourceArn": state_machine_arn(partition, region, account_id, name)}}}]}


def supervisor_role_policy(*, partition: str, region: str, account_id: str, name_base: str, machine_name: str,
                           document_name: str,
                           group_names: Sequence[str], topic_arn: str, key_arn: str, bucket: str | None,
                           jobs_prefix: str | None) -> Document:
    """What the supervisor's tasks call, and no more:

    - DescribeAutoScalingGroups and DescribeInstances: no resource type in the reference (Auto
      Scaling, EC2), so `*`.
    - SetDesiredCapacity: `autoScalingGroup*` with `autoscaling:ResourceTag/${TagKey}`: the stack's
      groups by name and tag.
    - SendCommand: `document*` and `instance` with `ssm:resourceTag/${TagKey}`: the stack's job
      document and its tagged instances. GetCommandInvocation and CancelCommand: no resource type, `*`.
    - PutObject: `object*`: the attempt records under `<write prefix>jobs/`, through S3 with the
      project key (kms:GenerateDataKey on `key*`, `kms:ViaService`).
    - Publish: `topic*`: the stack's alerts topic, which the project key encrypts; SNS asks for
      kms:GenerateDataKey and kms:Decrypt of a publisher (SNS developer guide, "Configuring
      AWS KMS permissions"; read 2026-11-28), held to `kms:ViaService` sns.
    - The log-delivery actions (LOG_DELIVERY_ACTIONS).
    - With a write prefix, GetObject and DeleteObject of the jobs' markers under `<prefix>groups/`
      (kms:Decrypt through S3 for the read), and ListBucket (`bucket*`) held by `s3:prefix` to
      that folder, to find a group's markers (S3 API reference, ListObjectsV2, "Permissions"; read 2026-11-28).
    - StartExecution on `stateMachine*`: itself, for a continuation; DescribeExecution on
      `execution*` (and `express*`, as parliament pairs them): its own executions, whose status
      the node-left branch reads (documents/job_supervisor_continuation.py)."""
    statements: list[Document] = [
        {"Sid": "ReadGroupsAndInstances", "Effect": "Allow",
         "Action": ["autoscaling:DescribeAutoScalingGroups", "ec2:DescribeInstances"], "Resource": "*"},
        {"Sid": "ScaleStackGroups", "Effect": "Allow", "Action": "autoscaling:SetDesiredCapacity",
         "Resource": [autoscaling_group_arn_pattern(partition, region, account_id, name) for name in sorted(group_names)],
         "Condition": {"StringEquals": {f"autoscaling:ResourceTag/{STACK_TAG}": name_base}}},
        {"Sid": "SendJobDocumentToStackInstances", "Effect": "Allow", "Action": "ssm:SendCommand",
         "Resource": [f"arn:{partition}:ssm:{region}:{account_id}:document/{document_name}",
                      f"arn:{partition}:ec2:{region}:{account_id}:instance/*"],
         "Condition": {"StringEquals": {f"ssm:resourceTag/{STACK_TAG}": name_base}}},
        {"Sid": "CommandStatusHasNoResourceLevelPermissions", "Effect": "Allow",
         "Action": ["ssm:CancelCommand", "ssm:GetCommandInvocation"], "Resource": "*"},
        {"Sid": "NotifyStackTopic", "Effect": "Allow", "Action": "sns:Publish", "Resource": topic_arn},
        {"Sid": "TopicWithProjectKey", "Effect": "Allow", "Action": ["kms:Decrypt", "kms:GenerateDataKey"],
         "Resource": key_arn, "Condition": {"StringEquals": {"kms:ViaService": f"sns.{region}.amazonaws.com"}}},
        {"Sid": "LogDeliveryHasNoResourceLevelPermissions", "Effect": "Allow", "Action": LOG_DELIVERY_ACTIONS,
         "Resource": "*"},
    ]
    if bucket and jobs_prefix:
        statements += [
            {"Sid": "AttemptRecordsUnderJobsPrefix", "Effect": "Allow", "Action": "s3:PutObject",
             "Resource": f"arn:{partition}:s3:::{bucket}/{jobs_prefix}*"},
            {"Sid": "GroupMarkers", "Effect": "Allow", "Action": ["s3:DeleteObject", "s3:GetObject"],
             "Resource": f"arn:{partition}:s3:::{bucket}/{jobs_prefix}groups/*"},
            {"Sid": "FindGroupMarkers", "Effect": "Allow", "Action": "s3:ListBucket",
             "Resource": f"arn:{partition}:s3:::{bucket}",
             "Condition": {"StringLike": {"s3:prefix": f"{jobs_prefix}groups/*"}}},
            {"Sid": "RecordsThroughS3WithProjectKey", "Effect": "Allow", "Action": ["kms:Decrypt", "kms:GenerateDataKey"],
             "Resource": key_arn, "Condition": {"StringEquals": {"kms:ViaService": f"s3.{region}.amazonaws.com"}}},
        ]
    prefix = f"arn:{partition}:states:{region}:{account_id}"
    statements += [
        {"Sid": "ContinueOwnExecutions", "Effect": "Allow", "Action": "states:StartExecution",
         "Resource": state_machine_arn(partition, region, account_id, machine_name)},
        {"Sid": "ReadOwnExecutions", "Effect": "Allow", "Action": "states:DescribeExecution",
         "Resource": [f"{prefix}:execution:{machine_name}:*", f"{prefix}:express:{machine_name}:*"]},
    ]
    return {"Version": "2012-10-17", "Statement": statements}


def supervised_job_statements(*, partition: str, region: str, account_id: str, machine_name: str) -> list[Document]:
    """The team's part: StartExecution on `stateMachine*`; DescribeExecution and StopExecution on
    `execution*`, the stack's machine's executions only (`execution:<machine>:*`); ListExecutions
    on `stateMachine*` (`jobs`).
    GetCallerIdentity, which finds the account and partition, needs no permission (STS API
    reference, GetCallerIdentity; read 2026-11-28)."""
    machine = state_machine_arn(partition, region, account_id, machine_name)
    prefix = f"arn:{partition}:states:{region}:{account_id}"
    # The reference lists ListExecutions also on `mapRun` and DescribeExecution also on `express`:
    # the machine's own Map Runs and express executions (it has none: a Standard workflow with
    # inline Maps), named so that parliament finds each action's resource types in one statement.
    return [
        {"Sid": "StartAndListStackJobs", "Effect": "Allow", "Action": ["states:ListExecutions", "states:StartExecution"],
         "Resource": [machine, f"{prefix}:mapRun:{machine_name}/*"]},
        {"Sid": "FollowAndStopStackJobs", "Effect": "Allow", "Action": ["states:DescribeExecution", "states:StopExecution"],
         "Resource": [f"{prefix}:execution:{machine_name}:*", f"{prefix}:express:{machine_name}:*"]},
    ]


def events_trust_policy(*, account_id: str, rule_arn: str) -> Document:
    """EventBridge assumes the role for this rule only (EventBridge user guide, "Using
    identity-based policies for Amazon EventBridge", confused deputy; read 2026-11-28)."""
    return {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "events.amazonaws.com"}, "Action": "sts:AssumeRole",
        "Condition": {"StringEquals": {"aws:SourceAccount": account_id}, "ArnEquals": {"aws:SourceArn": rule_arn}}}]}


def events_role_policy(machine_arn: str) -> Document:
    """A Step Functions target needs a role that may StartExecution on the state machine
    (EventBridge user guide, "Amazon EventBridge targets", Step Functions; read 2026-11-28)."""
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "StartJobSupervisor", "Effect": "Allow", "Action": "states:StartExecution", "Resource": machine_arn}]}
