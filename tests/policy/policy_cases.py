"""Resources that pass and resources that break each review-gate rule.

Props use pulumi-aws v7 wire names (camelCase), as both the offline plan's mocks
and the policy engine see them.  Shared by the plain-function tests and the
policy-pack tests so both paths are held to the same cases.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from gpucloud.documents import s3_gateway_endpoint_policy
from gpucloud.documents.endpoints import interface_endpoint_policy
from gpucloud.policy import UNKNOWN, PlannedResource

ACCOUNT = "123456789012"
CMK_ARN = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
TAGS = {"Project": "vision", "Owner": "ml-platform", "CostCenter": "cc-42"}

VOLUME = "aws:ebs/volume:Volume"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
INSTANCE = "aws:ec2/instance:Instance"
KMS_KEY = "aws:kms/key:Key"
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
PROMETHEUS_WORKSPACE = "aws:amp/workspace:Workspace"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
SECURITY_GROUP_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
GROUP = "aws:autoscaling/group:Group"
SCHEDULE = "aws:autoscaling/schedule:Schedule"
SCALING_POLICY = "aws:autoscaling/policy:Policy"
ROLE = "aws:iam/role:Role"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
IAM_POLICY = "aws:iam/policy:Policy"
USER_POLICY = "aws:iam/userPolicy:UserPolicy"
GROUP_POLICY = "aws:iam/groupPolicy:GroupPolicy"
ROLE_POLICY_ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
ROLE_POLICY_ATTACHMENTS_EXCLUSIVE = "aws:iam/rolePolicyAttachmentsExclusive:RolePolicyAttachmentsExclusive"
BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
TOPIC_POLICY = "aws:sns/topicPolicy:TopicPolicy"
QUEUE_POLICY = "aws:sqs/queuePolicy:QueuePolicy"
TOPIC = "aws:sns/topic:Topic"
TOPIC_ARN = f"arn:aws:sns:us-east-1:{ACCOUNT}:vision-alerts"
QUEUE_ARN = f"arn:aws:sqs:us-east-1:{ACCOUNT}:vision-jobs"
VPC_ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"


def document(*statements: dict[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements)}


# The least-privilege node policy from the brief: parliament finds nothing in it.
NODE_POLICY = document(
    {
        "Sid": "ListProjectPrefix",
        "Effect": "Allow",
        "Action": "s3:ListBucket",
        "Resource": "arn:aws:s3:::acme-datasets",
        "Condition": {"StringLike": {"s3:prefix": ["projects/vision/*"]}},
    },
    {
        "Sid": "ReadWriteProjectPrefix",
        "Effect": "Allow",
        "Action": ["s3:GetObject", "s3:PutObject"],
        "Resource": "arn:aws:s3:::acme-datasets/projects/vision/*",
    },
    {"Sid": "UseProjectKey", "Effect": "Allow", "Action": ["kms:Decrypt", "kms:GenerateDataKey"], "Resource": CMK_ARN},
    {
        "Sid": "SessionManager",
        "Effect": "Allow",
        "Action": [
            "ssmmessages:CreateControlChannel",
            "ssmmessages:CreateDataChannel",
            "ssmmessages:OpenControlChannel",
            "ssmmessages:OpenDataChannel",
            "ec2messages:AcknowledgeMessage",
            "ec2messages:DeleteMessage",
            "ec2messages:FailMessage",
            "ec2messages:GetEndpoint",
            "ec2messages:GetMessages",
            "ec2messages:SendReply",
            "ssm:UpdateInstanceInformation",
        ],
        "Resource": "*",
    },
    {
        "Sid": "GpuMetrics",
        "Effect": "Allow",
        "Action": "cloudwatch:PutMetricData",
        "Resource": "*",
        "Condition": {"StringEquals": {"cloudwatch:namespace": "GpuCloud"}},
    },
)

EC2_TRUST_POLICY = json.dumps(
    document({"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"})
)

WILDCARD_POLICY = document({"Effect": "Allow", "Action": "*", "Resource": "*"})

# The project's own topic policy (gpucloud.monitoring): AWS services of this account publish.
SERVICES_PUBLISH_POLICY = document(
    {
        "Sid": "AlarmsAndBudgetsOfThisAccountPublish",
        "Effect": "Allow",
        "Principal": {"Service": ["cloudwatch.amazonaws.com", "budgets.amazonaws.com"]},
        "Action": "sns:Publish",
        "Resource": TOPIC_ARN,
        "Condition": {"StringEquals": {"aws:SourceAccount": ACCOUNT}},
    }
)

PUBLIC_BUCKET_POLICY = document({"Effect": "Allow", "Principal": "*", "Action": "s3:*", "Resource": "*"})

TLS_ONLY_BUCKET_POLICY = document(
    {
        "Sid": "DenyInsecureTransport",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:*",
        "Resource": ["arn:aws:s3:::acme-datasets", "arn:aws:s3:::acme-datasets/*"],
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    },
    {
        "Sid": "OrganizationReadsPublicPrefix",
        "Effect": "Allow",
        "Principal": "*",
        "Action": "s3:GetObject",
        "Resource": "arn:aws:s3:::acme-datasets/shared/*",
        "Condition": {"StringEquals": {"aws:PrincipalOrgID": "o-a1b2c3d4e5"}},
    },
)

KEY_POLICY = document(
    {
        "Sid": "AccountRoot",
        "Effect": "Allow",
        "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
        "Action": "kms:*",
        "Resource": "*",
    },
    {
        "Sid": "NodesUseKey",
        "Effect": "Allow",
        "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:role/vision-gpu-node"},
        "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
        "Resource": "*",
    },
)


def encrypted_device(name: str = "/dev/xvda", **ebs: Any) -> dict[str, Any]:
    settings = {"encrypted": "true", "kmsKeyId": CMK_ARN, "volumeSize": 200, "volumeType": "gp3"}
    settings.update(ebs)
    return {"deviceName": name, "ebs": settings}


def launch_template(**overrides: Any) -> dict[str, Any]:
    props: dict[str, Any] = {
        "namePrefix": "vision-gpu-",
        "imageId": "ami-0123456789abcdef0",
        "instanceType": "g5.xlarge",
        "metadataOptions": {"httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": 1},
        "blockDeviceMappings": [encrypted_device()],
        "networkInterfaces": [{"deviceIndex": 0, "associatePublicIpAddress": "false", "subnetId": "subnet-1"}],
        "tags": dict(TAGS),
    }
    props.update(overrides)
    return props


def instance(**overrides: Any) -> dict[str, Any]:
    props: dict[str, Any] = {
        "ami": "ami-0123456789abcdef0",
        "instanceType": "g5.xlarge",
        "metadataOptions": {"httpTokens": "required", "httpPutResponseHopLimit": 1},
        "rootBlockDevice": {"encrypted": True, "kmsKeyId": CMK_ARN, "volumeSize": 100},
        "associatePublicIpAddress": False,
        "tags": dict(TAGS),
    }
    props.update(overrides)
    return props


def group(**overrides: Any) -> dict[str, Any]:
    props: dict[str, Any] = {
        "name": "vision-gpu-asg",
        "minSize": 0,
        "maxSize": 8,
        "launchTemplate": {"id": "lt-0abc", "version": "$Latest"},
        "vpcZoneIdentifiers": ["subnet-1"],
        "tags": [{"key": key, "value": value, "propagateAtLaunch": True} for key, value in TAGS.items()],
    }
    props.update(overrides)
    return props


def spot_group(**overrides: Any) -> dict[str, Any]:
    return group(
        launchTemplate=None,
        mixedInstancesPolicy={
            "instancesDistribution": {"onDemandBaseCapacity": 0, "onDemandPercentageAboveBaseCapacity": 0},
            "launchTemplate": {
                "launchTemplateSpecification": {"launchTemplateId": "lt-0abc", "version": "$Latest"},
                "overrides": [{"instanceType": "g5.xlarge"}, {"instanceType": "g6.xlarge"}],
            },
        },
        **overrides,
    )


def s3_endpoint(policy: Any) -> dict[str, Any]:
    """An S3 gateway endpoint's inputs; `policy` a document, its JSON text or None (AWS's default)."""
    props: dict[str, Any] = {"vpcId": "vpc-1", "serviceName": "com.amazonaws.us-east-1.s3", "vpcEndpointType": "Gateway",
                             "routeTableIds": ["rtb-1"], "tags": dict(TAGS)}
    if policy is not None:
        props["policy"] = policy if isinstance(policy, str) else json.dumps(policy)
    return props


def interface_endpoint(service: str, policy: Any) -> dict[str, Any]:
    """An interface endpoint's inputs; `policy` a document, its JSON text or None (AWS's default)."""
    props = {**s3_endpoint(policy), "serviceName": f"com.amazonaws.us-east-1.{service}", "vpcEndpointType": "Interface",
             "subnetIds": ["subnet-1"], "privateDnsEnabled": True}
    props.pop("routeTableIds")
    return props


@dataclass(frozen=True)
class Case:
    """One resource checked against one rule; ``violates`` says whether it should be reported."""

    id: str
    policy: str
    type: str
    props: dict[str, Any]
    violates: bool
    message_hint: str = ""
    """A fragment the violation message must contain."""


ALB = "aws:lb/loadBalancer:LoadBalancer"
ALB_LISTENER = "aws:lb/listener:Listener"
ALB_ARN = "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/public-lb/0123456789abcdef"

SPOT_CAPACITY = "gpu-cloud:facts:SpotCapacity"


def spot_capacity(*scores):
    """One group's scores per zone as the offline plan hands them to capacity-feasible."""
    zones = ("us-east-1a", "us-east-1b", "us-east-1c")
    return {"group": "batch", "instanceTypes": ["g5.xlarge", "g6.xlarge"], "targetCapacity": 4,
            "candidates": [{"zone": zone, "score": score} for zone, score in zip(zones, scores)],
            "fixes": [{"fix": "list more instance types of the same GPU", "cost": "each at its own price"}]}


RESOURCE_CASES: list[Case] = [
    # capacity-feasible
    Case("one-zone-scores-thin", "capacity-feasible", SPOT_CAPACITY, spot_capacity(3, 4), False),
    Case("every-zone-unlikely", "capacity-feasible", SPOT_CAPACITY, spot_capacity(3, 1, None), True,
         "every zone it may launch spot into scores below 4 of 10"),
    Case("no-zone-scored", "capacity-feasible", SPOT_CAPACITY, spot_capacity(None), False),
    # load-balancer-internal
    Case("internal-load-balancer", "load-balancer-internal", ALB, {"internal": True, "tags": TAGS}, False),
    Case("undeclared-public-load-balancer", "load-balancer-internal", ALB, {"tags": TAGS}, True, "internet-facing"),
    Case("declared-public-load-balancer", "load-balancer-internal", ALB,
         {"internal": False, "tags": {**TAGS, "gpu-cloud:internet-facing": "declared"}}, False),
    # monitoring-data-encrypted-with-cmk
    Case("log-group-with-cmk", "monitoring-data-encrypted-with-cmk", LOG_GROUP,
         {"name": "/gpu-cloud-vpc/p/flow", "kmsKeyId": CMK_ARN, "tags": TAGS}, False),
    Case("log-group-aws-owned", "monitoring-data-encrypted-with-cmk", LOG_GROUP,
         {"name": "/gpu-cloud-vpc/p/flow", "tags": TAGS}, True, "CloudWatch log group is encrypted with an AWS-owned key"),
    Case("workspace-with-cmk", "monitoring-data-encrypted-with-cmk", PROMETHEUS_WORKSPACE,
         {"alias": "p", "kmsKeyArn": UNKNOWN, "tags": TAGS}, False),
    Case("workspace-aws-owned", "monitoring-data-encrypted-with-cmk", PROMETHEUS_WORKSPACE,
         {"alias": "p", "tags": TAGS}, True, "no kmsKeyArn"),
    # ebs-encrypted-with-cmk
    Case(
        "volume-with-cmk",
        "ebs-encrypted-with-cmk",
        VOLUME,
        {"size": 500, "encrypted": True, "kmsKeyId": CMK_ARN, "tags": TAGS},
        False,
    ),
    Case("volume-unencrypted", "ebs-encrypted-with-cmk", VOLUME, {"size": 500, "tags": TAGS}, True, "not encrypted"),
    Case(
        "volume-default-key",
        "ebs-encrypted-with-cmk",
        VOLUME,
        {"size": 500, "encrypted": True, "kmsKeyId": "alias/aws/ebs"},
        True,
        "alias/aws/ebs",
    ),
    Case("volume-no-key-id", "ebs-encrypted-with-cmk", VOLUME, {"size": 500, "encrypted": True}, True, "no kmsKeyId"),
    Case("launch-template-with-cmk", "ebs-encrypted-with-cmk", LAUNCH_TEMPLATE, launch_template(), False),
    Case(
        "launch-template-string-false",
        "ebs-encrypted-with-cmk",
        LAUNCH_TEMPLATE,
        launch_template(blockDeviceMappings=[encrypted_device(encrypted="false")]),
        True,
        "/dev/xvda",
    ),
    Case(
        "launch-template-aws-alias-arn",
        "ebs-encrypted-with-cmk",
        LAUNCH_TEMPLATE,
        launch_template(
            blockDeviceMappings=[encrypted_device(kmsKeyId=f"arn:aws:kms:us-east-1:{ACCOUNT}:alias/aws/ebs")]
        ),
        True,
        "AWS-managed",
    ),
    Case(
        "launch-template-no-mappings",
        "ebs-encrypted-with-cmk",
        LAUNCH_TEMPLATE,
        launch_template(blockDeviceMappings=[]),
        True,
        "no blockDeviceMappings",
    ),
    Case("instance-with-cmk", "ebs-encrypted-with-cmk", INSTANCE, instance(), False),
    Case(
        "instance-unencrypted-data-device",
        "ebs-encrypted-with-cmk",
        INSTANCE,
        instance(ebsBlockDevices=[{"deviceName": "/dev/sdf", "encrypted": False, "volumeSize": 1000}]),
        True,
        "/dev/sdf",
    ),
    # file-system-encrypted-with-cmk
    Case("lustre-persistent-without-key", "file-system-encrypted-with-cmk", "aws:fsx/lustreFileSystem:LustreFileSystem",
         {"deploymentType": "PERSISTENT_2", "storageCapacity": 1200, "tags": TAGS}, True, "aws/fsx"),
    Case("lustre-persistent-aws-managed-key", "file-system-encrypted-with-cmk", "aws:fsx/lustreFileSystem:LustreFileSystem",
         {"deploymentType": "PERSISTENT_2", "kmsKeyId": "arn:aws:kms:us-east-1:123456789012:alias/aws/fsx", "tags": TAGS},
         True, "AWS-managed key"),
    Case("lustre-persistent-project-key", "file-system-encrypted-with-cmk", "aws:fsx/lustreFileSystem:LustreFileSystem",
         {"deploymentType": "PERSISTENT_2", "kmsKeyId": "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
          "tags": TAGS}, False),
    Case("lustre-scratch-takes-no-key", "file-system-encrypted-with-cmk", "aws:fsx/lustreFileSystem:LustreFileSystem",
         {"deploymentType": "SCRATCH_2", "storageCapacity": 1200, "tags": TAGS}, False),
    # kms-rotation-and-deletion-window
    Case(
        "key-rotating-default-window",
        "kms-rotation-and-deletion-window",
        KMS_KEY,
        {"enableKeyRotation": True, "tags": TAGS},
        False,
    ),
    Case(
        "key-rotating-30-days",
        "kms-rotation-and-deletion-window",
        KMS_KEY,
        {"enableKeyRotation": True, "deletionWindowInDays": 30.0},
        False,
    ),
    Case(
        "key-not-rotating",
        "kms-rotation-and-deletion-window",
        KMS_KEY,
        {"deletionWindowInDays": 30},
        True,
        "enableKeyRotation",
    ),
    Case(
        "key-short-window",
        "kms-rotation-and-deletion-window",
        KMS_KEY,
        {"enableKeyRotation": True, "deletionWindowInDays": 7},
        True,
        "at least 14",
    ),
    Case(
        "asymmetric-key-cannot-rotate",
        "kms-rotation-and-deletion-window",
        KMS_KEY,
        {"customerMasterKeySpec": "RSA_2048", "keyUsage": "SIGN_VERIFY"},
        False,
    ),
    # imdsv2-required
    Case("launch-template-imdsv2", "imdsv2-required", LAUNCH_TEMPLATE, launch_template(), False),
    Case("launch-template-hop-limit-2-for-containers", "imdsv2-required", LAUNCH_TEMPLATE,
         launch_template(metadataOptions={"httpTokens": "required", "httpPutResponseHopLimit": 2},
                         tags={**TAGS, "gpu-cloud:containers": "true"}), False),
    Case(
        "launch-template-hop-limit-2-without-containers",
        "imdsv2-required",
        LAUNCH_TEMPLATE,
        launch_template(metadataOptions={"httpTokens": "required", "httpPutResponseHopLimit": 2}),
        True,
        "runs no containers",
    ),
    Case(
        "launch-template-no-metadata-options",
        "imdsv2-required",
        LAUNCH_TEMPLATE,
        launch_template(metadataOptions=None),
        True,
        "httpTokens",
    ),
    Case(
        "launch-template-optional-tokens",
        "imdsv2-required",
        LAUNCH_TEMPLATE,
        launch_template(metadataOptions={"httpTokens": "optional"}),
        True,
        "IMDSv1",
    ),
    Case(
        "launch-template-hop-limit-3",
        "imdsv2-required",
        LAUNCH_TEMPLATE,
        launch_template(metadataOptions={"httpTokens": "required", "httpPutResponseHopLimit": 3.0}),
        True,
        "HopLimit",
    ),
    Case("instance-imdsv2", "imdsv2-required", INSTANCE, instance(), False),
    Case(
        "instance-optional-tokens",
        "imdsv2-required",
        INSTANCE,
        instance(metadataOptions={"httpTokens": "optional"}),
        True,
        "IMDSv1",
    ),
    # no-world-open-ingress
    Case(
        "security-group-vpc-only",
        "no-world-open-ingress",
        SECURITY_GROUP,
        {
            "vpcId": "vpc-1",
            "ingress": [{"protocol": "tcp", "fromPort": 22, "toPort": 22, "cidrBlocks": ["10.0.0.0/16"]}],
        },
        False,
    ),
    Case(
        "security-group-open-ssh",
        "no-world-open-ingress",
        SECURITY_GROUP,
        {
            "vpcId": "vpc-1",
            "ingress": [{"protocol": "tcp", "fromPort": 22.0, "toPort": 22.0, "cidrBlocks": ["0.0.0.0/0"]}],
        },
        True,
        "tcp 22",
    ),
    Case(
        "security-group-open-ipv6",
        "no-world-open-ingress",
        SECURITY_GROUP,
        {"ingress": [{"protocol": "-1", "fromPort": 0, "toPort": 0, "ipv6CidrBlocks": ["::/0"]}]},
        True,
        "::/0",
    ),
    Case(
        "security-group-open-egress-only",
        "no-world-open-ingress",
        SECURITY_GROUP,
        {"egress": [{"protocol": "-1", "fromPort": 0, "toPort": 0, "cidrBlocks": ["0.0.0.0/0"]}]},
        False,
    ),
    Case(
        "rule-egress-to-world",
        "no-world-open-ingress",
        SECURITY_GROUP_RULE,
        {
            "type": "egress",
            "protocol": "-1",
            "fromPort": 0,
            "toPort": 0,
            "cidrBlocks": ["0.0.0.0/0"],
            "securityGroupId": "sg-1",
        },
        False,
    ),
    Case(
        "rule-ingress-from-world",
        "no-world-open-ingress",
        SECURITY_GROUP_RULE,
        {
            "type": "ingress",
            "protocol": "tcp",
            "fromPort": 443,
            "toPort": 443,
            "cidrBlocks": ["0.0.0.0/0"],
            "securityGroupId": "sg-1",
        },
        True,
        "0.0.0.0/0",
    ),
    Case(
        "vpc-ingress-rule-private",
        "no-world-open-ingress",
        INGRESS_RULE,
        {
            "securityGroupId": "sg-1",
            "ipProtocol": "tcp",
            "fromPort": 22,
            "toPort": 22,
            "cidrIpv4": "10.0.0.0/16",
            "tags": TAGS,
        },
        False,
    ),
    Case(
        "vpc-ingress-rule-world-ipv6",
        "no-world-open-ingress",
        INGRESS_RULE,
        {"securityGroupId": "sg-1", "ipProtocol": "tcp", "fromPort": 22, "toPort": 22, "cidrIpv6": "::/0"},
        True,
        "::/0",
    ),
    # iam-least-privilege
    Case(
        "role-policy-least-privilege-json",
        "iam-least-privilege",
        ROLE_POLICY,
        {"role": "vision-node", "policy": json.dumps(NODE_POLICY)},
        False,
    ),
    Case(
        "role-policy-least-privilege-dict",
        "iam-least-privilege",
        ROLE_POLICY,
        {"role": "vision-node", "policy": NODE_POLICY},
        False,
    ),
    Case(
        "role-policy-wildcard",
        "iam-least-privilege",
        ROLE_POLICY,
        {"role": "vision-node", "policy": json.dumps(WILDCARD_POLICY)},
        True,
        "every action",
    ),
    Case(
        "role-policy-not-json",
        "iam-least-privilege",
        ROLE_POLICY,
        {"role": "vision-node", "policy": "{'Statement': []"},
        True,
        "not valid JSON",
    ),
    Case(
        "managed-policy-service-wildcard",
        "iam-least-privilege",
        IAM_POLICY,
        {
            "policy": json.dumps(
                document({"Effect": "Allow", "Action": "ec2:*", "Resource": "arn:aws:ec2:*:*:instance/*"})
            ),
            "tags": TAGS,
        },
        True,
        "every ec2 action",
    ),
    Case(
        "user-policy-s3-on-star",
        "iam-least-privilege",
        USER_POLICY,
        {"user": "ci", "policy": json.dumps(document({"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}))},
        True,
        "S3 and KMS",
    ),
    Case(
        "group-policy-kms-on-star",
        "iam-least-privilege",
        GROUP_POLICY,
        {"group": "ml", "policy": json.dumps(document({"Effect": "Allow", "Action": "kms:Decrypt", "Resource": "*"}))},
        True,
        "kms:Decrypt",
    ),
    Case(
        "role-policy-whole-bucket-objects",
        "iam-least-privilege",
        ROLE_POLICY,
        {
            "role": "r",
            "policy": json.dumps(
                document({"Effect": "Allow", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::acme-datasets/*"})
            ),
        },
        True,
        "key prefix",
    ),
    Case(
        "role-policy-bucket-wildcard-objects",
        "iam-least-privilege",
        ROLE_POLICY,
        {
            "role": "r",
            "policy": json.dumps(
                document({"Effect": "Allow", "Action": "s3:*Object*", "Resource": "arn:aws:s3:::acme-datasets*"})
            ),
        },
        True,
        "key prefix",
    ),
    Case(
        "role-policy-deny-star-is-fine",
        "iam-least-privilege",
        ROLE_POLICY,
        {
            "role": "r",
            "policy": json.dumps(
                document(
                    {
                        "Effect": "Deny",
                        "Action": "*",
                        "Resource": "*",
                        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                    }
                )
            ),
        },
        False,
    ),
    Case(
        "role-inline-policy-wildcard",
        "iam-least-privilege",
        ROLE,
        {
            "assumeRolePolicy": EC2_TRUST_POLICY,
            "inlinePolicies": [{"name": "everything", "policy": json.dumps(WILDCARD_POLICY)}],
            "tags": TAGS,
        },
        True,
        "inline policy 'everything'",
    ),
    Case(
        "role-trust-policy-exempt",
        "iam-least-privilege",
        ROLE,
        {
            "assumeRolePolicy": EC2_TRUST_POLICY,
            "inlinePolicies": [{"name": "node", "policy": json.dumps(NODE_POLICY)}],
            "tags": TAGS,
        },
        False,
    ),
    Case(
        "role-outputs-empty-inline-policy",
        "iam-least-privilege",
        ROLE,
        {
            "assumeRolePolicy": EC2_TRUST_POLICY,
            "inlinePolicies": [{"name": "", "policy": ""}],
        },
        False,
    ),
    Case(
        "role-policy-privilege-escalation",
        "iam-least-privilege",
        ROLE_POLICY,
        {
            "role": "r",
            "policy": json.dumps(
                document(
                    {
                        "Effect": "Allow",
                        "Action": ["iam:PutRolePolicy", "sts:AssumeRole"],
                        "Resource": f"arn:aws:iam::{ACCOUNT}:role/x",
                    }
                )
            ),
        },
        True,
        "parliament reports PRIVILEGE_ESCALATION",
    ),
    Case(
        "key-policy-root-full-control",
        "iam-least-privilege",
        KMS_KEY,
        {"enableKeyRotation": True, "policy": json.dumps(KEY_POLICY)},
        False,
    ),
    Case(
        "key-policy-full-control-to-role",
        "iam-least-privilege",
        KMS_KEY,
        {
            "enableKeyRotation": True,
            "policy": json.dumps(
                document(
                    {
                        "Effect": "Allow",
                        "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:role/admin"},
                        "Action": "kms:*",
                        "Resource": "*",
                    }
                )
            ),
        },
        True,
        "account root",
    ),
    Case(
        "key-policy-open-to-everyone",
        "iam-least-privilege",
        KMS_KEY,
        {
            "enableKeyRotation": True,
            "policy": json.dumps(
                document({"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "kms:Decrypt", "Resource": "*"})
            ),
        },
        True,
        "every principal",
    ),
    Case(
        "key-policy-everyone-in-the-account-through-ec2",
        "iam-least-privilege",
        KMS_KEY,
        {
            "enableKeyRotation": True,
            "policy": json.dumps(
                document(
                    {
                        "Effect": "Allow",
                        "Principal": {"AWS": "*"},
                        "Action": ["kms:Decrypt", "kms:CreateGrant"],
                        "Resource": "*",
                        "Condition": {
                            "StringEquals": {"kms:CallerAccount": ACCOUNT, "kms:ViaService": "ec2.us-east-1.amazonaws.com"}
                        },
                    }
                )
            ),
        },
        False,
    ),
    # iam-least-privilege: resource policies
    Case(
        "bucket-policy-public-everything",
        "iam-least-privilege",
        BUCKET_POLICY,
        {"bucket": "acme-datasets", "policy": json.dumps(PUBLIC_BUCKET_POLICY)},
        True,
        "every principal",
    ),
    Case(
        "bucket-policy-service-wildcard",
        "iam-least-privilege",
        BUCKET_POLICY,
        {"bucket": "acme-datasets", "policy": json.dumps(PUBLIC_BUCKET_POLICY)},
        True,
        "every s3 action",
    ),
    Case(
        "bucket-policy-tls-only-and-organization-read",
        "iam-least-privilege",
        BUCKET_POLICY,
        {"bucket": "acme-datasets", "policy": json.dumps(TLS_ONLY_BUCKET_POLICY)},
        False,
    ),
    Case(
        "topic-policy-services-of-this-account",
        "iam-least-privilege",
        TOPIC_POLICY,
        {"arn": TOPIC_ARN, "policy": json.dumps(SERVICES_PUBLISH_POLICY)},
        False,
    ),
    Case(
        "topic-policy-anyone-publishes",
        "iam-least-privilege",
        TOPIC_POLICY,
        {
            "arn": TOPIC_ARN,
            "policy": json.dumps(
                document({"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sns:Publish", "Resource": TOPIC_ARN})
            ),
        },
        True,
        "every principal",
    ),
    Case(
        "topic-policy-negated-condition-does-not-restrict",
        "iam-least-privilege",
        TOPIC_POLICY,
        {
            "arn": TOPIC_ARN,
            "policy": json.dumps(
                document(
                    {
                        "Effect": "Allow",
                        "Principal": "*",
                        "Action": "sns:Publish",
                        "Resource": TOPIC_ARN,
                        "Condition": {"StringNotEquals": {"aws:SourceAccount": ACCOUNT}},
                    }
                )
            ),
        },
        True,
        "every principal",
    ),
    Case(
        "topic-inline-policy-anyone-subscribes",
        "iam-least-privilege",
        TOPIC,
        {
            "name": "vision-alerts",
            "policy": json.dumps(
                document({"Effect": "Allow", "Principal": "*", "Action": "sns:Subscribe", "Resource": TOPIC_ARN})
            ),
            "tags": TAGS,
        },
        True,
        "Topic policy",
    ),
    Case(
        "queue-policy-from-this-topic",
        "iam-least-privilege",
        QUEUE_POLICY,
        {
            "queueUrl": f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}/vision-jobs",
            "policy": json.dumps(
                document(
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "sns.amazonaws.com"},
                        "Action": "sqs:SendMessage",
                        "Resource": QUEUE_ARN,
                        "Condition": {"ArnEquals": {"aws:SourceArn": TOPIC_ARN}},
                    }
                )
            ),
        },
        False,
    ),
    Case(
        "queue-policy-every-sqs-action",
        "iam-least-privilege",
        QUEUE_POLICY,
        {
            "queueUrl": f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}/vision-jobs",
            "policy": json.dumps(
                document(
                    {
                        "Effect": "Allow",
                        "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:role/vision-gpu-node"},
                        "Action": "sqs:*",
                        "Resource": QUEUE_ARN,
                    }
                )
            ),
        },
        True,
        "every sqs action",
    ),
    # iam-least-privilege: AWS managed policies
    Case(
        "attachment-administrator-access",
        "iam-least-privilege",
        ROLE_POLICY_ATTACHMENT,
        {"role": "vision-node", "policyArn": "arn:aws:iam::aws:policy/AdministratorAccess"},
        True,
        "AdministratorAccess",
    ),
    Case(
        "attachment-s3-full-access",
        "iam-least-privilege",
        ROLE_POLICY_ATTACHMENT,
        {"role": "vision-node", "policyArn": "arn:aws:iam::aws:policy/AmazonS3FullAccess"},
        True,
        "AmazonS3FullAccess",
    ),
    Case(
        "attachment-backup-service-role",
        "iam-least-privilege",
        ROLE_POLICY_ATTACHMENT,
        {
            "role": "vision-backup",
            "policyArn": "arn:aws:iam::aws:policy/service-role/AWSBackupServiceRolePolicyForBackup",
        },
        False,
    ),
    Case(
        "role-managed-power-user",
        "iam-least-privilege",
        ROLE,
        {
            "assumeRolePolicy": EC2_TRUST_POLICY,
            "managedPolicyArns": [
                "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
                "arn:aws:iam::aws:policy/PowerUserAccess",
            ],
            "tags": TAGS,
        },
        True,
        "PowerUserAccess",
    ),
    Case(
        "role-managed-ssm-core",
        "iam-least-privilege",
        ROLE,
        {
            "assumeRolePolicy": EC2_TRUST_POLICY,
            "managedPolicyArns": ["arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"],
            "tags": TAGS,
        },
        False,
    ),
    Case(
        "exclusive-attachments-iam-full-access",
        "iam-least-privilege",
        ROLE_POLICY_ATTACHMENTS_EXCLUSIVE,
        {"roleName": "vision-node", "policyArns": ["arn:aws-us-gov:iam::aws:policy/IAMFullAccess"]},
        True,
        "IAMFullAccess",
    ),
    # required-tags
    Case("volume-tagged", "required-tags", VOLUME, {"size": 10, "tags": TAGS}, False),
    Case(
        "volume-missing-cost-center",
        "required-tags",
        VOLUME,
        {"size": 10, "tags": {"Project": "vision", "Owner": "ml"}},
        True,
        "CostCenter",
    ),
    Case("group-tag-list", "required-tags", GROUP, group(), False),
    Case(
        "group-tag-list-empty-owner",
        "required-tags",
        GROUP,
        group(
            tags=[
                {"key": "Project", "value": "v", "propagateAtLaunch": True},
                {"key": "Owner", "value": "", "propagateAtLaunch": True},
            ]
        ),
        True,
        "Owner",
    ),
    Case(
        "role-policy-untaggable", "required-tags", ROLE_POLICY, {"role": "r", "policy": json.dumps(NODE_POLICY)}, False
    ),
    Case("non-aws-resource-untaggable", "required-tags", "gpu-cloud:index:GpuInstanceGroup", {}, False),
    # asg-bounded-and-rebalanced
    Case("group-bounded", "asg-bounded-and-rebalanced", GROUP, group(), False),
    Case("group-over-cap", "asg-bounded-and-rebalanced", GROUP, group(maxSize=64), True, "cap of 16"),
    Case(
        "group-max-size-not-a-number",
        "asg-bounded-and-rebalanced",
        GROUP,
        group(maxSize="lots"),
        True,
        "not a finite number",
    ),
    Case("spot-group-rebalanced", "asg-bounded-and-rebalanced", GROUP, spot_group(capacityRebalance=True), False),
    Case("spot-group-not-rebalanced", "asg-bounded-and-rebalanced", GROUP, spot_group(), True, "capacityRebalance"),
    Case(
        "on-demand-mixed-group-needs-no-rebalance",
        "asg-bounded-and-rebalanced",
        GROUP,
        group(mixedInstancesPolicy={"instancesDistribution": {"onDemandBaseCapacity": 1}, "launchTemplate": {}}),
        False,
    ),
    # no-public-ip
    Case("launch-template-private", "no-public-ip", LAUNCH_TEMPLATE, launch_template(), False),
    Case(
        "launch-template-public-string",
        "no-public-ip",
        LAUNCH_TEMPLATE,
        launch_template(networkInterfaces=[{"deviceIndex": 0, "associatePublicIpAddress": "true"}]),
        True,
        "public IP",
    ),
    Case(
        "launch-template-public-bool",
        "no-public-ip",
        LAUNCH_TEMPLATE,
        launch_template(networkInterfaces=[{"deviceIndex": 0, "associatePublicIpAddress": True}]),
        True,
        "public IP",
    ),
    Case("instance-private", "no-public-ip", INSTANCE, instance(), False),
    Case("instance-public", "no-public-ip", INSTANCE, instance(associatePublicIpAddress=True), True, "public IP"),
    # s3-gateway-endpoint-restricted
    Case("s3-endpoint-as-gpu-cloud-makes-it", "s3-gateway-endpoint-restricted", VPC_ENDPOINT,
         s3_endpoint(json.dumps(s3_gateway_endpoint_policy("aws", ACCOUNT, "us-east-1", ["vision-data"]))), False),
    Case("s3-endpoint-with-aws-default-policy", "s3-gateway-endpoint-restricted", VPC_ENDPOINT, s3_endpoint(None),
         True, "has no policy"),
    Case("s3-endpoint-allowing-every-bucket-to-the-account", "s3-gateway-endpoint-restricted", VPC_ENDPOINT,
         s3_endpoint(document({"Sid": "Any", "Effect": "Allow", "Principal": "*", "Action": "s3:PutObject",
                               "Resource": "arn:aws:s3:::*/*",
                               "Condition": {"StringEquals": {"aws:PrincipalAccount": ACCOUNT}}})),
         True, "statement Any allows S3 on any bucket (arn:aws:s3:::*/*)"),
    Case("s3-endpoint-allowing-everything", "s3-gateway-endpoint-restricted", VPC_ENDPOINT,
         s3_endpoint(document({"Effect": "Allow", "Principal": "*", "Action": "*", "Resource": "*"})),
         True, "any bucket (*)"),
    Case("s3-endpoint-allowing-everything-but-one-bucket", "s3-gateway-endpoint-restricted", VPC_ENDPOINT,
         s3_endpoint(document({"Effect": "Allow", "Principal": "*", "NotAction": "s3:DeleteBucket",
                               "NotResource": "arn:aws:s3:::vision-data"})),
         True, "(NotResource)"),
    Case("s3-endpoint-held-to-own-account-buckets", "s3-gateway-endpoint-restricted", VPC_ENDPOINT,
         s3_endpoint(document({"Effect": "Allow", "Principal": "*", "Action": "s3:*", "Resource": "*",
                               "Condition": {"StringEquals": {"aws:ResourceAccount": ACCOUNT}}})), False),
    Case("s3-endpoint-held-to-a-wildcard-account", "s3-gateway-endpoint-restricted", VPC_ENDPOINT,
         s3_endpoint(document({"Effect": "Allow", "Principal": "*", "Action": "s3:*", "Resource": "*",
                               "Condition": {"StringLike": {"aws:ResourceAccount": "*"}}})), True, "any bucket"),
    Case("s3-endpoint-denying-every-bucket", "s3-gateway-endpoint-restricted", VPC_ENDPOINT,
         s3_endpoint(document({"Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": "*"})), False),
    Case("s3-endpoint-allowing-everything-but-ec2", "s3-gateway-endpoint-restricted", VPC_ENDPOINT,
         s3_endpoint(document({"Effect": "Allow", "Principal": "*", "NotAction": "ec2:*", "Resource": "*"})),
         True, "any bucket (*)"),
    Case("s3-endpoint-held-away-from-an-account", "s3-gateway-endpoint-restricted", VPC_ENDPOINT,
         s3_endpoint(document({"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "*",
                               "Condition": {"StringNotEquals": {"aws:ResourceAccount": ACCOUNT}}})), True, "any bucket"),
    Case("s3-endpoint-allowing-only-other-services-everywhere", "s3-gateway-endpoint-restricted", VPC_ENDPOINT,
         s3_endpoint(document({"Effect": "Allow", "Principal": "*", "Action": "dynamodb:GetItem", "Resource": "*"})), False),
    Case("s3-endpoint-allowing-a-bucket-name-pattern", "s3-gateway-endpoint-restricted", VPC_ENDPOINT,
         s3_endpoint(document({"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                               "Resource": "arn:aws:s3:::al2023-repos-*/*"})), False),
    Case("s3-endpoint-with-broken-policy", "s3-gateway-endpoint-restricted", VPC_ENDPOINT,
         s3_endpoint("{not json"), True, "not a policy document"),
    Case("dynamodb-gateway-endpoint-is-not-s3", "s3-gateway-endpoint-restricted", VPC_ENDPOINT,
         {**s3_endpoint(None), "serviceName": "com.amazonaws.us-east-1.dynamodb"}, False),
    Case("s3-interface-endpoint-is-not-a-gateway", "s3-gateway-endpoint-restricted", VPC_ENDPOINT,
         {**s3_endpoint(None), "vpcEndpointType": "Interface"}, False),
    # vpc-endpoint-has-policy
    Case("interface-endpoint-as-gpu-cloud-makes-it", "vpc-endpoint-has-policy", VPC_ENDPOINT,
         interface_endpoint("logs", interface_endpoint_policy("logs", ACCOUNT)), False),
    Case("interface-endpoint-with-aws-default-policy", "vpc-endpoint-has-policy", VPC_ENDPOINT,
         interface_endpoint("logs", None), True, "(com.amazonaws.us-east-1.logs) has no policy"),
    Case("interface-endpoint-allowing-any-principal", "vpc-endpoint-has-policy", VPC_ENDPOINT,
         interface_endpoint("sts", document({"Sid": "Open", "Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "*",
                                             "Resource": "*"})), True, "statement Open allows any principal"),
    Case("interface-endpoint-held-to-a-wildcard-account", "vpc-endpoint-has-policy", VPC_ENDPOINT,
         interface_endpoint("sts", document({"Effect": "Allow", "Principal": "*", "Action": "*", "Resource": "*",
                                             "Condition": {"StringLike": {"aws:PrincipalAccount": "*"}}})),
         True, "allows any principal"),
    Case("interface-endpoint-held-away-from-an-account", "vpc-endpoint-has-policy", VPC_ENDPOINT,
         interface_endpoint("sts", document({"Effect": "Allow", "Principal": "*", "Action": "*", "Resource": "*",
                                             "Condition": {"StringNotEquals": {"aws:PrincipalAccount": ACCOUNT}}})),
         True, "allows any principal"),
    Case("interface-endpoint-held-to-the-organization", "vpc-endpoint-has-policy", VPC_ENDPOINT,
         interface_endpoint("ssm", document({"Effect": "Allow", "Principal": "*", "Action": "*", "Resource": "*",
                                             "Condition": {"StringEquals": {"aws:PrincipalOrgID": "o-abc123def4"}}})),
         False),
    Case("interface-endpoint-naming-its-principals", "vpc-endpoint-has-policy", VPC_ENDPOINT,
         interface_endpoint("ssm", document({"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
                                             "Action": "*", "Resource": "*"})), False),
    Case("interface-endpoint-with-not-principal", "vpc-endpoint-has-policy", VPC_ENDPOINT,
         interface_endpoint("ssm", document({"Effect": "Allow", "NotPrincipal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
                                             "Action": "*", "Resource": "*"})), True, "allows any principal"),
    Case("interface-endpoint-with-broken-policy", "vpc-endpoint-has-policy", VPC_ENDPOINT,
         interface_endpoint("logs", "{not json"), True, "not a policy document"),
    Case("interface-endpoint-of-a-service-without-policies", "vpc-endpoint-has-policy", VPC_ENDPOINT,
         interface_endpoint("ssmmessages", None), False),
    Case("gateway-endpoint-is-the-s3-rule's", "vpc-endpoint-has-policy", VPC_ENDPOINT, s3_endpoint(None), False),
    # Edges that sampled mutation testing found unguarded (tests/mutation): each flips a verdict.
    Case(
        "instance-from-launch-template-leaves-imds-to-it",
        "imdsv2-required",
        INSTANCE,
        instance(metadataOptions=None, launchTemplate={"id": "lt-0abc", "version": "$Latest"}),
        False,
    ),
    Case("instance-imdsv1-named-as-instance", "imdsv2-required", INSTANCE,
         instance(metadataOptions={"httpTokens": "optional"}), True, "Instance allows IMDSv1"),
    Case("launch-template-imdsv1-named-as-template", "imdsv2-required", LAUNCH_TEMPLATE,
         launch_template(metadataOptions={"httpTokens": "optional"}), True, "Launch template allows IMDSv1"),
    Case(
        "spot-share-of-one-percent-without-rebalance",
        "asg-bounded-and-rebalanced",
        GROUP,
        group(launchTemplate=None, mixedInstancesPolicy={
            "instancesDistribution": {"onDemandBaseCapacity": 0, "onDemandPercentageAboveBaseCapacity": 99},
            "launchTemplate": {"launchTemplateSpecification": {"launchTemplateId": "lt-0abc", "version": "$Latest"}},
        }),
        True,
        "without capacity rebalancing",
    ),
    Case(
        "launch-template-instance-store-then-unencrypted-ebs",
        "ebs-encrypted-with-cmk",
        LAUNCH_TEMPLATE,
        launch_template(blockDeviceMappings=[
            {"deviceName": "/dev/sdb", "virtualName": "ephemeral0"},
            {"deviceName": "/dev/sdc", "ebs": {"volumeSize": 100}},
        ]),
        True,
        "'/dev/sdc'",
    ),
    Case("instance-from-launch-template-leaves-root-to-it", "ebs-encrypted-with-cmk", INSTANCE,
         instance(rootBlockDevice=None, launchTemplate={"id": "lt-0abc", "version": "$Latest"}), False),
    Case("kms-key-fourteen-day-window-is-enough", "kms-rotation-and-deletion-window", KMS_KEY,
         {"enableKeyRotation": True, "deletionWindowInDays": 14}, False),
    Case(
        "security-group-unknown-source-then-open",
        "no-world-open-ingress",
        SECURITY_GROUP,
        {"ingress": [{"protocol": "tcp", "fromPort": 22, "toPort": 22, "cidrBlocks": ["not-a-cidr", "10.0.0.0/8", "0.0.0.0/0"]}]},
        True,
        "0.0.0.0/0",
    ),
    Case(
        "security-group-open-with-host-bits",
        "no-world-open-ingress",
        SECURITY_GROUP,
        {"ingress": [{"protocol": "tcp", "fromPort": 22, "toPort": 22, "cidrBlocks": ["0.0.0.1/0"]}]},
        True,
        "0.0.0.1/0",
    ),
]


@dataclass(frozen=True)
class StackCase:
    id: str
    policy: str
    resources: list[PlannedResource]
    flagged_urns: set[str] = field(default_factory=set)
    """URNs the rule must report (and no others)."""


def urn(resource_type: str, name: str) -> str:
    return f"urn:pulumi:dev::gpu-cloud::{resource_type}::{name}"


def planned(resource_type: str, name: str, props: dict[str, Any], **options: Any) -> PlannedResource:
    return PlannedResource(urn=urn(resource_type, name), type=resource_type, name=name, props=props, options=options)


GPU_TEMPLATE = planned(LAUNCH_TEMPLATE, "vision-gpu-lt", {**launch_template(), "id": "lt-0abc"})
CPU_TEMPLATE = planned(LAUNCH_TEMPLATE, "vision-cpu-lt", {**launch_template(instanceType="m7i.large"), "id": "lt-0cpu"})
GPU_GROUP = planned(GROUP, "vision-gpu-asg", group())
CPU_GROUP = planned(GROUP, "vision-cpu-asg", group(name="vision-cpu-asg", launchTemplate={"id": "lt-0cpu"}))


def scaling_policy(name: str, **props: Any) -> PlannedResource:
    return planned(SCALING_POLICY, name, {"autoscalingGroupName": "vision-gpu-asg", **props})


SPOT_TEMPLATE = planned(
    LAUNCH_TEMPLATE,
    "vision-spot-lt",
    {**launch_template(instanceMarketOptions={"marketType": "spot"}), "id": "lt-0spot"},
)
SPOT_TEMPLATE_GROUP = planned(GROUP, "vision-spot-asg", group(name="vision-spot-asg", launchTemplate={"id": "lt-0spot"}))
BLOCK_TEMPLATE = planned(
    LAUNCH_TEMPLATE,
    "frontier-block-lt",
    {**launch_template(instanceMarketOptions={"marketType": "capacity-block"},
                       capacityReservationSpecification={"capacityReservationTarget": {"capacityReservationId": "cr-0b1c2d3e4f5a60718"}}),
     "id": "lt-0block"},
)


def block_group(name: str, types: int, spot_percent: int) -> PlannedResource:
    """A group on the block's template through a mixed instances policy of `types` types."""
    return planned(GROUP, name, group(name=name, launchTemplate=None, mixedInstancesPolicy={
        "instancesDistribution": {"onDemandPercentageAboveBaseCapacity": 100 - spot_percent},
        "launchTemplate": {"launchTemplateSpecification": {"launchTemplateId": "lt-0block"},
                           "overrides": [{"instanceType": t} for t in ("p5.48xlarge", "p5e.48xlarge")[:types]]},
    }))


def reserving_group(name: str, preference: str) -> PlannedResource:
    return planned(GROUP, name, group(name=name, capacityReservationSpecification={
        "capacityReservationPreference": preference,
        "capacityReservationTarget": {"capacityReservationIds": ["cr-0123456789abcdef0"]},
    }))


STACK_CASES: list[StackCase] = [
    StackCase(
        "plain-http-on-a-public-load-balancer",
        "load-balancer-tls-when-internet-facing",
        [planned(ALB, "public-lb", {"internal": False, "arn": ALB_ARN}),
         planned(ALB_LISTENER, "public-http", {"protocol": "HTTP", "loadBalancerArn": ALB_ARN})],
        {urn(ALB_LISTENER, "public-http")},
    ),
    StackCase(
        "https-on-a-public-load-balancer",
        "load-balancer-tls-when-internet-facing",
        [planned(ALB, "public-lb", {"internal": False, "arn": ALB_ARN}),
         planned(ALB_LISTENER, "public-https", {"protocol": "HTTPS", "loadBalancerArn": ALB_ARN})],
    ),
    StackCase("gpu-group-alone", "gpu-group-has-scale-in-path", [GPU_TEMPLATE, GPU_GROUP], {GPU_GROUP.urn}),
    StackCase(
        "gpu-group-with-nightly-schedule",
        "gpu-group-has-scale-in-path",
        [
            GPU_TEMPLATE,
            GPU_GROUP,
            planned(
                SCHEDULE,
                "nightly",
                {
                    "autoscalingGroupName": "vision-gpu-asg",
                    "scheduledActionName": "nightly",
                    "desiredCapacity": 0,
                    "minSize": 0,
                    "maxSize": 0,
                    "recurrence": "0 20 * * *",
                },
            ),
        ],
    ),
    StackCase(
        "gpu-group-with-target-tracking",
        "gpu-group-has-scale-in-path",
        [
            GPU_TEMPLATE,
            GPU_GROUP,
            scaling_policy(
                "gpu-util",
                policyType="TargetTrackingScaling",
                targetTrackingConfiguration={"targetValue": 60.0, "customizedMetricSpecification": {}},
            ),
        ],
    ),
    StackCase(
        "gpu-group-target-tracking-without-scale-in",
        "gpu-group-has-scale-in-path",
        [
            GPU_TEMPLATE,
            GPU_GROUP,
            scaling_policy(
                "gpu-util",
                policyType="TargetTrackingScaling",
                targetTrackingConfiguration={"targetValue": 60.0, "disableScaleIn": True},
            ),
        ],
        {GPU_GROUP.urn},
    ),
    StackCase(
        "gpu-group-with-scale-in-step",
        "gpu-group-has-scale-in-path",
        [
            GPU_TEMPLATE,
            GPU_GROUP,
            scaling_policy(
                "idle",
                policyType="StepScaling",
                adjustmentType="ChangeInCapacity",
                stepAdjustments=[{"scalingAdjustment": -1.0, "metricIntervalUpperBound": "0"}],
            ),
        ],
    ),
    StackCase(
        "gpu-group-with-scale-out-step-only",
        "gpu-group-has-scale-in-path",
        [
            GPU_TEMPLATE,
            GPU_GROUP,
            scaling_policy(
                "busy",
                policyType="StepScaling",
                stepAdjustments=[{"scalingAdjustment": 2, "metricIntervalLowerBound": "0"}],
            ),
        ],
        {GPU_GROUP.urn},
    ),
    StackCase(
        "gpu-group-policy-on-another-group",
        "gpu-group-has-scale-in-path",
        [
            GPU_TEMPLATE,
            GPU_GROUP,
            planned(
                SCALING_POLICY,
                "other",
                {
                    "autoscalingGroupName": "someone-elses-asg",
                    "policyType": "TargetTrackingScaling",
                    "targetTrackingConfiguration": {"targetValue": 50},
                },
            ),
        ],
        {GPU_GROUP.urn},
    ),
    StackCase("cpu-group-not-checked", "gpu-group-has-scale-in-path", [CPU_TEMPLATE, CPU_GROUP]),
    StackCase(
        "retained-data-volume",
        "data-volume-retained",
        [
            planned(
                VOLUME,
                "vision-data",
                {"size": 500, "encrypted": True, "kmsKeyId": CMK_ARN, "tags": TAGS},
                retainOnDelete=True,
                protect=True,
            )
        ],
    ),
    StackCase(
        "protected-data-volume",
        "data-volume-retained",
        [planned(VOLUME, "vision-data", {"size": 500}, protect=True)],
    ),
    StackCase(
        "group-on-spot-template-without-rebalance",
        "asg-spot-template-rebalanced",
        [SPOT_TEMPLATE, SPOT_TEMPLATE_GROUP, GPU_TEMPLATE, GPU_GROUP],
        {SPOT_TEMPLATE_GROUP.urn},
    ),
    StackCase(
        "group-on-spot-template-rebalanced",
        "asg-spot-template-rebalanced",
        [
            SPOT_TEMPLATE,
            planned(
                GROUP,
                "vision-spot-asg",
                group(name="vision-spot-asg", launchTemplate={"id": "lt-0spot"}, capacityRebalance=True),
            ),
        ],
    ),
    StackCase(
        "group-on-on-demand-template",
        "asg-spot-template-rebalanced",
        [GPU_TEMPLATE, GPU_GROUP],
    ),
    StackCase(
        "capacity-block-group-with-spot",
        "capacity-block-on-demand-one-type",
        [BLOCK_TEMPLATE, block_group("frontier-spot-asg", 1, 50)],
        {urn(GROUP, "frontier-spot-asg")},
    ),
    StackCase(
        "capacity-block-group-with-two-types",
        "capacity-block-on-demand-one-type",
        [BLOCK_TEMPLATE, block_group("frontier-mixed-asg", 2, 0)],
        {urn(GROUP, "frontier-mixed-asg")},
    ),
    StackCase(
        "capacity-block-group-on-its-template",
        "capacity-block-on-demand-one-type",
        [BLOCK_TEMPLATE, planned(GROUP, "frontier-asg", group(name="frontier-asg", launchTemplate={"id": "lt-0block"}))],
    ),
    StackCase(
        "reservations-with-preference-none",
        "capacity-reservations-used",
        [GPU_TEMPLATE, reserving_group("idle-reservation-asg", "none")],
        {urn(GROUP, "idle-reservation-asg")},
    ),
    StackCase(
        "reservations-used-first",
        "capacity-reservations-used",
        [GPU_TEMPLATE, reserving_group("reserved-asg", "capacity-reservations-first")],
    ),
    StackCase(
        "disposable-data-volume",
        "data-volume-retained",
        [planned(VOLUME, "vision-data", {"size": 500}, protect=False, retainOnDelete=False)],
        {urn(VOLUME, "vision-data")},
    ),
    StackCase(
        "second-gpu-group-without-scale-in-after-a-scheduled-one",
        "gpu-group-has-scale-in-path",
        [
            GPU_TEMPLATE,
            GPU_GROUP,
            planned(GROUP, "vision-gpu-asg-2", group(name="vision-gpu-asg-2")),
            planned(SCHEDULE, "nightly", {"autoscalingGroupName": "vision-gpu-asg", "scheduledActionName": "nightly",
                                          "desiredCapacity": 0, "minSize": 0, "maxSize": 0, "recurrence": "0 20 * * *"}),
        ],
        {urn(GROUP, "vision-gpu-asg-2")},
    ),
]
