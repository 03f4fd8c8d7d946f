"""Resource-level rules of the review gate, as plain functions.

Each validator has the signature ``validate(resource_type, props, report, config=None)``:
``props`` are the resource's inputs under pulumi-aws v7 wire names (camelCase),
``report`` takes one message per violation, ``config`` defaults to ``PolicyConfig()``.
Every message ends with how to fix it.

During preview the pack hands the rules a KnownOnlyMapping: reading an unknown input
raises UnknownInputError (the engine's "can't run policy during preview"), and a rule
that can decide without the value reads it with ``peek``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from typing import Any

from . import iam_documents, iam_lint
from .model import UNKNOWN, PolicyConfig, Report
from .taggable import is_taggable
from .values import as_list, as_number, entry, is_true, mappings, peek, peek_list, text, unknown_at

VOLUME = "aws:ebs/volume:Volume"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
INSTANCE = "aws:ec2/instance:Instance"
KMS_KEY = "aws:kms/key:Key"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
DEFAULT_SECURITY_GROUP = "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup"
SECURITY_GROUP_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
SECURITY_GROUP_INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
AUTOSCALING_GROUP = "aws:autoscaling/group:Group"
IAM_POLICY = "aws:iam/policy:Policy"
IAM_ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
IAM_USER_POLICY = "aws:iam/userPolicy:UserPolicy"
IAM_GROUP_POLICY = "aws:iam/groupPolicy:GroupPolicy"
IAM_ROLE = "aws:iam/role:Role"
ROLE_POLICY_ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
USER_POLICY_ATTACHMENT = "aws:iam/userPolicyAttachment:UserPolicyAttachment"
GROUP_POLICY_ATTACHMENT = "aws:iam/groupPolicyAttachment:GroupPolicyAttachment"
POLICY_ATTACHMENT = "aws:iam/policyAttachment:PolicyAttachment"
ROLE_POLICY_ATTACHMENTS_EXCLUSIVE = "aws:iam/rolePolicyAttachmentsExclusive:RolePolicyAttachmentsExclusive"
USER_POLICY_ATTACHMENTS_EXCLUSIVE = "aws:iam/userPolicyAttachmentsExclusive:UserPolicyAttachmentsExclusive"
GROUP_POLICY_ATTACHMENTS_EXCLUSIVE = "aws:iam/groupPolicyAttachmentsExclusive:GroupPolicyAttachmentsExclusive"
BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
TOPIC_POLICY = "aws:sns/topicPolicy:TopicPolicy"
QUEUE_POLICY = "aws:sqs/queuePolicy:QueuePolicy"
BUCKET = "aws:s3/bucket:Bucket"
BUCKET_V2 = "aws:s3/bucketV2:BucketV2"
TOPIC = "aws:sns/topic:Topic"
QUEUE = "aws:sqs/queue:Queue"

_AWS_MANAGED_ALIAS = re.compile(r"(^|:)alias/aws/")

# ---------------------------------------------------------------- ebs-encrypted-with-cmk

_CMK_FIX = "Fix: set encrypted to true and kmsKeyId to the project's customer-managed KMS key ARN."


def _cmk_problem(encrypted: Any, kms_key_id: Any) -> str | None:
    """What is wrong with one volume's encryption settings, if anything.

    An unknown kmsKeyId with encrypted true passes: only a key this stack is still creating
    is unknown during preview (the aws/ebs alias would be a known string), and `pulumi up`
    checks the resolved ARN.
    """
    if not is_true(encrypted):
        return "is not encrypted"
    if kms_key_id is UNKNOWN:
        return None
    key = text(kms_key_id)
    if key is None:
        return "is encrypted with the AWS-managed default key (no kmsKeyId)"
    if _AWS_MANAGED_ALIAS.search(key):
        return f"is encrypted with the AWS-managed key {key!r}"
    return None


def validate_ebs_encrypted_with_cmk(
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig | None = None
) -> None:
    if resource_type == VOLUME:
        problem = _cmk_problem(props.get("encrypted"), peek(props, "kmsKeyId"))
        if problem:
            report(f"EBS volume {problem}. {_CMK_FIX}")
    elif resource_type == LAUNCH_TEMPLATE:
        devices = mappings(props.get("blockDeviceMappings"))
        if not devices:
            report(
                "Launch template declares no blockDeviceMappings, so the root volume takes the AMI's "
                'encryption settings. Fix: map the AMI\'s root device with ebs.encrypted "true" and '
                "ebs.kmsKeyId set to the project's customer-managed KMS key ARN."
            )
        for device in devices:
            ebs = entry(device, "ebs")
            if not isinstance(ebs, Mapping):
                continue  # instance-store or suppressed (noDevice) mapping: no EBS volume
            problem = _cmk_problem(ebs.get("encrypted"), peek(ebs, "kmsKeyId"))
            if problem:
                report(f"Launch template block device {device.get('deviceName')!r} {problem}. {_CMK_FIX}")
    elif resource_type == INSTANCE:
        root = entry(props, "rootBlockDevice")
        if isinstance(root, Mapping):
            problem = _cmk_problem(root.get("encrypted"), peek(root, "kmsKeyId"))
            if problem:
                report(f"Instance root block device {problem}. {_CMK_FIX}")
        elif peek(props, "launchTemplate") is None:
            report(
                "Instance sets no rootBlockDevice, so the root volume takes the AMI's encryption "
                "settings. Fix: add rootBlockDevice with encrypted true and kmsKeyId set to the "
                "project's customer-managed KMS key ARN (or launch it from a compliant launch template)."
            )
        for device in mappings(props.get("ebsBlockDevices")):
            problem = _cmk_problem(device.get("encrypted"), peek(device, "kmsKeyId"))
            if problem:
                report(f"Instance EBS block device {device.get('deviceName')!r} {problem}. {_CMK_FIX}")


# ---------------------------------------------------------------- kms-rotation-and-deletion-window

MIN_DELETION_WINDOW_DAYS = 14


def validate_kms_rotation_and_deletion_window(
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig | None = None
) -> None:
    if resource_type != KMS_KEY:
        return
    key_spec = text(props.get("customerMasterKeySpec")) or "SYMMETRIC_DEFAULT"
    # AWS rotates only symmetric keys held in KMS itself (not asymmetric, HMAC or custom-store keys).
    rotatable = key_spec == "SYMMETRIC_DEFAULT" and not props.get("customKeyStoreId") and not props.get("xksKeyId")
    if rotatable and not is_true(props.get("enableKeyRotation")):
        report("KMS key has automatic rotation off. Fix: set enableKeyRotation to true.")
    window = props.get("deletionWindowInDays")
    if window is not None:  # absent: AWS waits its default 30 days
        days = as_number(window)
        if days is None or days < MIN_DELETION_WINDOW_DAYS:
            report(
                f"KMS key deletionWindowInDays is {window!r}: a key scheduled for deletion by mistake "
                f"must stay recoverable for at least {MIN_DELETION_WINDOW_DAYS} days. Fix: set "
                f"deletionWindowInDays between {MIN_DELETION_WINDOW_DAYS} and 30, or leave it unset (30)."
            )


# ---------------------------------------------------------------- imdsv2-required

MAX_HOP_LIMIT = 2


def validate_imdsv2_required(
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig | None = None
) -> None:
    if resource_type not in (LAUNCH_TEMPLATE, INSTANCE):
        return
    options = props.get("metadataOptions")
    if resource_type == INSTANCE and options is None and peek(props, "launchTemplate") is not None:
        return  # the launch template's metadata options apply and are checked there
    kind = "Launch template" if resource_type == LAUNCH_TEMPLATE else "Instance"
    if entry(options, "httpEndpoint") == "disabled":
        return  # no metadata service at all
    if entry(options, "httpTokens") != "required":
        report(
            f"{kind} allows IMDSv1 (metadataOptions.httpTokens is {entry(options, 'httpTokens')!r}). "
            'Fix: set metadataOptions.httpTokens to "required".'
        )
    hop_limit = entry(options, "httpPutResponseHopLimit")
    if hop_limit is not None:  # absent: AWS default of 1
        hops = as_number(hop_limit)
        if hops is None or hops > MAX_HOP_LIMIT:
            report(
                f"{kind} metadataOptions.httpPutResponseHopLimit is {hop_limit!r}, which lets tokens travel "
                f"beyond the instance and its containers. Fix: set it to 1, or {MAX_HOP_LIMIT} for containers."
            )


# ---------------------------------------------------------------- no-world-open-ingress

_INGRESS_FIX = "Fix: allow only the VPC or a known CIDR, or reference a source security group."


def _world_open(rule: Mapping[str, Any], *keys: str) -> list[str]:
    """The rule's /0 sources. A known /0 is reported whatever else is unknown; with none, an unknown source
    leaves the rule undecided (UnknownInputError)."""
    open_cidrs = []
    unknown_key = None
    for key in keys:
        for cidr in peek_list(peek(rule, key)):
            if cidr is UNKNOWN:
                unknown_key = unknown_key or key
                continue
            try:
                if ipaddress.ip_network(str(cidr).strip(), strict=False).prefixlen == 0:
                    open_cidrs.append(str(cidr))
            except ValueError:
                continue
    if not open_cidrs and unknown_key:
        raise unknown_at(rule, unknown_key)
    return open_cidrs


def _port(value: Any) -> str:
    number = as_number(value)
    return str(int(number)) if number is not None and number.is_integer() else str(value)


def _ports(rule: Mapping[str, Any], protocol_key: str = "protocol") -> str:
    protocol = str(rule.get(protocol_key, ""))
    if protocol in ("-1", "all"):
        return "all traffic"
    from_port, to_port = _port(rule.get("fromPort")), _port(rule.get("toPort"))
    return f"{protocol} {from_port}" if from_port == to_port else f"{protocol} {from_port}-{to_port}"


def validate_no_world_open_ingress(
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig | None = None
) -> None:
    if resource_type in (SECURITY_GROUP, DEFAULT_SECURITY_GROUP):
        for rule in mappings(props.get("ingress")):
            open_cidrs = _world_open(rule, "cidrBlocks", "ipv6CidrBlocks")
            if open_cidrs:
                report(f"Security group ingress ({_ports(rule)}) is open to {', '.join(open_cidrs)}. {_INGRESS_FIX}")
    elif resource_type == SECURITY_GROUP_RULE:
        if props.get("type") == "ingress":
            open_cidrs = _world_open(props, "cidrBlocks", "ipv6CidrBlocks")
            if open_cidrs:
                report(f"Security group rule ({_ports(props)}) is open to {', '.join(open_cidrs)}. {_INGRESS_FIX}")
    elif resource_type == SECURITY_GROUP_INGRESS_RULE:
        open_cidrs = _world_open(props, "cidrIpv4", "cidrIpv6")
        if open_cidrs:
            report(
                f"Security group ingress rule ({_ports(props, 'ipProtocol')}) is open to "
                f"{', '.join(open_cidrs)}. {_INGRESS_FIX}"
            )


# ---------------------------------------------------------------- iam-least-privilege

_IDENTITY_POLICY_TYPES = (IAM_POLICY, IAM_ROLE_POLICY, IAM_USER_POLICY, IAM_GROUP_POLICY)
_RESOURCE_POLICY_TYPES = {BUCKET_POLICY: "bucket", TOPIC_POLICY: "topic", QUEUE_POLICY: "queue"}
_INLINE_RESOURCE_POLICY_TYPES = {BUCKET: "bucket", BUCKET_V2: "bucket", TOPIC: "topic", QUEUE: "queue"}
_POLICY_ARN_TYPES = (ROLE_POLICY_ATTACHMENT, USER_POLICY_ATTACHMENT, GROUP_POLICY_ATTACHMENT, POLICY_ATTACHMENT)
_POLICY_ARNS_TYPES = (
    ROLE_POLICY_ATTACHMENTS_EXCLUSIVE,
    USER_POLICY_ATTACHMENTS_EXCLUSIVE,
    GROUP_POLICY_ATTACHMENTS_EXCLUSIVE,
)
IAM_TYPES = frozenset(
    {KMS_KEY, IAM_ROLE, *_IDENTITY_POLICY_TYPES, *_RESOURCE_POLICY_TYPES, *_INLINE_RESOURCE_POLICY_TYPES}
    | {*_POLICY_ARN_TYPES, *_POLICY_ARNS_TYPES}
)

# AWS managed policies that grant administrator, IAM or whole-service access. Any AWS managed
# policy named *FullAccess grants a whole service (the managed form of "service:*").
BROAD_MANAGED_POLICIES = frozenset(
    {
        "AdministratorAccess",
        "PowerUserAccess",
        "IAMFullAccess",
        "ReadOnlyAccess",
        "AWSKeyManagementServicePowerUser",
        "job-function/SystemAdministrator",
        "job-function/NetworkAdministrator",
        "job-function/DatabaseAdministrator",
    }
)
_AWS_MANAGED_POLICY = re.compile(r"^arn:aws[a-z-]*:iam::aws:policy/(?P<name>.+)$")


def broad_managed_policy(policy_arn: Any) -> str | None:
    """The name of the AWS managed policy the ARN denotes when it is on the deny-list, else None."""
    match = _AWS_MANAGED_POLICY.match(policy_arn) if isinstance(policy_arn, str) else None
    if match is None:
        return None
    name = match["name"]
    leaf = name.rsplit("/", 1)[-1]
    if name in BROAD_MANAGED_POLICIES or leaf in BROAD_MANAGED_POLICIES or leaf.endswith("FullAccess"):
        return name
    return None


def _attached_policy_arns(resource_type: str, props: Mapping[str, Any]) -> list[Any]:
    """Managed policy ARNs a resource attaches. An unknown ARN is a policy this stack creates (an
    AWS managed one is a known string), which this rule checks as a policy of its own."""
    if resource_type in _POLICY_ARN_TYPES:
        return [peek(props, "policyArn")]
    if resource_type in _POLICY_ARNS_TYPES:
        return peek_list(peek(props, "policyArns"))
    if resource_type == IAM_ROLE:
        return peek_list(peek(props, "managedPolicyArns"))
    return []


def _identity_documents(resource_type: str, props: Mapping[str, Any]) -> list[tuple[str, Any]]:
    if resource_type in _IDENTITY_POLICY_TYPES:
        return [("policy", props.get("policy"))]
    if resource_type == IAM_ROLE:  # assumeRolePolicy is a trust policy: exempt
        # Role outputs list an empty {name: "", policy: ""} when there is no inline policy.
        return [
            (f"inline policy {inline.get('name')!r}", inline.get("policy"))
            for inline in mappings(props.get("inlinePolicies"))
            if inline.get("policy") is not None
            and not (isinstance(inline.get("policy"), str) and not inline["policy"].strip())
        ]
    return []


def _identity_findings(document: Any) -> list[iam_lint.IamFinding] | None:
    """Parliament's findings on an identity policy with no plain-rule problem; None when it has one."""
    try:
        statements = iam_documents.parse_document(document)
    except iam_documents.InvalidPolicyDocument:
        return None
    if iam_documents.identity_policy_problems(statements):
        return None
    return iam_lint.lint_policy(document)


def _check_identity_document(where: str, document: Any, report: Report) -> None:
    try:
        statements = iam_documents.parse_document(document)
    except iam_documents.InvalidPolicyDocument as error:
        report(f"IAM {where} is {error}. Fix: build the document with json.dumps of a policy object.")
        return
    problems = iam_documents.identity_policy_problems(statements)
    for problem in problems:
        report(f"IAM {where}: {problem}. Fix: list the specific actions and resources the workload uses.")
    if problems:
        return  # parliament would only restate these at length; lint once they are fixed
    try:
        findings = iam_lint.lint_policy(document)
    except iam_lint.LinterUnavailableError as error:
        report(f"IAM {where} could not be linted: {error}.")
        return
    for same_issue in iam_lint.group_by_issue(finding for finding in findings if finding.counts):
        report(
            f"IAM {where}: parliament reports {iam_lint.summarize(same_issue)}. Fix: narrow the "
            "statement, or add a reviewed entry to gpucloud.policy.iam_lint.ACCEPTED_FINDINGS if AWS requires it."
        )


def accepted_iam_findings(resource_type: str, props: Mapping[str, Any]) -> list[tuple[str, iam_lint.IamFinding]]:
    """Medium-or-worse parliament findings that ACCEPTED_FINDINGS lets through, with the document they are in.

    They pass the gate, so the plan lists them for the reviewer together with the reason.
    """
    accepted = []
    for where, document in _identity_documents(resource_type, props):
        if document is None:
            continue
        try:
            findings = _identity_findings(document) or []
        except iam_lint.LinterUnavailableError:
            continue  # the rule itself reports the document as not linted
        accepted += [(where, finding) for finding in findings if finding.accepted]
    return accepted


def _check_policy_document(
    label: str,
    document: Any,
    problems: Callable[[list[iam_documents.Statement]], list[str]],
    fix: str,
    report: Report,
) -> None:
    """Parse a key or resource policy and report each of its problems with the fix for that kind."""
    try:
        statements = iam_documents.parse_document(document)
    except iam_documents.InvalidPolicyDocument as error:
        report(f"{label} is {error}. Fix: build the document with json.dumps of a policy object.")
        return
    for problem in problems(statements):
        report(f"{label}: {problem}. Fix: {fix}")


def _check_resource_policy(kind: str, document: Any, report: Report) -> None:
    _check_policy_document(
        f"{kind.capitalize()} policy",
        document,
        iam_documents.resource_policy_problems,
        "grant named principals only the actions they use.",
        report,
    )


def validate_iam_least_privilege(
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig | None = None
) -> None:
    if resource_type == KMS_KEY:
        document = props.get("policy")
        if document is None:
            return  # AWS's default key policy: full control for the account root only
        _check_policy_document(
            "KMS key policy",
            document,
            iam_documents.key_policy_problems,
            "grant other principals only the kms actions they use.",
            report,
        )
        return
    if resource_type in _RESOURCE_POLICY_TYPES:
        kind = _RESOURCE_POLICY_TYPES[resource_type]
        document = props.get("policy")
        if document is None:
            report(f"{kind.capitalize()} policy document is missing. Fix: provide the policy document.")
        else:
            _check_resource_policy(kind, document, report)
        return
    if resource_type in _INLINE_RESOURCE_POLICY_TYPES:
        document = props.get("policy")
        if document is not None and not (isinstance(document, str) and not document.strip()):
            _check_resource_policy(_INLINE_RESOURCE_POLICY_TYPES[resource_type], document, report)
        return
    for policy_arn in _attached_policy_arns(resource_type, props):
        name = broad_managed_policy(policy_arn)
        if name:
            report(
                f"Attaches the AWS managed policy {name} ({policy_arn}), which grants far more than a workload "
                "needs. Fix: attach a customer-managed policy listing the specific actions and resources."
            )
    for where, document in _identity_documents(resource_type, props):
        if document is None:
            report(f"IAM {where} is missing. Fix: provide the policy document.")
            continue
        _check_identity_document(where, document, report)


# ---------------------------------------------------------------- required-tags


def _tag_values(resource_type: str, props: Mapping[str, Any], key: str) -> list[tuple[Any, Any, Any]]:
    """The tag's value in each place tags come from, with the container and key it was read at.

    Values may be UNKNOWN: tagsAll (tags plus the provider's default tags) is unknown while a
    new resource is previewed.
    """
    if resource_type == AUTOSCALING_GROUP:  # a list of {key, value, propagateAtLaunch}
        tags = {str(tag.get("key")): tag.get("value") for tag in mappings(props.get("tags"))}
        return [(tags.get(key), tags, key)]
    found = []
    for source in ("tagsAll", "tags"):
        tags = peek(props, source)
        if tags is UNKNOWN:
            found.append((UNKNOWN, props, source))
        elif isinstance(tags, Mapping):
            found.append((peek(tags, key), tags, key))
    return found


def validate_required_tags(
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig | None = None
) -> None:
    if not is_taggable(resource_type):
        return
    config = config or PolicyConfig()
    missing = []
    for key in config.required_tags:
        values = _tag_values(resource_type, props, key)
        if any(value is not UNKNOWN and text(value) is not None for value, _, _ in values):
            continue
        unknown = [(container, where) for value, container, where in values if value is UNKNOWN]
        if unknown:
            raise unknown_at(*unknown[0])  # an unknown value or tagsAll may still hold the tag
        missing.append(key)
    if missing:
        report(
            f"Resource is missing the required tags {', '.join(missing)} (cost and ownership reports "
            f"group by them). Fix: pass tags with non-empty {', '.join(config.required_tags)}."
        )


# ---------------------------------------------------------------- asg-bounded-and-rebalanced


def validate_asg_bounded_and_rebalanced(
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig | None = None
) -> None:
    if resource_type != AUTOSCALING_GROUP:
        return
    config = config or PolicyConfig()
    max_size = as_number(props.get("maxSize"))
    if max_size is None:
        report(f"Auto Scaling group maxSize is {props.get('maxSize')!r}, not a finite number. Fix: set maxSize.")
    elif max_size > config.max_group_size:
        report(
            f"Auto Scaling group maxSize {max_size:g} exceeds this stack's cap of {config.max_group_size}. "
            "Fix: lower maxSize, or raise maxGroupSize for this stack in the policy pack config."
        )
    distribution = entry(props.get("mixedInstancesPolicy"), "instancesDistribution")
    if isinstance(distribution, Mapping):
        on_demand = distribution.get("onDemandPercentageAboveBaseCapacity")
        percentage = 100.0 if on_demand is None else as_number(on_demand)  # AWS default: 100
        if (percentage is None or percentage < 100) and not is_true(props.get("capacityRebalance")):
            report(
                f"Auto Scaling group runs Spot (onDemandPercentageAboveBaseCapacity={on_demand!r}) without "
                "capacity rebalancing. Fix: set capacityRebalance to true so at-risk Spot instances are "
                "replaced before they are interrupted."
            )


# ---------------------------------------------------------------- no-public-ip


def validate_no_public_ip(
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig | None = None
) -> None:
    fix = "Fix: set associatePublicIpAddress to false and reach instances through SSM or a private network."
    if resource_type == LAUNCH_TEMPLATE:
        for index, interface in enumerate(mappings(props.get("networkInterfaces"))):
            if is_true(interface.get("associatePublicIpAddress")):
                report(
                    f"Launch template network interface {interface.get('deviceIndex', index)!r} gets a public IP. {fix}"
                )
    elif resource_type == INSTANCE and is_true(props.get("associatePublicIpAddress")):
        report(f"Instance gets a public IP. {fix}")
