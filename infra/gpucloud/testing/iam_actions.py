"""What IAM sees of one AWS API call: the action it authorizes, the resource ARNs, and the request
context keys that conditions read; plus the KMS calls a service makes with the caller's credentials
to serve it (kms:ViaService).

The call recorders (tests/access_recording.py) feed each call they see through `iam_calls`. ARN
templates mix the request's own parameters, written `<Bucket>`, with the placeholders of
gpucloud/data/access_calls.json, written `${account}`; the recorder turns the test's concrete
values into placeholders afterwards.

Sources, read 2026-11-28: the Service Authorization Reference, "Actions, resources, and condition
keys for" Amazon S3, Amazon EC2 Auto Scaling, Amazon CloudWatch, Amazon EC2, AWS Systems Manager,
Amazon CloudWatch Logs, Amazon Elastic Container Registry, Amazon Managed Service for Prometheus,
AWS Step Functions, AWS Secrets Manager (the action an operation needs, where it is not the
operation's name: ListObjectsV2 is s3:ListBucket, HeadObject s3:GetObject, a multipart upload s3:PutObject; each action's resource
types and their ARN formats). CloudWatch Logs authorizes the log-group actions on the group's ARN
with `:*` appended (CloudWatch Logs user guide, "Using identity-based policies (IAM policies) for
CloudWatch Logs"; aws/aws-cli#3578).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

ANY = "*"
"""An action with no resource-level permissions: only `Resource: "*"` allows it."""

_PREFIX = "arn:${partition}"
_REGIONAL = "${region}:${account}"
OBJECT = f"{_PREFIX}:s3:::<Bucket>/<Key>"
BUCKET = f"{_PREFIX}:s3:::<Bucket>"
AUTOSCALING_GROUP = f"{_PREFIX}:autoscaling:{_REGIONAL}:autoScalingGroup:${{autoScalingGroupId}}:autoScalingGroupName/<AutoScalingGroupName>"
OWN_GROUP = AUTOSCALING_GROUP.replace("<AutoScalingGroupName>", "gpu-cloud-${nameBase}-${group}")
"""The group of the instance the request names (SetInstanceHealth names only the instance; AWS
authorizes it on that instance's group): the node's own, in any stack (naming.autoscaling_group_name)."""
INSTANCE = f"{_PREFIX}:ec2:{_REGIONAL}:instance/<InstanceId>"
VOLUME = f"{_PREFIX}:ec2:{_REGIONAL}:volume/<VolumeId>"
PARAMETER = f"{_PREFIX}:ssm:{_REGIONAL}:parameter/<Name>"
DOCUMENT = f"{_PREFIX}:ssm:{_REGIONAL}:document/<DocumentName>"
AWS_DOCUMENT = f"{_PREFIX}:ssm:${{region}}::document/<DocumentName>"
"""A document AWS owns (Session Manager's port forwarding) has no account in its ARN (Session
Manager user guide, "Sample IAM policies for Session Manager"; read 2026-11-28)."""
SESSION = f"{_PREFIX}:ssm:{_REGIONAL}:session/<SessionId>"
"""A Session Manager session (Service Authorization Reference, AWS Systems Manager: resource type
`session`; read 2026-11-28). What conditions read of it are the tags Session Manager puts on it
when it starts (`aws:ssmmessages:session-id`: the starter's aws:userid), which the call itself
does not carry: the recorder gives them (tests/access_recording.py, `ran_printed`)."""
CAPACITY_RESERVATION = f"{_PREFIX}:ec2:{_REGIONAL}:capacity-reservation/<CapacityReservationId>"
LOG_GROUP = f"{_PREFIX}:logs:{_REGIONAL}:log-group:<logGroupName>:*"
LOG_STREAM = f"{_PREFIX}:logs:{_REGIONAL}:log-group:<logGroupName>:log-stream:<logStreamName>"
WORKSPACE = f"{_PREFIX}:aps:{_REGIONAL}:workspace/${{workspaceId}}"
KEY = "${keyArn}"
SECRET_KEY = "${secretKeyArn}"
"""The key of a parameter or secret the stack does not make (`secretEnv`): its owner's, unknown to
the stack. The project key encrypts only the stack's own parameters, all named `gpu-cloud/...`
(naming.jupyter_token_parameter_name)."""
OWN_PARAMETERS = "gpu-cloud/"


@dataclass(frozen=True)
class Action:
    """The IAM side of one operation: its action, the ARN templates of the resources it is
    authorized on (each must be allowed), and condition keys read from the request."""

    action: str
    resources: tuple[str, ...] = (ANY,)
    context: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class IamCall:
    """One authorization AWS makes for a call: `via` names the service that calls KMS for it
    (`kms:ViaService`), None for the caller's own request."""

    action: str
    resource: str
    context: Mapping[str, str]
    via: str | None = None


ACTIONS: Mapping[tuple[str, str], Action] = {
    ("s3", "GetObject"): Action("s3:GetObject", (OBJECT,)),
    ("s3", "HeadObject"): Action("s3:GetObject", (OBJECT,)),
    ("s3", "PutObject"): Action("s3:PutObject", (OBJECT,)),
    ("s3", "CreateMultipartUpload"): Action("s3:PutObject", (OBJECT,)),
    ("s3", "UploadPart"): Action("s3:PutObject", (OBJECT,)),
    ("s3", "CompleteMultipartUpload"): Action("s3:PutObject", (OBJECT,)),
    ("s3", "AbortMultipartUpload"): Action("s3:AbortMultipartUpload", (OBJECT,)),
    ("s3", "DeleteObject"): Action("s3:DeleteObject", (OBJECT,)),
    ("s3", "ListObjectsV2"): Action("s3:ListBucket", (BUCKET,), {"s3:prefix": "<Prefix>"}),
    ("s3", "ListObjects"): Action("s3:ListBucket", (BUCKET,), {"s3:prefix": "<Prefix>"}),
    ("autoscaling", "DescribeAutoScalingGroups"): Action("autoscaling:DescribeAutoScalingGroups"),
    ("autoscaling", "DescribeAutoScalingInstances"): Action("autoscaling:DescribeAutoScalingInstances"),
    ("autoscaling", "DescribeLifecycleHooks"): Action("autoscaling:DescribeLifecycleHooks"),
    ("autoscaling", "CompleteLifecycleAction"): Action("autoscaling:CompleteLifecycleAction", (AUTOSCALING_GROUP,)),
    ("autoscaling", "RecordLifecycleActionHeartbeat"): Action("autoscaling:RecordLifecycleActionHeartbeat", (AUTOSCALING_GROUP,)),
    ("autoscaling", "SetInstanceHealth"): Action("autoscaling:SetInstanceHealth", (OWN_GROUP,)),
    ("autoscaling", "SetDesiredCapacity"): Action("autoscaling:SetDesiredCapacity", (AUTOSCALING_GROUP,)),
    ("autoscaling", "UpdateAutoScalingGroup"): Action("autoscaling:UpdateAutoScalingGroup", (AUTOSCALING_GROUP,)),
    ("monitoring", "PutMetricData"): Action("cloudwatch:PutMetricData", context={"cloudwatch:namespace": "<Namespace>"}),
    ("monitoring", "GetMetricStatistics"): Action("cloudwatch:GetMetricStatistics"),
    ("ec2", "DescribeInstances"): Action("ec2:DescribeInstances"),
    ("ec2", "DescribeVolumes"): Action("ec2:DescribeVolumes"),
    ("ec2", "DescribeTags"): Action("ec2:DescribeTags"),
    ("ec2", "DescribeSubnets"): Action("ec2:DescribeSubnets"),
    ("ec2", "AttachVolume"): Action("ec2:AttachVolume", (INSTANCE, VOLUME)),
    ("ec2", "DescribeCapacityReservations"): Action("ec2:DescribeCapacityReservations"),
    ("ec2", "DescribeCapacityBlockOfferings"): Action("ec2:DescribeCapacityBlockOfferings"),
    # Authorized on the reservation it creates, whose id the answer holds (`_purchase_calls`).
    ("ec2", "PurchaseCapacityBlock"): Action("ec2:PurchaseCapacityBlock", ()),
    ("ssm", "GetParameter"): Action("ssm:GetParameter", (PARAMETER,)),
    # GetSecretValue is authorized on the secret's whole ARN, which the answer holds (`_secretsmanager_calls`).
    ("secretsmanager", "GetSecretValue"): Action("secretsmanager:GetSecretValue", ()),
    ("ssm", "GetParameterHistory"): Action("ssm:GetParameterHistory", (PARAMETER,)),
    ("ssm", "PutParameter"): Action("ssm:PutParameter", (PARAMETER,)),
    ("ssm", "SendCommand"): Action("ssm:SendCommand", (DOCUMENT, INSTANCE.replace("<InstanceId>", "<InstanceIds>"))),
    ("ssm", "StartSession"): Action("ssm:StartSession", (INSTANCE.replace("<InstanceId>", "<Target>"), AWS_DOCUMENT)),
    ("ssm", "ResumeSession"): Action("ssm:ResumeSession", (SESSION,)),
    ("ssm", "TerminateSession"): Action("ssm:TerminateSession", (SESSION,)),
    ("ssm", "ListCommands"): Action("ssm:ListCommands"),
    ("ssm", "ListCommandInvocations"): Action("ssm:ListCommandInvocations"),
    ("ssm", "GetCommandInvocation"): Action("ssm:GetCommandInvocation"),
    ("ssm", "CancelCommand"): Action("ssm:CancelCommand"),
    ("logs", "FilterLogEvents"): Action("logs:FilterLogEvents", (LOG_GROUP,)),
    ("logs", "GetLogEvents"): Action("logs:GetLogEvents", (LOG_STREAM,)),
    ("logs", "DescribeLogStreams"): Action("logs:DescribeLogStreams", (LOG_GROUP,)),
    ("ecr.api", "GetAuthorizationToken"): Action("ecr:GetAuthorizationToken"),
    ("sns", "Publish"): Action("sns:Publish", ("<TopicArn>",)),
    ("states", "StartExecution"): Action("states:StartExecution", ("<stateMachineArn>",)),
    ("states", "ListExecutions"): Action("states:ListExecutions", ("<stateMachineArn>",)),
    ("states", "DescribeExecution"): Action("states:DescribeExecution", ("<executionArn>",)),
    ("states", "StopExecution"): Action("states:StopExecution", ("<executionArn>",)),
    # No permission is needed, and a Deny cannot stop it (STS API reference, GetCallerIdentity).
    ("sts", "GetCallerIdentity"): Action("sts:GetCallerIdentity"),
    ("aps-workspaces", "RemoteWrite"): Action("aps:RemoteWrite", (WORKSPACE,)),
}
"""(service, operation) -> its IAM side. The service is the one the recorders name calls by:
botocore's endpoint prefix (`monitoring` for CloudWatch), or the VPC endpoint service where they
differ (`ecr.api`). A parameter given a list (SendCommand's InstanceIds) yields one resource each."""

_PARAMETER = re.compile(r"<([A-Za-z]+)>")


class UnknownOperationError(KeyError):
    """A call the table does not know yet: add its row, from the Service Authorization Reference."""


_STACK_TAGGED = re.compile(r":instance/|:volume/|:autoScalingGroup:|:document/gpu-cloud-\$\{nameBase\}-")
_TAG_KEYS = {"ec2": ("aws:ResourceTag",), "autoscaling": ("autoscaling:ResourceTag", "aws:ResourceTag"),
             "ssm": ("ssm:resourceTag", "aws:ResourceTag")}


def stack_tag_context(action: str, resource: str, tag: str = "gpu-cloud:stack") -> dict[str, str]:
    """The resource-tag keys a condition can read on a resource the stack made: every one carries
    the stack's `gpu-cloud:stack` tag with its name base (gpucloud.config.stack, StackSettings.tags;
    instances get it from their launch template). The keys are the Service Authorization
    Reference's for each resource type: aws:ResourceTag for EC2 instances and volumes,
    autoscaling:ResourceTag for Auto Scaling groups ("Tags for security", Auto Scaling user guide),
    ssm:resourceTag for SSM documents and managed instances; read 2026-11-28."""
    if not _STACK_TAGGED.search(resource):
        return {}
    return {f"{key}/{tag}": "${nameBase}" for key in _TAG_KEYS.get(action.split(":")[0], ())}


def _fill(template: str, params: Mapping[str, Any]) -> list[str]:
    """The template with the request's parameters put in; a list parameter gives one string each,
    a parameter the request lacks gives none (an optional condition key left out)."""
    filled = [template]
    for name in _PARAMETER.findall(template):
        value = params.get(name)
        if value is None:
            return []
        values = value if isinstance(value, (list, tuple)) else [value]
        filled = [text.replace(f"<{name}>", str(item).lstrip("/") if name == "Name" else str(item))
                  for text in filled for item in values]
    return filled


def via_service(service: str) -> str:
    return f"{service}.${{region}}.amazonaws.com"


def _kms(action: str, service: str, context: Mapping[str, str], key: str = KEY) -> IamCall:
    return IamCall(action, key, {"kms:ViaService": via_service(service), "kms:CallerAccount": "${account}", **context}, via=service)


def _s3_kms_calls(operation: str, params: Mapping[str, Any], response: Mapping[str, Any]) -> list[IamCall]:
    """SSE-KMS: S3 asks KMS for a data key to write an object and to decrypt it to read it, with the
    caller's credentials, through s3.<region>; the encryption context is the object's ARN, or the
    bucket's with an S3 Bucket Key (S3 user guide, "Using server-side encryption with AWS KMS keys
    (SSE-KMS)": encryption context, and "Reducing the cost of SSE-KMS with Amazon S3 Bucket Keys";
    read 2026-11-28)."""
    if response.get("ServerSideEncryption") != "aws:kms" and params.get("ServerSideEncryption") != "aws:kms":
        return []
    arn = BUCKET if response.get("BucketKeyEnabled") else OBJECT
    context = {"kms:EncryptionContext:aws:s3:arn": _fill(arn, params)[0]}
    if operation in ("PutObject", "CreateMultipartUpload"):
        return [_kms("kms:GenerateDataKey", "s3", context)]
    if operation in ("GetObject", "UploadPart", "CompleteMultipartUpload"):
        return [_kms("kms:Decrypt", "s3", context)]
    return []


def _ssm_kms_calls(operation: str, params: Mapping[str, Any], response: Mapping[str, Any]) -> list[IamCall]:
    """A standard-tier SecureString is encrypted and decrypted by Parameter Store calling KMS
    Encrypt and Decrypt directly, with the caller's credentials, through ssm.<region>, with the
    parameter's ARN as encryption context (KMS developer guide, "How AWS Systems Manager Parameter
    Store uses AWS KMS"; read 2026-11-28)."""
    if not _fill(PARAMETER, params):
        return []
    parameter = {"kms:EncryptionContext:PARAMETER_ARN": _fill(PARAMETER, params)[0]}
    key = KEY if str(params.get("Name", "")).lstrip("/").startswith(OWN_PARAMETERS) else SECRET_KEY
    if operation == "PutParameter" and params.get("Type") == "SecureString":
        return [_kms("kms:Encrypt", "ssm", parameter, key)]
    answered = [response.get("Parameter", {}), *response.get("Parameters", [])]
    if params.get("WithDecryption") and any(found.get("Type") == "SecureString" for found in answered):
        return [_kms("kms:Decrypt", "ssm", parameter, key)]
    return []


def _secretsmanager_calls(operation: str, response: Mapping[str, Any]) -> list[IamCall]:
    """GetSecretValue on the secret's whole ARN, and the decrypt of its data key that Secrets
    Manager makes with the caller's credentials through secretsmanager.<region>, the secret's ARN
    as encryption context (Secrets Manager user guide, "Secret encryption and decryption in AWS
    Secrets Manager": permissions for the KMS key, encryption context; read 2026-11-28)."""
    if operation != "GetSecretValue" or "ARN" not in response:
        return []
    return [IamCall("secretsmanager:GetSecretValue", response["ARN"], {}),
            _kms("kms:Decrypt", "secretsmanager", {"kms:EncryptionContext:SecretARN": response["ARN"]}, SECRET_KEY)]


def _sns_kms_calls(operation: str, params: Mapping[str, Any], topic_key: Callable[[str], str | None]) -> list[IamCall]:
    """Publishing to a topic encrypted under a customer managed key: SNS makes a data key and
    decrypts it with the publisher's credentials, through sns.<region> (SNS developer guide,
    "Configuring AWS KMS permissions": a publisher needs kms:GenerateDataKey and kms:Decrypt on
    the topic's key; read 2026-11-28)."""
    key = topic_key(str(params.get("TopicArn", ""))) if operation == "Publish" else None
    return [_kms(action, "sns", {}, key) for action in ("kms:GenerateDataKey", "kms:Decrypt")] if key else []


def _purchase_calls(operation: str, params: Mapping[str, Any], response: Mapping[str, Any]) -> list[IamCall]:
    """Buying a Capacity Block: PurchaseCapacityBlock on the `capacity-reservation` it creates
    (Service Authorization Reference, Amazon EC2: resource type `capacity-reservation*`), and, when
    the request tags it, ec2:CreateTags on it with `ec2:CreateAction` naming the purchase (EC2 user
    guide, "Grant permission to tag Amazon EC2 resources during creation"); read 2026-11-28."""
    reservation = response.get("CapacityReservation", {}).get("CapacityReservationId")
    if operation != "PurchaseCapacityBlock" or not reservation:
        return []
    arn = _fill(CAPACITY_RESERVATION, {"CapacityReservationId": reservation})[0]
    calls = [IamCall("ec2:PurchaseCapacityBlock", arn, {})]
    if params.get("TagSpecifications"):
        calls.append(IamCall("ec2:CreateTags", arn, {"ec2:CreateAction": "PurchaseCapacityBlock"}))
    return calls


def _ec2_kms_calls(operation: str, params: Mapping[str, Any], encrypted_volume: Callable[[str], bool]) -> list[IamCall]:
    """Attaching an encrypted volume: EC2 creates a grant on the key for the instance with the
    caller's credentials, through ec2.<region>, a grant for an AWS resource (EBS user guide,
    "How Amazon EBS encryption works" / KMS developer guide, "How Amazon Elastic Block Store
    (Amazon EBS) uses AWS KMS"; read 2026-11-28)."""
    if operation == "AttachVolume" and encrypted_volume(params["VolumeId"]):
        return [_kms("kms:CreateGrant", "ec2", {"kms:GrantIsForAWSResource": "true"})]
    return []


def iam_calls(service: str, operation: str, params: Mapping[str, Any], response: Mapping[str, Any] | None = None,
              encrypted_volume: Callable[[str], bool] = lambda volume_id: False,
              topic_key: Callable[[str], str | None] = lambda topic_arn: None) -> list[IamCall]:
    """Every authorization one call needs: its own action on each resource, then the KMS calls the
    service makes with the caller's credentials to serve it (`topic_key`: the key that encrypts a
    topic, None for one without)."""
    try:
        action = ACTIONS[(service, operation)]
    except KeyError:
        raise UnknownOperationError(f"{service} {operation}: add it to gpucloud.testing.iam_actions.ACTIONS") from None
    context = {key: values[0] for key, template in action.context.items() if (values := _fill(template, params))}
    calls = [IamCall(action.action, resource, context)
             for template in action.resources for resource in _fill(template, params)]
    response = response or {}
    if service == "s3":
        calls += _s3_kms_calls(operation, params, response)
    elif service == "ssm":
        calls += _ssm_kms_calls(operation, params, response)
    elif service == "secretsmanager":
        calls += _secretsmanager_calls(operation, response)
    elif service == "ec2":
        calls += _ec2_kms_calls(operation, params, encrypted_volume) + _purchase_calls(operation, params, response)
    elif service == "sns":
        calls += _sns_kms_calls(operation, params, topic_key)
    return calls


# --- what `pulumi up` calls that rests on a policy other than the deployer's own ------------------

@dataclass(frozen=True)
class DeployerCall:
    """A deployer's authorization another policy decides (the key policy, a bucket policy) or that
    passes a role, with the stack feature that makes it."""

    feature: str
    call: IamCall


EBS_CONTEXT = {"kms:EncryptionContextKeys": ("aws:ebs:id",), "kms:EncryptionContext:aws:ebs:id": "${volumeId}"}
"""The encryption context EBS sends with a volume's data key (KMS developer guide, "How Amazon
Elastic Block Store (Amazon EBS) uses AWS KMS": encryption context; read 2026-11-28)."""


def _key_through(service: str, actions: tuple[str, ...], context: Mapping[str, str] | None = None) -> list[IamCall]:
    return [_kms(action, service, {**(context or {}), **({"kms:GrantIsForAWSResource": "true"} if action == "kms:CreateGrant" else {})})
            for action in actions]


def _pass_role(role_arn: str, service: str) -> IamCall:
    """iam:PassRole on the role, with the service it is passed to (Service Authorization Reference,
    AWS Identity and Access Management: iam:PassedToService; IAM user guide, "Grant a user
    permissions to pass a role to an AWS service"; read 2026-11-28)."""
    return IamCall("iam:PassRole", role_arn, {"iam:PassedToService": service})


def deployer_calls(service: str, operation: str, params: Mapping[str, Any], response: Mapping[str, Any] | None = None,
                   role_of_profile: Callable[[str], str] = lambda arn: arn) -> list[DeployerCall]:
    """What one call of `pulumi up` needs besides the deployer's identity policy, read 2026-11-28:
    - a SecureString parameter under the key: kms:Encrypt through ssm (KMS developer guide, "How AWS
      Systems Manager Parameter Store uses AWS KMS");
    - an object put under SSE-KMS: s3:PutObject (the bucket policy decides too) and
      kms:GenerateDataKey through s3 (S3 user guide, "Using server-side encryption with AWS KMS keys"),
      then the provider's HeadObject of it, s3:GetObject;
    - an encrypted volume: kms:GenerateDataKeyWithoutPlaintext through ec2, the volume's id as
      encryption context, and kms:DescribeKey (KMS developer guide, "How Amazon Elastic Block Store
      (Amazon EBS) uses AWS KMS");
    - a backup vault, a Lustre file system, a Prometheus workspace under the key: the service keeps
      a grant for the resource, made through it (AWS Backup developer guide, "Encryption for backups
      in AWS Backup"; FSx for Lustre user guide, "Encrypting data at rest"; AMP user guide,
      "Encryption at rest");
    - a role handed to a service: iam:PassRole (launch template instance profile -> ec2, backup
      selection -> backup, flow logs -> vpc-flow-logs, Grafana workspace -> grafana, the job
      supervisor's state machine -> states (AWS managed policy reference, AWSStepFunctionsFullAccess:
      its user must also be allowed iam:PassRole on a role the service assumes) and its EventBridge
      target -> events (EventBridge API reference, PutTargets: a Step Functions target is invoked
      with the target's RoleArn, which the caller passes))."""
    response = response or {}
    found: list[tuple[str, IamCall]] = []
    if service == "ssm" and operation in ("PutParameter", "GetParameter"):
        found += [("services.jupyter", call) for call in _ssm_kms_calls(operation, params, response)]
    elif service == "s3" and operation in ("PutObject", "HeadObject") and "aws:kms" in (
            params.get("ServerSideEncryption"), response.get("ServerSideEncryption")):
        found += [("agentBundle", call) for call in iam_calls(service, operation, params, response)]
    elif (service, operation) == ("ec2", "CreateVolume") and params.get("KmsKeyId"):
        found += [("persistentVolume", call) for call in _key_through("ec2", ("kms:DescribeKey",))]
        found += [("persistentVolume", call) for call in _key_through(
            "ec2", ("kms:GenerateDataKeyWithoutPlaintext",), EBS_CONTEXT)]
    elif (service, operation) == ("backup", "CreateBackupVault") and params.get("EncryptionKeyArn"):
        found += [("backup", call) for call in _key_through("backup", ("kms:CreateGrant", "kms:DescribeKey"))]
    elif (service, operation) == ("fsx", "CreateFileSystem") and params.get("KmsKeyId"):
        found += [("storage.lustre", call) for call in _key_through("fsx", ("kms:CreateGrant", "kms:DescribeKey"))]
    elif (service, operation) == ("aps", "CreateWorkspace") and params.get("kmsKeyArn"):
        found += [("monitoring.prometheus", call) for call in _key_through("aps", ("kms:CreateGrant", "kms:DescribeKey"))]
    elif (service, operation) == ("ec2", "CreateLaunchTemplate"):
        profile = params.get("LaunchTemplateData", {}).get("IamInstanceProfile", {}).get("Arn")
        if profile:
            found.append(("groups", _pass_role(role_of_profile(profile), "ec2.amazonaws.com")))
    elif (service, operation) == ("backup", "CreateBackupSelection"):
        found.append(("backup", _pass_role(params["BackupSelection"]["IamRoleArn"], "backup.amazonaws.com")))
    elif (service, operation) == ("ec2", "CreateFlowLogs") and params.get("DeliverLogsPermissionArn"):
        found.append(("flowLogs", _pass_role(params["DeliverLogsPermissionArn"], "vpc-flow-logs.amazonaws.com")))
    elif (service, operation) == ("grafana", "CreateWorkspace") and params.get("workspaceRoleArn"):
        found.append(("monitoring.grafana", _pass_role(params["workspaceRoleArn"], "grafana.amazonaws.com")))
    elif (service, operation) == ("states", "CreateStateMachine") and params.get("roleArn"):
        found.append(("jobSupervisor", _pass_role(params["roleArn"], "states.amazonaws.com")))
    elif (service, operation) == ("events", "PutTargets"):
        found += [("jobSupervisor", _pass_role(target["RoleArn"], "events.amazonaws.com"))
                  for target in params.get("Targets", []) if target.get("RoleArn")]
    return [DeployerCall(feature, call) for feature, call in found]
