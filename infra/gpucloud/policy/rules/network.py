"""Network exposure rules: no ingress open to the world, no public IP on instances."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from gpucloud.policy.model import UNKNOWN, PolicyConfig, Report
from gpucloud.policy.resource_types import (
    DEFAULT_SECURITY_GROUP,
    INSTANCE,
    LAUNCH_TEMPLATE,
    SECURITY_GROUP,
    SECURITY_GROUP_INGRESS_RULE,
    SECURITY_GROUP_RULE,
)
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
