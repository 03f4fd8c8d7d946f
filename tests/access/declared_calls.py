"""The calls no test here can make, declared with the AWS page that says so (each read 2026-11-28):
AWS service principals acting for the stack, and AWS's own agents on the node (the CloudWatch agent,
the SSM Agent, docker pulling from ECR), whose calls gpucloud.config.node_endpoints.AGENT_CALLS
names by endpoint. test_access_calls.py keeps access_calls.json holding exactly these.

Why each cannot be measured on moto: the service principals' calls are made inside AWS, and moto
runs none of them (its CloudWatch does not fire alarm actions, Budgets sends no notification, Logs,
Backup, FSx and Auto Scaling never call KMS or S3 for the stack, no load balancer delivers logs);
the agents and mount-s3 are binaries the tests do not run. Everything the project's own code calls,
and the commands it prints (through their AWS CLI or plugin's API calls), is measured instead.

`principal`, where given, is who AWS sees make the call when that is a role or another account, not
the service principal of `actor`: FSx's per-file-system service-linked role, the stack's backup
role, the region's Elastic Load Balancing log writer (documents/load_balancer_logs.log_writer).
"""

from __future__ import annotations

from gpucloud.config.node_endpoints import AGENT_CALLS

P, R, A = "${partition}", "${region}", "${account}"
KEY = "${keyArn}"
TOPIC = "${topicArn}"
EBS_CONTEXT = {"kms:EncryptionContextKeys": ["aws:ebs:id"], "kms:EncryptionContext:aws:ebs:id": "${volumeId}"}
"""The encryption context EBS sends with a volume's data key (KMS developer guide, "How Amazon
Elastic Block Store (Amazon EBS) uses AWS KMS": encryption context)."""
FSX_S3_ROLE = f"arn:{P}:iam::{A}:role/aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/AWSServiceRoleForFSxS3Access_${{fileSystemId}}"

FSX_ROLES = "declared: Using service-linked roles for Amazon FSx (FSx for Lustre user guide), read 2026-11-28"
FSX_LINKS = "declared: Linking your file system to an Amazon S3 bucket (FSx for Lustre user guide), read 2026-11-28"
ELB_LOGS = "declared: Enable access logs for your Application Load Balancer (Elastic Load Balancing user guide), read 2026-11-28"
SNS_KEYS = ("declared: Enable compatibility between event sources from AWS services and encrypted topics "
            "(Amazon SNS developer guide), read 2026-11-28")
ALARMS = "declared: Using Amazon CloudWatch alarms, Amazon SNS topic actions (CloudWatch user guide), read 2026-11-28"
BUDGETS = "declared: Creating an Amazon SNS topic for budget notifications (AWS Cost Management user guide), read 2026-11-28"
LOGS_KEY = "declared: Encrypt log data in CloudWatch Logs using AWS Key Management Service (CloudWatch Logs user guide), read 2026-11-28"
AUTOSCALING_KEY = ("declared: Required AWS KMS key policy for use with encrypted volumes (Amazon EC2 Auto Scaling user guide), "
                   "read 2026-11-28")
BACKUP = "declared: Encryption for backups in AWS Backup (AWS Backup developer guide), read 2026-11-28"
AMP_ALERTS = ("declared: Give Amazon Managed Service for Prometheus permission to send alert messages to your Amazon SNS "
              "topic (AMP user guide), read 2026-11-28")
CW_AGENT = "declared: Create IAM roles and users for use with the CloudWatch agent (CloudWatch user guide), read 2026-11-28"
SSM_AGENT = ("declared: Use VPC endpoints to improve the security of EC2 instances (Systems Manager user guide) and "
             "aws/amazon-ssm-agent cloudwatchlogspublisher, read 2026-11-28")
MOUNTPOINT = "declared: awslabs/mountpoint-s3 doc/CONFIGURATION.md, IAM permissions, read 2026-11-28"
ECR_PULL = ("declared: Amazon ECR interface VPC endpoints (AWS PrivateLink) and Private repository policies, "
            "pulling an image (Amazon ECR user guide), read 2026-11-28")


def call(actor, feature, source, action, resource, context=None, endpoint=None, principal=None) -> dict:
    entry = {"actor": actor, "feature": feature, "measuredBy": source, "action": action, "resource": resource,
             "context": dict(sorted((context or {}).items())), "endpoint": endpoint}
    return entry | ({"principal": principal} if principal else {})


def _fsx() -> list[dict]:
    """FSx reaches the linked prefixes of the data bucket with the file system's own S3 role: it
    lists and reads them for import, writes the write prefixes on export, and keeps the bucket's
    event notifications for automatic import (documents/file_system_bucket.py grants exactly these)."""
    actor, feature, bucket = "service:s3.data-source.lustre.fsx.amazonaws.com", "storage.lustre", f"arn:{P}:s3:::${{dataBucket}}"
    calls = [call(actor, feature, FSX_LINKS, "s3:ListBucket", bucket, {"s3:prefix": prefix}, principal=FSX_S3_ROLE)
             for prefix in ("${readPrefix}", "${writePrefix}")]
    calls += [call(actor, feature, FSX_LINKS, action, bucket, principal=FSX_S3_ROLE)
              for action in ("s3:GetBucketNotification", "s3:PutBucketNotification")]
    calls += [call(actor, feature, FSX_ROLES, "s3:GetObject", f"{bucket}/{prefix}${{objectKey}}", principal=FSX_S3_ROLE)
              for prefix in ("${readPrefix}", "${writePrefix}")]
    calls.append(call(actor, feature, FSX_ROLES, "s3:PutObject", f"{bucket}/${{writePrefix}}${{objectKey}}", principal=FSX_S3_ROLE))
    return calls


def _topic_publishers() -> list[dict]:
    """CloudWatch alarms, AWS Budgets and AMP's alert manager publish to the encrypted topic: the
    topic policy must let them publish, and the key policy let them make the data key SNS encrypts
    the message with."""
    publishers = (
        ("cloudwatch.amazonaws.com", "monitoring.alarms", ALARMS, f"arn:{P}:cloudwatch:{R}:{A}:alarm:${{alarmName}}"),
        ("budgets.amazonaws.com", "budget", BUDGETS, f"arn:{P}:budgets::{A}:budget/${{budgetName}}"),
        ("aps.amazonaws.com", "monitoring.prometheus", AMP_ALERTS, f"arn:{P}:aps:{R}:{A}:workspace/${{workspaceId}}"),
    )
    calls = []
    for service, feature, source, source_arn in publishers:
        context = {"aws:SourceAccount": A, "aws:SourceArn": source_arn}
        calls.append(call(f"service:{service}", feature, source, "sns:Publish", TOPIC, context))
        if service == "aps.amazonaws.com":
            calls.append(call(f"service:{service}", feature, source, "sns:GetTopicAttributes", TOPIC, context))
        calls += [call(f"service:{service}", feature, SNS_KEYS, action, KEY, context)
                  for action in ("kms:Decrypt", "kms:GenerateDataKey")]
    return calls


def _logs() -> list[dict]:
    """CloudWatch Logs encrypts and decrypts a log group's events under the key, with the group's
    ARN as encryption context: each of the stack's log groups under the key (`${encryptedLogGroup}`,
    the plan's: the jobs group, a created network's flow logs, the Prometheus workspace's)."""
    actor = f"service:logs.{R}.amazonaws.com"
    context = {"kms:EncryptionContext:aws:logs:arn": f"arn:{P}:logs:{R}:{A}:log-group:${{encryptedLogGroup}}"}
    return [call(actor, "logGroups", LOGS_KEY, action, KEY, context) for action in ("kms:Decrypt", "kms:GenerateDataKey")]


def _backup() -> list[dict]:
    """AWS Backup snapshots the encrypted persistent volumes with the stack's backup role: an EBS
    backup keeps its volume's key, which the role must have access to. What it calls is what AWS's
    own policy for that role grants for EBS (AWSBackupServiceRolePolicyForBackup, AWS managed policy
    reference, read 2026-11-28, as moto/iam/aws_managed_policies.py copies it): kms:DescribeKey, a
    grant for an AWS resource, and a data key through ec2.<region> with EBS's encryption context."""
    role = f"arn:{P}:iam::{A}:role/gpu-cloud-${{nameBase}}-backup"
    via = {"kms:ViaService": f"ec2.{R}.amazonaws.com", "kms:CallerAccount": A}
    calls = [call("service:backup.amazonaws.com", "backup", BACKUP, "kms:DescribeKey", KEY, via, principal=role),
             call("service:backup.amazonaws.com", "backup", BACKUP, "kms:GenerateDataKeyWithoutPlaintext", KEY,
                  {**via, **EBS_CONTEXT}, principal=role)]
    calls.append(call("service:backup.amazonaws.com", "backup", BACKUP, "kms:CreateGrant", KEY,
                      {**via, "kms:GrantIsForAWSResource": "true"}, principal=role))
    return calls


def _autoscaling() -> list[dict]:
    """Auto Scaling launches each node with its root volume encrypted under the key, with its
    service-linked role: that role uses the key and makes a grant for the instance's volumes."""
    role = f"arn:{P}:iam::{A}:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling"
    actor = "service:autoscaling.amazonaws.com"
    calls = [call(actor, "groups", AUTOSCALING_KEY, action, KEY, principal=role)
             for action in ("kms:Decrypt", "kms:DescribeKey", "kms:GenerateDataKeyWithoutPlaintext", "kms:ReEncryptFrom")]
    calls.append(call(actor, "groups", AUTOSCALING_KEY, "kms:CreateGrant", KEY, {"kms:GrantIsForAWSResource": "true"}, principal=role))
    return calls


def _load_balancer_logs() -> list[dict]:
    """Elastic Load Balancing writes a group's access logs under `<prefix>/AWSLogs/<account>/`."""
    resource = f"arn:{P}:s3:::${{endpointLogsBucket}}/${{accessLogsPrefix}}/AWSLogs/{A}/${{objectKey}}"
    return [call("service:logdelivery.elasticloadbalancing.amazonaws.com", "endpoint.accessLogs", ELB_LOGS,
                 "s3:PutObject", resource, principal="${elbLogWriter}")]


def _mountpoint() -> list[dict]:
    """mount-s3 on the node, with the node role: it lists a mounted prefix and reads its objects;
    a read-write mount (the write prefixes, `--allow-overwrite`) writes and abandons uploads. With
    `storage.s3Mount.install: download` the node first fetches the package unsigned from AWS's
    release bucket through the S3 gateway endpoint (node/shared_storage.py MOUNT_S3_RELEASE)."""
    bucket = f"arn:{P}:s3:::${{dataBucket}}"
    calls = [call("node", "storage.s3Mount", MOUNTPOINT, "s3:ListBucket", bucket, {"s3:prefix": prefix}, "s3")
             for prefix in ("${readPrefix}", "${writePrefix}")]
    calls += [call("node", "storage.s3Mount", MOUNTPOINT, "s3:GetObject", f"{bucket}/{prefix}${{objectKey}}", endpoint="s3")
              for prefix in ("${readPrefix}", "${writePrefix}")]
    calls += [call("node", "storage.s3Mount", MOUNTPOINT, action, f"{bucket}/${{writePrefix}}${{objectKey}}", endpoint="s3")
              for action in ("s3:AbortMultipartUpload", "s3:PutObject")]
    calls.append(call("node", "storage.s3Mount", MOUNTPOINT, "s3:GetObject",
                      f"arn:{P}:s3:::mountpoint-s3-release/${{objectKey}}", endpoint="s3", principal="anonymous"))
    return calls


def _node_agents() -> list[dict]:
    """AWS's agents on the node, with the node role, for the node features AGENT_CALLS names."""
    instance = f"arn:{P}:ec2:{R}:{A}:instance/${{instanceId}}"
    repository = f"arn:{P}:ecr:{R}:{A}:repository/${{repository}}"
    jobs = f"arn:{P}:logs:{R}:{A}:log-group:/gpu-cloud/${{nameBase}}/jobs"
    declared = {
        "cloudWatchAgent": [
            call("node", "cloudWatchAgent", CW_AGENT, "cloudwatch:PutMetricData", "*", {"cloudwatch:namespace": "CWAgent"}, "monitoring"),
            call("node", "cloudWatchAgent", CW_AGENT, "ec2:DescribeTags", "*", endpoint="ec2"),
            # the boot-phase lines, into the node's own stream of the job log group (userdata/render.py)
            call("node", "cloudWatchAgent", CW_AGENT, "logs:CreateLogStream", f"{jobs}:*", endpoint="logs"),
            call("node", "cloudWatchAgent", CW_AGENT, "logs:PutLogEvents",
                 f"{jobs}:log-stream:boot-phases/gpu-cloud-${{nameBase}}-${{group}}/${{instanceId}}", endpoint="logs")],
        "sessionManager": [
            call("node", "sessionManager", SSM_AGENT, "ssm:UpdateInstanceInformation", instance,
                 {"aws:ResourceTag/gpu-cloud:stack": "${nameBase}", "ssm:resourceTag/gpu-cloud:stack": "${nameBase}"}, "ssm"),
            *(call("node", "sessionManager", SSM_AGENT, f"ssmmessages:{action}", "*", endpoint="ssmmessages")
              for action in ("CreateControlChannel", "OpenControlChannel")),
            call("node", "sessionManager", SSM_AGENT, "ec2messages:GetMessages", "*", endpoint="ec2messages")],
        "jobOutput": [
            call("node", "jobOutput", SSM_AGENT, "logs:DescribeLogGroups", "*", endpoint="logs"),
            call("node", "jobOutput", SSM_AGENT, "logs:CreateLogStream", f"{jobs}:*", endpoint="logs"),
            call("node", "jobOutput", SSM_AGENT, "logs:PutLogEvents", f"{jobs}:log-stream:${{logStream}}", endpoint="logs")],
    }
    # The layer download follows the pre-signed URL GetDownloadUrlForLayer returns: ECR signs it,
    # so no policy of the node's decides it, only the S3 gateway endpoint's (ECR user guide,
    # "Amazon ECR interface VPC endpoints", minimum S3 gateway endpoint policy; read 2026-11-28).
    for feature in AGENT_CALLS:
        if feature.startswith("docker"):
            declared[feature] = [
                *(call("node", feature, ECR_PULL, action, repository, endpoint="ecr.dkr")
                  for action in ("ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer")),
                call("node", feature, ECR_PULL, "s3:GetObject", f"arn:{P}:s3:::prod-{R}-starport-layer-bucket/${{objectKey}}",
                     endpoint="s3", principal="anonymous")]
    return [entry for feature in AGENT_CALLS for entry in declared[feature]]


def declared_calls() -> list[dict]:
    return [*_fsx(), *_topic_publishers(), *_logs(), *_backup(), *_autoscaling(), *_load_balancer_logs(), *_mountpoint(),
            *_node_agents()]
