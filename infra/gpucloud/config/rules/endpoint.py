"""Rules between a group's endpoint (`groups[].endpoint`) and the rest of the stack: the container
that serves its port, the zones an Application Load Balancer needs, and an internet-facing one's
public subnets."""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING

from gpucloud.config.errors import NAMESPACE

if TYPE_CHECKING:
    from gpucloud.config.stack import StackConfig


def endpoint_problems(config: StackConfig) -> list[tuple[str, str]]:
    """Rules between a group's endpoint and the rest of the stack, each named by the key to change."""
    problems: list[tuple[str, str]] = []
    network = config.network
    for index, group in enumerate(config.groups):
        endpoint = group.endpoint
        if endpoint is None:
            continue
        key = f"{NAMESPACE}:groups[{index}].endpoint"
        if group.services.port_of(endpoint.port) is None:
            problems.append((f"{key}.port", f"{endpoint.port} is served by no container service of group "
                             f"{group.name!r}: add one under services.containers with port: {endpoint.port}"))
        # "You must specify subnets from at least two Availability Zones" (Elastic Load Balancing user
        # guide, "Application Load Balancers": Availability Zones, read 2026-11-25).
        if network.created and network.zones < 2:
            problems.append((f"{NAMESPACE}:network.zones", f"is {network.zones}, and the endpoint of group {group.name!r} "
                             "is an Application Load Balancer, which needs subnets in at least two zones: use zones: 2"))
        if not network.created and len(network.subnet_ids or []) < 2:
            problems.append((f"{NAMESPACE}:network.subnetIds", f"lists one subnet, and the endpoint of group {group.name!r} "
                             "is an Application Load Balancer, which needs subnets in at least two zones"))
        if endpoint.internet_facing:
            problems.extend(_internet_facing_problems(config, group.name, key))
    return problems


SMALLEST_LOAD_BALANCER_SUBNET = 27
"""An Application Load Balancer's subnets "must have at least a /27 bitmask" (Elastic Load Balancing
user guide, "Application Load Balancers", Subnets, read 2026-11-25)."""


def _internet_facing_problems(config: StackConfig, group: str, key: str) -> list[tuple[str, str]]:
    """An internet-facing load balancer goes in subnets whose route table sends 0.0.0.0/0 to an
    internet gateway. Only the network the stack creates with NAT egress has such subnets (the NAT
    subnets, one per zone when an endpoint faces the internet); subnets of your own VPC are not
    classified here, so such a stack keeps its endpoint internal."""
    network = config.network
    if not network.created:
        return [(f"{key}.internetFacing", f"is true for group {group!r}, and the stack runs in subnetIds of your own "
                 "VPC, whose public subnets gpu-cloud does not know: keep the endpoint internal (drop internetFacing) "
                 "and publish it from your VPC's own public entry point")]
    if network.egress != "nat":
        return [(f"{NAMESPACE}:network.egress", f"is {network.egress}, which has no internet gateway, and the endpoint "
                 f"of group {group!r} is internetFacing: use egress: nat, or drop internetFacing")]
    public_prefix = ipaddress.ip_network(network.cidr).prefixlen + 6
    if public_prefix > SMALLEST_LOAD_BALANCER_SUBNET:
        return [(f"{NAMESPACE}:network.cidr", f"{network.cidr} makes /{public_prefix} public subnets (its 64ths), "
                 f"smaller than the /{SMALLEST_LOAD_BALANCER_SUBNET} an Application Load Balancer needs for the "
                 f"internet-facing endpoint of group {group!r}: use a /21 or larger block")]
    return []
