"""GpuNetwork: a VPC whose node subnets reach AWS and the internet only through NAT or endpoints."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from gpucloud.documents import flow_logs_assume_role_policy, flow_logs_role_policy, s3_gateway_endpoint_policy
from gpucloud.documents.endpoints import interface_endpoint_policy
from gpucloud.naming import flow_log_group_prefix, flow_logs_role_name


@dataclass(frozen=True)
class GpuNetworkArgs:
    name_base: str
    """What the names AWS wants unique are built from (`gpucloud.naming.name_base`)."""
    zones: Sequence[str]
    """Availability zones, in order: one private node subnet each (and one NAT subnet each with NAT egress)."""
    region: str
    """The region it is deployed in."""
    account_id: str
    """The deploying account's id, for the ARNs its policies name."""
    kms_key_arn: pulumi.Input[str]
    """Encrypts the flow log group; its policy must let CloudWatch Logs use it for that group."""
    cidr: str = "10.64.0.0/16"
    """The VPC's range: its first eighths hold the node subnets, 64ths of its last eighth the NAT subnets."""
    nat_gateways: str = "single"
    """`single` (one NAT gateway, in the first zone) or `perZone` (each zone keeps egress when another fails)."""
    egress: str = "nat"
    """`nat`, or `endpointsOnly`: no internet gateway and no NAT; the nodes reach only S3 and the interface endpoints."""
    interface_endpoints: Sequence[str] = ()
    """AWS services reached through interface endpoints in the node subnets (`ssm`, `logs`, ...)."""
    flow_logs_retention_days: int = 30
    """Days the VPC flow log group keeps its records."""
    s3_buckets: Sequence[str] = ()
    """The stack's own buckets (artifacts, `data.bucket`): the only ones of the account the S3
    gateway endpoint lets through, besides AWS's package buckets (`s3_gateway_endpoint_policy`)."""
    package_buckets: Sequence[str] = ()
    """AWS's buckets the nodes download from besides `aws_owned_package_buckets` (Mountpoint's
    release bucket with `storage.s3Mount.install: download`): unsigned reads of them pass the S3
    gateway endpoint."""
    partition: str = "aws"
    """The AWS partition of the ARNs it writes (`aws`, `aws-cn`, `aws-us-gov`)."""
    public_subnets_in_every_zone: bool = False
    """With NAT egress, a public subnet in every zone, not only those holding a NAT gateway: an
    internet-facing load balancer needs one in each of its (at least two) zones."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """Tags on every resource it creates."""


def subnet_plan(cidr: str, zone_count: int) -> tuple[list[str], list[str]]:
    """Node subnets are the VPC's first eighths, one per zone; NAT subnets the 64ths of its last
    eighth, so a /16 gives /19 node subnets (8,187 addresses each) and /22 NAT subnets."""
    network = ipaddress.ip_network(cidr)
    eighths = list(network.subnets(prefixlen_diff=3))
    small = list(eighths[-1].subnets(prefixlen_diff=3))
    return [str(block) for block in eighths[:zone_count]], [str(block) for block in small[:zone_count]]


class GpuNetwork(pulumi.ComponentResource):
    """Private node subnets (no public IPs) whose default route goes to a NAT gateway, never to the
    internet gateway; small public subnets that hold only the NAT gateways (and an internet-facing
    load balancer, when a group declares one); an S3 gateway endpoint
    (free, and data-lake traffic skips the NAT's per-GB charge); interface endpoints on request, each
    held to the account's principals by its policy where the service takes one;
    VPC flow logs to a log group encrypted with the project key; a default security group with no rules."""

    vpc_id: pulumi.Output[str]
    """The VPC the stack creates."""
    private_subnet_ids: dict[str, pulumi.Output[str]]
    """Node subnet id per availability zone."""
    nat_gateway_ids: list[pulumi.Output[str]]
    """The NAT gateways (one, or one per zone); empty with endpointsOnly egress."""
    public_subnet_ids: dict[str, pulumi.Output[str]]
    """Public subnet id per availability zone (route to the internet gateway); empty without NAT egress."""
    public_routing: list[pulumi.Resource]
    """The public subnets' route table associations and internet gateway route: what an
    internet-facing load balancer must wait for to be reachable."""
    flow_log_group_name: pulumi.Output[str]
    """The log group the VPC flow logs go to."""
    egress_dependencies: list[pulumi.Resource]
    """What a node's way out is made of (route table associations, NAT gateways, routes, endpoints):
    a group launched before them boots with no egress, misses its launch hook and is abandoned,
    GPU hours billed; so every group `depends_on` them, not on the subnet ids alone."""

    def __init__(self, name: str, args: GpuNetworkArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-cloud:index:GpuNetwork", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = dict(args.tags)
        private_blocks, public_blocks = subnet_plan(args.cidr, len(args.zones))
        self.vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=args.cidr,
            enable_dns_support=True,
            enable_dns_hostnames=True,
            tags={**tags, "Name": f"gpu-cloud-{args.name_base}"},
            opts=child,
        )
        vpc_child = pulumi.ResourceOptions(parent=self.vpc)
        aws.ec2.DefaultSecurityGroup(
            f"{name}-default-sg",
            vpc_id=self.vpc.id,
            ingress=[],
            egress=[],
            tags={**tags, "Name": f"gpu-cloud-{args.name_base}-default-no-rules"},
            opts=vpc_child,
        )
        self.private_subnet_ids = {}
        self.egress_dependencies = []
        private_tables = {}
        for zone, block in zip(args.zones, private_blocks):
            subnet = aws.ec2.Subnet(
                f"{name}-nodes-{zone}",
                vpc_id=self.vpc.id,
                cidr_block=block,
                availability_zone=zone,
                map_public_ip_on_launch=False,
                tags={**tags, "Name": f"gpu-cloud-{args.name_base}-nodes-{zone}", "gpu-cloud:subnet": "nodes"},
                opts=vpc_child,
            )
            table = aws.ec2.RouteTable(
                f"{name}-nodes-{zone}-routes",
                vpc_id=self.vpc.id,
                tags={**tags, "Name": f"gpu-cloud-{args.name_base}-nodes-{zone}"},
                opts=vpc_child,
            )
            self.egress_dependencies.append(aws.ec2.RouteTableAssociation(
                f"{name}-nodes-{zone}-routes", subnet_id=subnet.id, route_table_id=table.id,
                opts=pulumi.ResourceOptions(parent=table),
            ))
            self.private_subnet_ids[zone] = subnet.id
            private_tables[zone] = table
        self.nat_gateway_ids = []
        self.public_subnet_ids = {}
        self.public_routing = []
        if args.egress == "nat":
            self._nat_egress(name, args, public_blocks, private_tables, vpc_child, tags)
        self.s3_endpoint = aws.ec2.VpcEndpoint(
            f"{name}-s3",
            vpc_id=self.vpc.id,
            service_name=f"com.amazonaws.{args.region}.s3",
            vpc_endpoint_type="Gateway",
            route_table_ids=[table.id for table in private_tables.values()],
            policy=json.dumps(
                s3_gateway_endpoint_policy(args.partition, args.account_id, args.region, args.s3_buckets,
                                           args.package_buckets)
            ),
            tags={**tags, "Name": f"gpu-cloud-{args.name_base}-s3"},
            opts=vpc_child,
        )
        self.egress_dependencies.append(self.s3_endpoint)
        if args.interface_endpoints:
            self._interface_endpoints(name, args, vpc_child, tags)
        self.flow_log_group_name = self._flow_logs(name, args, vpc_child, tags)
        self.vpc_id = self.vpc.id
        self.register_outputs(
            {
                "vpcId": self.vpc_id,
                "privateSubnetIds": self.private_subnet_ids,
                "natGatewayIds": self.nat_gateway_ids,
                "publicSubnetIds": self.public_subnet_ids,
                "flowLogGroupName": self.flow_log_group_name,
            }
        )

    def _nat_egress(self, name, args, public_blocks, private_tables, vpc_child, tags) -> None:
        gateway = aws.ec2.InternetGateway(
            f"{name}-igw", vpc_id=self.vpc.id, tags={**tags, "Name": f"gpu-cloud-{args.name_base}"}, opts=vpc_child
        )
        public_table = aws.ec2.RouteTable(
            f"{name}-public-routes", vpc_id=self.vpc.id,
            tags={**tags, "Name": f"gpu-cloud-{args.name_base}-public-nat-only"}, opts=vpc_child,
        )
        public_default = aws.ec2.Route(
            f"{name}-public-default", route_table_id=public_table.id, destination_cidr_block="0.0.0.0/0",
            gateway_id=gateway.id, opts=pulumi.ResourceOptions(parent=public_table),
        )
        self.egress_dependencies.append(public_default)
        self.public_routing.append(public_default)
        nat_zones = list(args.zones) if args.nat_gateways == "perZone" else list(args.zones[:1])
        nats = {}
        for zone, block in zip(args.zones, public_blocks):
            if zone not in nat_zones and not args.public_subnets_in_every_zone:
                continue
            # Subnets that hold a NAT gateway keep their names; the others exist for a load balancer only.
            role = "nat" if zone in nat_zones else "public"
            subnet = aws.ec2.Subnet(
                f"{name}-{role}-{zone}", vpc_id=self.vpc.id, cidr_block=block, availability_zone=zone,
                map_public_ip_on_launch=False,
                tags={**tags, "Name": f"gpu-cloud-{args.name_base}-{role}-{zone}", "gpu-cloud:subnet": role},
                opts=vpc_child,
            )
            association = aws.ec2.RouteTableAssociation(
                f"{name}-{role}-{zone}-routes", subnet_id=subnet.id, route_table_id=public_table.id,
                opts=pulumi.ResourceOptions(parent=public_table),
            )
            self.public_subnet_ids[zone] = subnet.id
            self.public_routing.append(association)
            if zone not in nat_zones:
                continue
            self.egress_dependencies.append(association)
            address = aws.ec2.Eip(
                f"{name}-nat-{zone}", domain="vpc", tags={**tags, "Name": f"gpu-cloud-{args.name_base}-nat-{zone}"},
                opts=vpc_child,
            )
            nats[zone] = aws.ec2.NatGateway(
                f"{name}-nat-{zone}", subnet_id=subnet.id, allocation_id=address.allocation_id,
                connectivity_type="public", tags={**tags, "Name": f"gpu-cloud-{args.name_base}-{zone}"},
                opts=pulumi.ResourceOptions(parent=self.vpc, depends_on=[gateway]),
            )
            self.nat_gateway_ids.append(nats[zone].id)
            self.egress_dependencies.append(nats[zone])
        for zone, table in private_tables.items():
            self.egress_dependencies.append(aws.ec2.Route(
                f"{name}-nodes-{zone}-default", route_table_id=table.id, destination_cidr_block="0.0.0.0/0",
                nat_gateway_id=nats.get(zone, nats[nat_zones[0]]).id, opts=pulumi.ResourceOptions(parent=table),
            ))

    def _interface_endpoints(self, name, args, vpc_child, tags) -> None:
        security_group = aws.ec2.SecurityGroup(
            f"{name}-endpoints",
            vpc_id=self.vpc.id,
            description=f"gpu-cloud {args.name_base}: HTTPS to interface endpoints from inside the VPC",
            tags={**tags, "Name": f"gpu-cloud-{args.name_base}-endpoints"},
            opts=vpc_child,
        )
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-endpoints-https", security_group_id=security_group.id, ip_protocol="tcp", from_port=443,
            to_port=443, cidr_ipv4=args.cidr, description="HTTPS from the VPC",
            tags={**tags, "Name": f"gpu-cloud-{args.name_base}-endpoints-https"},
            opts=pulumi.ResourceOptions(parent=security_group),
        )
        for service in args.interface_endpoints:
            endpoint = aws.ec2.VpcEndpoint(
                f"{name}-{service}",
                vpc_id=self.vpc.id,
                service_name=f"com.amazonaws.{args.region}.{service}",
                vpc_endpoint_type="Interface",
                private_dns_enabled=True,
                subnet_ids=list(self.private_subnet_ids.values()),
                security_group_ids=[security_group.id],
                policy=_endpoint_policy(service, args),
                tags={**tags, "Name": f"gpu-cloud-{args.name_base}-{service}"},
                opts=vpc_child,
            )
            self.egress_dependencies.append(endpoint)

    def _flow_logs(self, name, args, vpc_child, tags) -> pulumi.Output[str]:
        group = aws.cloudwatch.LogGroup(
            f"{name}-flow-logs",
            name=f"{flow_log_group_prefix(args.name_base)}flow-logs",
            kms_key_id=args.kms_key_arn,
            retention_in_days=args.flow_logs_retention_days,
            tags=tags,
            opts=vpc_child,
        )
        role_name = flow_logs_role_name(args.name_base)
        role = aws.iam.Role(
            f"{name}-flow-logs",
            name=role_name,
            description=f"gpu-cloud {args.name_base}: VPC flow logs to CloudWatch Logs",
            assume_role_policy=json.dumps(flow_logs_assume_role_policy(args.partition, args.region, args.account_id)),
            tags={**tags, "Name": role_name},
            opts=vpc_child,
        )
        policy = aws.iam.RolePolicy(
            f"{name}-flow-logs",
            role=role.name,
            name="gpu-cloud-flow-logs",
            policy=group.arn.apply(lambda arn: json.dumps(flow_logs_role_policy(arn))),
            opts=pulumi.ResourceOptions(parent=role),
        )
        aws.ec2.FlowLog(
            f"{name}-flow-logs",
            vpc_id=self.vpc.id,
            traffic_type="ALL",
            log_destination_type="cloud-watch-logs",
            log_destination=group.arn,
            iam_role_arn=role.arn,
            max_aggregation_interval=600,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self.vpc, depends_on=[policy]),
        )
        return group.name


def _endpoint_policy(service: str, args: GpuNetworkArgs) -> pulumi.Input[str] | None:
    """The interface endpoint's policy as JSON (`interface_endpoint_policy`), None where the service
    takes none; the `kms` one names the project key, known once the key exists."""
    policy = interface_endpoint_policy(service, args.account_id)
    if policy is None or service != "kms":
        return json.dumps(policy) if policy else None
    return pulumi.Output.from_input(args.kms_key_arn).apply(
        lambda key_arn: json.dumps(interface_endpoint_policy(service, args.account_id, key_arn)))
