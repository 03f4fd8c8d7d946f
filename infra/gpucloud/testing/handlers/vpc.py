"""VPCs and what a created network holds: subnets, route tables and routes, internet and NAT
gateways with their elastic IPs, VPC endpoints, flow logs and the default security group."""

from __future__ import annotations

import json
import zlib
from typing import Any

from gpucloud.documents.endpoints import services_without_policy
from gpucloud.testing.registry import (
    Account,
    BrokenReferenceError,
    Created,
    ResourceRequest,
    as_bool,
    drop_none,
    refused,
    register_update,
    resource,
    tag_specification,
)


@resource("aws:ec2/vpc:Vpc")
def create_vpc(account: Account, request: ResourceRequest) -> Created:
    ec2 = account.client("ec2")
    inputs = request.inputs
    vpc = ec2.create_vpc(
        CidrBlock=inputs["cidrBlock"], TagSpecifications=tag_specification("vpc", inputs.get("tags"))
    )["Vpc"]
    vpc_id = vpc["VpcId"]
    for attribute in ("enableDnsSupport", "enableDnsHostnames"):
        if inputs.get(attribute) is not None:
            ec2.modify_vpc_attribute(VpcId=vpc_id, **{attribute[0].upper() + attribute[1:]: {"Value": bool(inputs[attribute])}})
    [main] = ec2.describe_route_tables(
        Filters=[{"Name": "vpc-id", "Values": [vpc_id]}, {"Name": "association.main", "Values": ["true"]}]
    )["RouteTables"]
    [default_group] = ec2.describe_security_groups(
        Filters=[{"Name": "vpc-id", "Values": [vpc_id]}, {"Name": "group-name", "Values": ["default"]}]
    )["SecurityGroups"]
    return Created(
        id=vpc_id,
        outputs={
            "arn": account.arn("ec2", f"vpc/{vpc_id}"),
            "mainRouteTableId": main["RouteTableId"],
            "defaultSecurityGroupId": default_group["GroupId"],
            "defaultNetworkAclId": ec2.describe_network_acls(
                Filters=[{"Name": "vpc-id", "Values": [vpc_id]}, {"Name": "default", "Values": ["true"]}]
            )["NetworkAcls"][0]["NetworkAclId"],
            "ownerId": account.account_id,
        },
    )


@resource("aws:ec2/defaultSecurityGroup:DefaultSecurityGroup")
def adopt_default_security_group(account: Account, request: ResourceRequest) -> Created:
    """Like the provider: adopt the VPC's default group and make its rules exactly the declared
    ones (none, here), removing the allow-all rules AWS gives it."""
    ec2 = account.client("ec2")
    vpc_id = request.inputs["vpcId"]
    [group] = ec2.describe_security_groups(
        Filters=[{"Name": "vpc-id", "Values": [vpc_id]}, {"Name": "group-name", "Values": ["default"]}]
    )["SecurityGroups"]
    if group["IpPermissions"]:
        ec2.revoke_security_group_ingress(GroupId=group["GroupId"], IpPermissions=group["IpPermissions"])
    if group["IpPermissionsEgress"]:
        ec2.revoke_security_group_egress(GroupId=group["GroupId"], IpPermissions=group["IpPermissionsEgress"])
    if request.inputs.get("ingress") or request.inputs.get("egress"):
        raise NotImplementedError("the engine adopts default security groups only with no rules")
    if request.inputs.get("tags"):
        ec2.create_tags(Resources=[group["GroupId"]], Tags=tag_specification("security-group", request.inputs["tags"])[0]["Tags"])
    return Created(id=group["GroupId"], outputs={"arn": account.arn("ec2", f"security-group/{group['GroupId']}")})


@resource("aws:ec2/subnet:Subnet")
def create_subnet(account: Account, request: ResourceRequest) -> Created:
    ec2 = account.client("ec2")
    inputs = request.inputs
    subnet = ec2.create_subnet(
        **drop_none(
            {
                "VpcId": inputs["vpcId"],
                "CidrBlock": inputs["cidrBlock"],
                "AvailabilityZone": inputs.get("availabilityZone"),
                "TagSpecifications": tag_specification("subnet", inputs.get("tags")),
            }
        )
    )["Subnet"]
    if as_bool(inputs.get("mapPublicIpOnLaunch")):
        ec2.modify_subnet_attribute(SubnetId=subnet["SubnetId"], MapPublicIpOnLaunch={"Value": True})
    return Created(
        id=subnet["SubnetId"],
        outputs={
            "arn": subnet.get("SubnetArn") or account.arn("ec2", f"subnet/{subnet['SubnetId']}"),
            "availabilityZone": subnet["AvailabilityZone"],
            "availabilityZoneId": subnet.get("AvailabilityZoneId"),
            "ownerId": account.account_id,
        },
    )


@resource("aws:ec2/internetGateway:InternetGateway")
def create_internet_gateway(account: Account, request: ResourceRequest) -> Created:
    ec2 = account.client("ec2")
    gateway_id = ec2.create_internet_gateway(
        TagSpecifications=tag_specification("internet-gateway", request.inputs.get("tags"))
    )["InternetGateway"]["InternetGatewayId"]
    if request.inputs.get("vpcId"):
        ec2.attach_internet_gateway(InternetGatewayId=gateway_id, VpcId=request.inputs["vpcId"])
    return Created(id=gateway_id, outputs={"arn": account.arn("ec2", f"internet-gateway/{gateway_id}")})


@resource("aws:ec2/eip:Eip")
def allocate_address(account: Account, request: ResourceRequest) -> Created:
    address = account.client("ec2").allocate_address(
        Domain=request.inputs.get("domain", "vpc"),
        TagSpecifications=tag_specification("elastic-ip", request.inputs.get("tags")),
    )
    return Created(
        id=address["AllocationId"],
        outputs={"allocationId": address["AllocationId"], "publicIp": address["PublicIp"], "domain": "vpc"},
    )


@resource("aws:ec2/natGateway:NatGateway")
def create_nat_gateway(account: Account, request: ResourceRequest) -> Created:
    ec2 = account.client("ec2")
    inputs = request.inputs
    gateway = ec2.create_nat_gateway(
        **drop_none(
            {
                "SubnetId": inputs["subnetId"],
                "AllocationId": inputs.get("allocationId"),
                "ConnectivityType": inputs.get("connectivityType"),
                "TagSpecifications": tag_specification("natgateway", inputs.get("tags")),
            }
        )
    )["NatGateway"]
    return Created(id=gateway["NatGatewayId"], outputs={"networkInterfaceId": gateway.get("NatGatewayAddresses", [{}])[0].get("NetworkInterfaceId")})


@resource("aws:ec2/routeTable:RouteTable")
def create_route_table(account: Account, request: ResourceRequest) -> Created:
    if request.inputs.get("routes"):
        raise NotImplementedError("the engine takes routes as aws.ec2.Route resources, not inline")
    table_id = account.client("ec2").create_route_table(
        VpcId=request.inputs["vpcId"], TagSpecifications=tag_specification("route-table", request.inputs.get("tags"))
    )["RouteTable"]["RouteTableId"]
    return Created(id=table_id, outputs={"arn": account.arn("ec2", f"route-table/{table_id}"), "ownerId": account.account_id})


ROUTE_TARGETS = {
    "gatewayId": "GatewayId",
    "natGatewayId": "NatGatewayId",
    "transitGatewayId": "TransitGatewayId",
    "networkInterfaceId": "NetworkInterfaceId",
    "vpcEndpointId": "VpcEndpointId",
    "vpcPeeringConnectionId": "VpcPeeringConnectionId",
}


@resource("aws:ec2/route:Route")
def create_route(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    targets = {api: inputs[key] for key, api in ROUTE_TARGETS.items() if inputs.get(key)}
    account.client("ec2").create_route(
        RouteTableId=inputs["routeTableId"], DestinationCidrBlock=inputs["destinationCidrBlock"], **targets
    )
    return Created(id=f"r-{inputs['routeTableId']}{zlib.crc32(inputs['destinationCidrBlock'].encode())}", outputs={"state": "active"})


@resource("aws:ec2/routeTableAssociation:RouteTableAssociation")
def associate_route_table(account: Account, request: ResourceRequest) -> Created:
    association = account.client("ec2").associate_route_table(
        RouteTableId=request.inputs["routeTableId"], SubnetId=request.inputs["subnetId"]
    )
    return Created(id=association["AssociationId"])


ENDPOINT_POLICY_LIMIT = 20_480
"""AWS PrivateLink guide, "Quotas": a VPC endpoint policy takes at most 20,480 characters, white
space included (read 2026-11-25); moto stores any text."""


DEFAULT_ENDPOINT_POLICY = {"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "*", "Resource": "*"}]}
"""What AWS attaches to an endpoint given no policy (AWS PrivateLink guide, "Control access to VPC
endpoints using endpoint policies", read 2026-11-28)."""


def _endpoint_service(service_name: str) -> str:
    """`ecr.api` for com.amazonaws.us-east-1.ecr.api: the part after the region."""
    parts = service_name.split(".", 3)
    return parts[3] if len(parts) == 4 and parts[0] == "com" else service_name


def _check_endpoint_policy(policy: Any, service_name: str, operation: str = "CreateVpcEndpoint") -> None:
    if policy is None:
        return
    try:
        json.loads(policy)
    except ValueError as error:
        raise refused(operation, "InvalidPolicyDocument", f"the endpoint policy is not JSON: {error}") from None
    if len(policy) > ENDPOINT_POLICY_LIMIT:
        raise refused(operation, "InvalidParameter",
                      f"the endpoint policy is {len(policy)} characters, over the {ENDPOINT_POLICY_LIMIT} AWS takes")
    if _endpoint_service(service_name) in services_without_policy():
        # moto stores a policy on any endpoint; AWS takes none where the service supports none
        # (gpucloud/data/vpc_endpoint_policies.json names the sources).
        raise refused(operation, "InvalidParameter", f"{service_name} does not support VPC endpoint policies")


@resource("aws:ec2/vpcEndpoint:VpcEndpoint")
def create_vpc_endpoint(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    _check_endpoint_policy(inputs.get("policy"), inputs["serviceName"])
    endpoint = account.client("ec2").create_vpc_endpoint(
        **drop_none(
            {
                "VpcId": inputs["vpcId"],
                "ServiceName": inputs["serviceName"],
                "VpcEndpointType": inputs.get("vpcEndpointType", "Gateway"),
                "RouteTableIds": inputs.get("routeTableIds"),
                "SubnetIds": inputs.get("subnetIds"),
                "SecurityGroupIds": inputs.get("securityGroupIds"),
                "PrivateDnsEnabled": as_bool(inputs.get("privateDnsEnabled")),
                "PolicyDocument": inputs.get("policy"),
                "TagSpecifications": tag_specification("vpc-endpoint", inputs.get("tags")),
            }
        )
    )["VpcEndpoint"]
    return Created(
        id=endpoint["VpcEndpointId"],
        outputs={"arn": account.arn("ec2", f"vpc-endpoint/{endpoint['VpcEndpointId']}"), "state": endpoint.get("State")},
    )


@register_update("aws:ec2/vpcEndpoint:VpcEndpoint")
def update_vpc_endpoint(account: Account, request: ResourceRequest, physical_id: str) -> Created:
    """What ModifyVpcEndpoint changes in place, as the provider's update does: the policy (none:
    back to AWS's default), route tables, subnets and security groups."""
    inputs = request.inputs
    policy = inputs.get("policy")
    _check_endpoint_policy(policy, inputs["serviceName"], "ModifyVpcEndpoint")
    ec2 = account.client("ec2")
    [current] = ec2.describe_vpc_endpoints(VpcEndpointIds=[physical_id])["VpcEndpoints"]
    # The provider sends ResetPolicy to drop a policy; moto ignores it, so AWS's default it stands for is sent.
    changes: dict[str, Any] = {}
    if _endpoint_service(inputs["serviceName"]) not in services_without_policy():
        changes["PolicyDocument"] = policy or json.dumps(DEFAULT_ENDPOINT_POLICY)
    for key, api, listed in (("routeTableIds", "RouteTableIds", current.get("RouteTableIds", [])),
                             ("subnetIds", "SubnetIds", current.get("SubnetIds", [])),
                             ("securityGroupIds", "SecurityGroupIds",
                              [group["GroupId"] for group in current.get("Groups", [])])):
        wanted = set(inputs.get(key) or [])
        changes[f"Add{api}"] = sorted(wanted - set(listed))
        changes[f"Remove{api}"] = sorted(set(listed) - wanted)
    ec2.modify_vpc_endpoint(VpcEndpointId=physical_id, **{key: value for key, value in changes.items() if value})
    return Created(id=physical_id, outputs={"arn": account.arn("ec2", f"vpc-endpoint/{physical_id}"),
                                            "state": current.get("State")})


@resource("aws:ec2/flowLog:FlowLog")
def create_flow_log(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    if inputs.get("logDestinationType", "cloud-watch-logs") == "cloud-watch-logs":
        _require_role(account, inputs.get("iamRoleArn"))
    resource_id = next(inputs[key] for key in ("vpcId", "subnetId", "eniId") if inputs.get(key))
    kind = {"vpcId": "VPC", "subnetId": "Subnet", "eniId": "NetworkInterface"}
    result = account.client("ec2").create_flow_logs(
        **drop_none(
            {
                "ResourceIds": [resource_id],
                "ResourceType": next(kind[key] for key in kind if inputs.get(key)),
                "TrafficType": inputs.get("trafficType", "ALL"),
                "LogDestinationType": inputs.get("logDestinationType", "cloud-watch-logs"),
                "LogDestination": inputs.get("logDestination"),
                "DeliverLogsPermissionArn": inputs.get("iamRoleArn"),
                "MaxAggregationInterval": inputs.get("maxAggregationInterval"),
                "TagSpecifications": tag_specification("vpc-flow-log", inputs.get("tags")),
            }
        )
    )
    if result.get("Unsuccessful"):
        raise BrokenReferenceError(f"flow log for {resource_id}: {result['Unsuccessful']}")
    flow_log_id = result["FlowLogIds"][0]
    return Created(id=flow_log_id, outputs={"arn": account.arn("ec2", f"vpc-flow-log/{flow_log_id}")})


def _require_role(account: Account, role_arn: Any) -> None:
    """A flow log to CloudWatch Logs delivers through a role that must exist; moto does not check."""
    iam = account.client("iam")
    try:
        iam.get_role(RoleName=str(role_arn).rsplit("/", 1)[-1])
    except iam.exceptions.NoSuchEntityException:
        raise BrokenReferenceError(f"flow log: its delivery role {role_arn} does not exist") from None
