"""Network exposure rules: no ingress open to the world, no public IP on instances, no S3 gateway
endpoint that lets nodes reach any bucket, no interface endpoint open to any account's principals."""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from gpucloud.policy.model import UNKNOWN, PolicyConfig, Report
from gpucloud.policy.resource_types import (
    DEFAULT_SECURITY_GROUP,
    INSTANCE,
    LAUNCH_TEMPLATE,
    SECURITY_GROUP,
    SECURITY_GROUP_INGRESS_RULE,
    SECURITY_GROUP_RULE,
    VPC_ENDPOINT,
)
from gpucloud.policy import iam_documents
from gpucloud.policy.values import as_number, is_true, mappings, peek, peek_list, unknown_at

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


# ---------------------------------------------------------------- s3-gateway-endpoint-restricted

_RESOURCE_ACCOUNT_KEYS = frozenset({"aws:resourceaccount", "s3:resourceaccount"})


def _any_bucket(statement: iam_documents.Statement) -> list[str]:
    """The statement's resources that match every bucket (`*`, `arn:aws:s3:::*`, `arn:aws:s3:::*/*`),
    unless a positive condition holds them to named accounts' buckets."""
    held = any(
        key in _RESOURCE_ACCOUNT_KEYS and "not" not in operator.lower() and values
        and not any(set(value) <= {"*", "?"} for value in values)
        for operator, key, values in statement.conditions
    )
    if held or statement.not_resources:
        return ["NotResource"] if statement.not_resources and not held else []
    return [resource for resource in statement.resources if _matches_every_bucket(resource)]


_S3_BUCKET_ARN = re.compile(r"^arn:[^:]*:s3:::(?P<bucket>[^/]+)")


def _matches_every_bucket(resource: str) -> bool:
    match = _S3_BUCKET_ARN.match(resource)
    return resource == "*" or (match is not None and set(match["bucket"]) <= {"*", "?"})


def _endpoint_statements(props: Mapping[str, Any], report: Report, absent: str, named: str,
                         fix: str) -> list[iam_documents.Statement]:
    """A VPC endpoint policy's statements; none, with `absent` reported, where it has no policy, and
    none, with why, where it is not a policy document."""
    policy = peek(props, "policy")
    if policy is UNKNOWN:
        raise unknown_at(props, "policy")
    if not policy:
        report(absent)
        return []
    try:
        return iam_documents.parse_document(policy)
    except iam_documents.InvalidPolicyDocument as error:
        report(f"{named} is not a policy document: {error}. {fix}")
        return []


def validate_s3_gateway_endpoint_restricted(
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig | None = None
) -> None:
    """An S3 gateway endpoint without a policy keeps AWS's full access: anything in the VPC can read
    and write any bucket of any account through it (VPC user guide, "Gateway endpoints for Amazon
    S3" and "Control access to VPC endpoints using endpoint policies", read 2026-11-25)."""
    if resource_type != VPC_ENDPOINT:
        return
    service = peek(props, "serviceName")
    if service is UNKNOWN:
        raise unknown_at(props, "serviceName")
    if str(peek(props, "vpcEndpointType") or "Gateway") != "Gateway" or not str(service).endswith(".s3"):
        return
    fix = ("Fix: set a policy that allows only the buckets the nodes need (or holds them to your account with "
           "aws:ResourceAccount), as gpucloud.documents.s3_gateway_endpoint_policy does.")
    statements = _endpoint_statements(
        props, report, f"S3 gateway endpoint ({service}) has no policy, so AWS's default allows every action on every "
        f"bucket. {fix}", "S3 gateway endpoint policy", fix)
    for statement in statements:
        if statement.allow and (statement.not_actions or any(
                action == "*" or action.lower().startswith("s3:") for action in statement.actions)):
            reached = _any_bucket(statement)
            if reached:
                report(f"S3 gateway endpoint policy statement {statement.sid} allows S3 on any bucket "
                       f"({', '.join(reached)}). {fix}")


# ---------------------------------------------------------------- vpc-endpoint-has-policy

_ENDPOINT_POLICY_SUPPORT = Path(__file__).resolve().parents[2] / "data" / "vpc_endpoint_policies.json"
_PRINCIPAL_KEYS = frozenset({"aws:principalaccount", "aws:principalarn", "aws:principalorgid", "aws:principalorgpaths"})


@cache
def _services_without_policy() -> frozenset[str]:
    """Interface endpoint services AWS gives no policy (data/vpc_endpoint_policies.json names the sources)."""
    return frozenset(json.loads(_ENDPOINT_POLICY_SUPPORT.read_text(encoding="utf-8"))["withoutPolicy"])


def _any_principal(statement: iam_documents.Statement) -> bool:
    """An Allow that any principal of any account may use: NotPrincipal, or `*` with no positive
    condition naming the principal's account, ARN or organization."""
    if statement.not_principal:
        return True
    if "*" not in statement.principals:
        return False
    return not any(
        key in _PRINCIPAL_KEYS and "not" not in operator.lower() and not operator.lower().endswith("ifexists")
        and values and not any(set(value) <= {"*", "?"} for value in values)
        for operator, key, values in statement.conditions
    )


def validate_vpc_endpoint_has_policy(
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig | None = None
) -> None:
    """An interface endpoint without a policy keeps AWS's default, which lets any principal of any
    account do anything through it: a node could move data out with another account's credentials
    (AWS PrivateLink guide, "Control access to VPC endpoints using endpoint policies", read
    2026-11-28). Services that take no endpoint policy are left alone."""
    if resource_type != VPC_ENDPOINT or str(peek(props, "vpcEndpointType") or "Gateway") != "Interface":
        return
    service = peek(props, "serviceName")
    if service is UNKNOWN:
        raise unknown_at(props, "serviceName")
    parts = str(service).split(".", 3)
    if len(parts) == 4 and parts[3] in _services_without_policy():
        return
    fix = ("Fix: set a policy that allows only your account's principals (aws:PrincipalAccount), as "
           "gpucloud.documents.endpoints.interface_endpoint_policy does.")
    statements = _endpoint_statements(
        props, report, f"Interface endpoint ({service}) has no policy, so AWS's default lets any principal of any account "
        f"use it. {fix}", f"Interface endpoint policy ({service})", fix)
    for statement in statements:
        if statement.allow and _any_principal(statement):
            report(f"Interface endpoint policy ({service}) statement {statement.sid} allows any principal of any "
                   f"account. {fix}")
