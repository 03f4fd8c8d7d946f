"""Resource-level rules of the review gate, as plain functions.

Each validator has the signature ``validate(resource_type, props, report, config)``:
``props`` are the resource's inputs under pulumi-aws v7 wire names (camelCase),
``report`` takes one message per violation.  Every message ends with how to fix it.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from . import iam_documents, iam_lint
from .model import PolicyConfig, Report
from .taggable import is_taggable
from .values import as_list, as_number, entry, is_true, mappings, text

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

_AWS_MANAGED_ALIAS = re.compile(r"(^|:)alias/aws/")

# ---------------------------------------------------------------- ebs-encrypted-with-cmk

_CMK_FIX = "Fix: set encrypted to true and kmsKeyId to the project's customer-managed KMS key ARN."


def _cmk_problem(encrypted: Any, kms_key_id: Any) -> str | None:
    if not is_true(encrypted):
        return "is not encrypted"
    key = text(kms_key_id)
    if key is None:
        return "is encrypted with the AWS-managed default key (no kmsKeyId)"
    if _AWS_MANAGED_ALIAS.search(key):
        return f"is encrypted with the AWS-managed key {key!r}"
    return None


def validate_ebs_encrypted_with_cmk(
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig
) -> None:
    if resource_type == VOLUME:
        problem = _cmk_problem(props.get("encrypted"), props.get("kmsKeyId"))
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
            problem = _cmk_problem(ebs.get("encrypted"), ebs.get("kmsKeyId"))
            if problem:
                report(f"Launch template block device {device.get('deviceName')!r} {problem}. {_CMK_FIX}")
    elif resource_type == INSTANCE:
        root = entry(props, "rootBlockDevice")
        if isinstance(root, Mapping):
            problem = _cmk_problem(root.get("encrypted"), root.get("kmsKeyId"))
            if problem:
                report(f"Instance root block device {problem}. {_CMK_FIX}")
        elif props.get("launchTemplate") is None:
            report(
                "Instance sets no rootBlockDevice, so the root volume takes the AMI's encryption "
                "settings. Fix: add rootBlockDevice with encrypted true and kmsKeyId set to the "
                "project's customer-managed KMS key ARN (or launch it from a compliant launch template)."
            )
        for device in mappings(props.get("ebsBlockDevices")):
            problem = _cmk_problem(device.get("encrypted"), device.get("kmsKeyId"))
            if problem:
                report(f"Instance EBS block device {device.get('deviceName')!r} {problem}. {_CMK_FIX}")


# ---------------------------------------------------------------- kms-rotation-and-deletion-window

MIN_DELETION_WINDOW_DAYS = 14


def validate_kms_rotation_and_deletion_window(
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig
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
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig
) -> None:
    if resource_type not in (LAUNCH_TEMPLATE, INSTANCE):
        return
    options = props.get("metadataOptions")
    if resource_type == INSTANCE and options is None and props.get("launchTemplate") is not None:
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


def _world_open(*cidr_lists: Any) -> list[str]:
    open_cidrs = []
    for cidr in (cidr for cidrs in cidr_lists for cidr in as_list(cidrs)):
        try:
            if ipaddress.ip_network(str(cidr).strip(), strict=False).prefixlen == 0:
                open_cidrs.append(str(cidr))
        except ValueError:
            continue
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
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig
) -> None:
    if resource_type in (SECURITY_GROUP, DEFAULT_SECURITY_GROUP):
        for rule in mappings(props.get("ingress")):
            open_cidrs = _world_open(rule.get("cidrBlocks"), rule.get("ipv6CidrBlocks"))
            if open_cidrs:
                report(f"Security group ingress ({_ports(rule)}) is open to {', '.join(open_cidrs)}. {_INGRESS_FIX}")
    elif resource_type == SECURITY_GROUP_RULE:
        if props.get("type") == "ingress":
            open_cidrs = _world_open(props.get("cidrBlocks"), props.get("ipv6CidrBlocks"))
            if open_cidrs:
                report(f"Security group rule ({_ports(props)}) is open to {', '.join(open_cidrs)}. {_INGRESS_FIX}")
    elif resource_type == SECURITY_GROUP_INGRESS_RULE:
        open_cidrs = _world_open(props.get("cidrIpv4"), props.get("cidrIpv6"))
        if open_cidrs:
            report(
                f"Security group ingress rule ({_ports(props, 'ipProtocol')}) is open to "
                f"{', '.join(open_cidrs)}. {_INGRESS_FIX}"
            )


# ---------------------------------------------------------------- iam-least-privilege

_IDENTITY_POLICY_TYPES = (IAM_POLICY, IAM_ROLE_POLICY, IAM_USER_POLICY, IAM_GROUP_POLICY)


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


def validate_iam_least_privilege(
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig
) -> None:
    if resource_type == KMS_KEY:
        document = props.get("policy")
        if document is None:
            return  # AWS's default key policy: full control for the account root only
        try:
            statements = iam_documents.parse_document(document)
        except iam_documents.InvalidPolicyDocument as error:
            report(f"KMS key policy is {error}. Fix: build the document with json.dumps of a policy object.")
            return
        for problem in iam_documents.key_policy_problems(statements):
            report(f"KMS key policy: {problem}. Fix: grant other principals only the kms actions they use.")
        return
    for where, document in _identity_documents(resource_type, props):
        if document is None:
            report(f"IAM {where} is missing. Fix: provide the policy document.")
            continue
        _check_identity_document(where, document, report)


# ---------------------------------------------------------------- required-tags


def _tags(resource_type: str, props: Mapping[str, Any]) -> dict[str, Any]:
    if resource_type == AUTOSCALING_GROUP:  # a list of {key, value, propagateAtLaunch}
        return {str(tag.get("key")): tag.get("value") for tag in mappings(props.get("tags"))}
    tags: dict[str, Any] = {}
    for source in ("tagsAll", "tags"):  # tagsAll holds provider default tags once known
        value = props.get(source)
        if isinstance(value, Mapping):
            tags.update({str(key): value[key] for key in value})
    return tags


def validate_required_tags(resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig) -> None:
    if not is_taggable(resource_type):
        return
    tags = _tags(resource_type, props)
    missing = [key for key in config.required_tags if text(tags.get(key)) is None]
    if missing:
        report(
            f"Resource is missing the required tags {', '.join(missing)} (cost and ownership reports "
            f"group by them). Fix: pass tags with non-empty {', '.join(config.required_tags)}."
        )


# ---------------------------------------------------------------- asg-bounded-and-rebalanced


def validate_asg_bounded_and_rebalanced(
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig
) -> None:
    if resource_type != AUTOSCALING_GROUP:
        return
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


def validate_no_public_ip(resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig) -> None:
    fix = "Fix: set associatePublicIpAddress to false and reach instances through SSM or a private network."
    if resource_type == LAUNCH_TEMPLATE:
        for index, interface in enumerate(mappings(props.get("networkInterfaces"))):
            if is_true(interface.get("associatePublicIpAddress")):
                report(
                    f"Launch template network interface {interface.get('deviceIndex', index)!r} gets a public IP. {fix}"
                )
    elif resource_type == INSTANCE and is_true(props.get("associatePublicIpAddress")):
        report(f"Instance gets a public IP. {fix}")
