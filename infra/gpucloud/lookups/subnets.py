"""The listed subnets (`network.subnetIds`): each exists, all in one VPC, and each has a way out
for nodes that get no public IP."""

from __future__ import annotations

from gpucloud.config import StackSettings
from gpucloud.config.node_endpoints import describe, needed_endpoints
from gpucloud.lookups.facts import EGRESS_TARGETS, AwsLookups, Subnet
from gpucloud.lookups.problems import Problems


def listed_subnets(settings: StackSettings, lookups: AwsLookups, problems: Problems) -> list[Subnet]:
    """The listed subnets in the order given (a single-zone group takes the first whose zone offers its types)."""
    subnets = []
    for index, subnet_id in enumerate(settings.config.network.subnet_ids or ()):
        subnet = lookups.subnet(subnet_id)
        if subnet is None:
            problems.add(f"network.subnetIds[{index}]", f"{subnet_id} does not exist in {settings.region}")
        else:
            _check_egress(settings, lookups, subnet, f"network.subnetIds[{index}]", problems)
            subnets.append(subnet)
    if len({subnet.vpc_id for subnet in subnets}) > 1:
        problems.add("network.subnetIds", "spans several VPCs; list subnets of one VPC")
    return subnets


def _check_egress(settings: StackSettings, lookups: AwsLookups, subnet: Subnet, key: str, problems: Problems) -> None:
    """Nodes get no public IP, so a node in a subnet whose only way out is an internet gateway, or
    that has no default route and lacks an endpoint it calls, never passes its launch hook."""
    defaults = [route for route in lookups.subnet_routes(subnet) if route.destination == "0.0.0.0/0"]
    if any(route.target_kind in EGRESS_TARGETS for route in defaults):
        return
    if any(route.target_kind == "internet-gateway" for route in defaults):
        problems.add(key, f"{subnet.id} routes 0.0.0.0/0 only to internet gateway "
                     f"{next(route.target for route in defaults if route.target_kind == 'internet-gateway')}, and "
                     "nodes get no public IP: they could not reach Auto Scaling, S3 or CloudWatch. List private "
                     "subnets whose default route goes to a NAT gateway (or a transit gateway or firewall), or drop "
                     "network.subnetIds to let the stack create its network")
        return
    missing = {service: why for service, why in needed_endpoints(settings.config).items()
               if not lookups.has_vpc_endpoint(subnet.vpc_id, f"com.amazonaws.{settings.region}.{service}")}
    if missing:
        problems.add(key, f"{subnet.id} has no default route (no NAT, transit gateway or firewall) and its VPC "
                     f"lacks the VPC endpoints for {describe(missing)}, which the nodes call: add them, or a "
                     "default route to a NAT gateway")
