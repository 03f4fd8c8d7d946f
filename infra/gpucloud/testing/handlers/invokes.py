"""Data sources the program reads, answered from the moto account."""

from __future__ import annotations

import datetime
import json
from typing import Any

from botocore.exceptions import ClientError

from gpucloud.lookups.facts import (
    BUCKET_NOT_KNOWN,
    ECR_REPOSITORY_NOT_KNOWN,
    PARAMETER_NOT_KNOWN,
    QUOTA_NOT_KNOWN,
    ROLE_NOT_KNOWN,
    SECURITY_GROUP_NOT_KNOWN,
)
from gpucloud.testing.registry import Account, assume_security_group, invoke, refused
from gpucloud.testing.service_model import ServiceModelViolation


@invoke("aws:index/getCallerIdentity:getCallerIdentity")
def caller_identity(account: Account, args: dict[str, Any]) -> dict[str, Any]:
    identity = account.client("sts").get_caller_identity()
    return {"accountId": identity["Account"], "arn": identity["Arn"], "userId": identity["UserId"], "id": identity["Account"]}


@invoke("aws:index/getPartition:getPartition")
def partition(account: Account, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": "aws", "partition": "aws", "dnsSuffix": "amazonaws.com", "reverseDnsPrefix": "com.amazonaws"}


@invoke("aws:index/getRegion:getRegion")
def region(account: Account, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": account.region, "name": account.region, "region": account.region}


@invoke("aws:ec2/getInstanceType:getInstanceType")
def instance_type(account: Account, args: dict[str, Any]) -> dict[str, Any]:
    try:
        found = account.client("ec2").describe_instance_types(InstanceTypes=[args["instanceType"]])["InstanceTypes"][0]
    except ServiceModelViolation as violation:
        # A type outside the model's InstanceType enum is one EC2 does not know: EC2 answers with its
        # own client error code, not a generic validation error ("Error codes for the Amazon EC2 API",
        # read 2026-11-25), the code moto gives a type missing from its catalog.
        raise refused("DescribeInstanceTypes", "InvalidInstanceType",
                      f"The following supplied instance types do not exist: [{args['instanceType']}]") from violation
    network = found.get("NetworkInfo", {})
    gpu_info = found.get("GpuInfo", {})
    storage = found.get("InstanceStorageInfo", {})
    return {
        "id": found["InstanceType"],
        "instanceType": found["InstanceType"],
        # Every GpuInfo.Gpus entry as the provider flattens it (a field AWS leaves out reads as its
        # zero value), a fractional type's Count 0 included; the data source has no field for
        # GpuPartitionSize or LogicalGpuCount, so neither does this answer.
        "gpuses": [
            {
                "count": gpu.get("Count", 0),
                "manufacturer": gpu.get("Manufacturer", ""),
                "name": gpu.get("Name", ""),
                "memorySize": (gpu.get("MemoryInfo") or {}).get("SizeInMiB", 0),
            }
            for gpu in gpu_info.get("Gpus", [])
        ],
        "totalGpuMemory": gpu_info.get("TotalGpuMemoryInMiB", 0),
        "efaSupported": network.get("EfaSupported", False),
        "efaMaximumInterfaces": network.get("EfaInfo", {}).get("MaximumEfaInterfaces", 0),
        "maximumNetworkCards": network.get("MaximumNetworkCards", 1),
        "maximumNetworkInterfaces": network.get("MaximumNetworkInterfaces", 1),
        "instanceStorageSupported": found.get("InstanceStorageSupported", False),
        "instanceDisks": [
            {"count": disk["Count"], "size": disk["SizeInGB"], "type": disk["Type"]} for disk in storage.get("Disks", [])
        ],
        "totalInstanceStorage": storage.get("TotalSizeInGB", 0),
        "supportedArchitectures": found.get("ProcessorInfo", {}).get("SupportedArchitectures", []),
        "defaultVcpus": found.get("VCpuInfo", {}).get("DefaultVCpus", 0),
        "memorySize": found.get("MemoryInfo", {}).get("SizeInMiB", 0),
    }


def _filters(args: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"Name": item["name"], "Values": item["values"]} for item in args.get("filters") or []]


def _argument_filters(args: dict[str, Any], **names: str) -> list[dict[str, Any]]:
    """A singular data source's arguments (`vpcId`) as the EC2 filters they stand for (`vpc-id`)."""
    return [{"Name": name, "Values": [args[key]]} for key, name in names.items() if args.get(key)]


def _single(found: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    """A singular data source matches exactly one thing, or fails in the provider's words."""
    if len(found) != 1:
        raise LookupError(f"no matching EC2 {kind} found ({len(found)} match)")
    return found[0]


@invoke("aws:ec2/getVpc:getVpc")
def vpc(account: Account, args: dict[str, Any]) -> dict[str, Any]:
    filters = _filters(args)
    if args.get("default"):
        filters.append({"Name": "is-default", "Values": ["true"]})
    vpcs = account.client("ec2").describe_vpcs(
        **({"VpcIds": [args["id"]]} if args.get("id") else {}), Filters=filters
    )["Vpcs"]
    if len(vpcs) != 1:
        raise LookupError(f"no matching EC2 VPC found ({len(vpcs)} matched)")
    found = vpcs[0]
    return {"id": found["VpcId"], "cidrBlock": found["CidrBlock"], "default": found.get("IsDefault", False)}


@invoke("aws:ec2/getSubnets:getSubnets")
def subnets(account: Account, args: dict[str, Any]) -> dict[str, Any]:
    found = account.client("ec2").describe_subnets(Filters=_filters(args))["Subnets"]
    return {"id": account.region, "ids": [subnet["SubnetId"] for subnet in found]}


@invoke("aws:ec2/getSubnet:getSubnet")
def subnet(account: Account, args: dict[str, Any]) -> dict[str, Any]:
    found = account.client("ec2").describe_subnets(SubnetIds=[args["id"]])["Subnets"][0]
    return {
        "id": found["SubnetId"],
        "arn": found.get("SubnetArn"),
        "availabilityZone": found["AvailabilityZone"],
        "availabilityZoneId": found.get("AvailabilityZoneId"),
        "vpcId": found["VpcId"],
        "cidrBlock": found["CidrBlock"],
        "defaultForAz": found.get("DefaultForAz", False),
    }


@invoke("aws:ssm/getParameter:getParameter")
def parameter(account: Account, args: dict[str, Any]) -> dict[str, Any]:
    """GetParameter; a missing one fails with SSM's ParameterNotFound where account facts list the
    stack's parameters or it is one of AWS's public parameters (/aws/service/...), else it is not known."""
    name = args["name"]
    try:
        found = account.client("ssm").get_parameter(Name=name, WithDecryption=bool(args.get("withDecryption")))["Parameter"]
    except ClientError as error:
        if (error.response["Error"]["Code"] != "ParameterNotFound" or account.parameters_known
                or name.startswith("/aws/service/")):
            raise
        raise LookupError(f"{PARAMETER_NOT_KNOWN}: no account facts list {name}") from None
    return {
        "id": found["Name"],
        "name": found["Name"],
        "value": found["Value"],
        "insecureValue": found["Value"],
        "type": found["Type"],
        "version": found["Version"],
        "arn": found.get("ARN"),
    }


@invoke("aws:ec2/getAmi:getAmi")
def ami(account: Account, args: dict[str, Any]) -> dict[str, Any]:
    """DescribeImages leaves deprecated images out unless asked for them (`IncludeDeprecated`,
    https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeImages.html, read 2026-11-24)."""
    images = account.client("ec2").describe_images(
        Filters=_filters(args), **({"Owners": args["owners"]} if args.get("owners") else {})
    )["Images"]
    now = datetime.datetime.now(datetime.timezone.utc).isoformat()
    if not args.get("includeDeprecated"):
        images = [image for image in images if account.image_deprecations.get(image["ImageId"], "9999") > now]
    if not images:
        raise LookupError("Your query returned no results. Please change your search criteria and try again.")
    found = sorted(images, key=lambda image: image.get("CreationDate", ""))[-1]
    return {
        "id": found["ImageId"],
        "imageId": found["ImageId"],
        "name": found.get("Name"),
        "architecture": found["Architecture"],
        "rootDeviceName": found["RootDeviceName"],
        "rootDeviceType": found.get("RootDeviceType"),
        "ownerId": found.get("OwnerId"),
        "deprecationTime": account.image_deprecations.get(found["ImageId"], ""),
    }


@invoke("aws:iam/getRole:getRole")
def role(account: Account, args: dict[str, Any]) -> dict[str, Any]:
    if args["name"] in account.assumed_roles:
        raise LookupError(f"{ROLE_NOT_KNOWN}: no account facts say whether {args['name']} exists")
    found = account.client("iam").get_role(RoleName=args["name"])["Role"]
    return {
        "id": found["RoleName"],
        "name": found["RoleName"],
        "arn": found["Arn"],
        "path": found["Path"],
        "uniqueId": found["RoleId"],
        "assumeRolePolicy": json.dumps(found.get("AssumeRolePolicyDocument", {})),
        "maxSessionDuration": found.get("MaxSessionDuration", 3600),
    }


@invoke("aws:index/getAvailabilityZones:getAvailabilityZones")
def availability_zones(account: Account, args: dict[str, Any]) -> dict[str, Any]:
    filters = [{"Name": "state", "Values": [args["state"]]}] if args.get("state") else []
    zones = account.client("ec2").describe_availability_zones(Filters=filters + _filters(args))["AvailabilityZones"]
    return {
        "id": account.region,
        "names": [zone["ZoneName"] for zone in zones],
        "zoneIds": [zone["ZoneId"] for zone in zones],
        "groupNames": [zone.get("GroupName", account.region) for zone in zones],
    }


@invoke("aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings")
def instance_type_offerings(account: Account, args: dict[str, Any]) -> dict[str, Any]:
    pages = account.client("ec2").get_paginator("describe_instance_type_offerings").paginate(
        LocationType=args.get("locationType", "region"), Filters=_filters(args)
    )
    offerings = [offering for page in pages for offering in page["InstanceTypeOfferings"]]
    return {
        "id": account.region,
        "instanceTypes": [offering["InstanceType"] for offering in offerings],
        "locations": [offering["Location"] for offering in offerings],
        "locationTypes": [offering["LocationType"] for offering in offerings],
    }


@invoke("aws:ec2/getRouteTable:getRouteTable")
def route_table(account: Account, args: dict[str, Any]) -> dict[str, Any]:
    filters = _filters(args) + _argument_filters(
        args, subnetId="association.subnet-id", vpcId="vpc-id", routeTableId="route-table-id"
    )
    table = _single(account.client("ec2").describe_route_tables(Filters=filters)["RouteTables"], "Route Table")
    return {
        "id": table["RouteTableId"],
        "routeTableId": table["RouteTableId"],
        "vpcId": table["VpcId"],
        "routes": [
            {
                "cidrBlock": route.get("DestinationCidrBlock", ""),
                "ipv6CidrBlock": route.get("DestinationIpv6CidrBlock", ""),
                "destinationPrefixListId": route.get("DestinationPrefixListId", ""),
                "gatewayId": route.get("GatewayId", ""),
                "natGatewayId": route.get("NatGatewayId", ""),
                "transitGatewayId": route.get("TransitGatewayId", ""),
                "instanceId": route.get("InstanceId", ""),
                "networkInterfaceId": route.get("NetworkInterfaceId", ""),
                "vpcEndpointId": route.get("VpcEndpointId", ""),
                "vpcPeeringConnectionId": route.get("VpcPeeringConnectionId", ""),
                "localGatewayId": route.get("LocalGatewayId", ""),
                "carrierGatewayId": route.get("CarrierGatewayId", ""),
                "egressOnlyGatewayId": route.get("EgressOnlyInternetGatewayId", ""),
                "coreNetworkArn": route.get("CoreNetworkArn", ""),
                "odbNetworkArn": "",
            }
            for route in table["Routes"]
        ],
        "associations": [],
    }


@invoke("aws:ec2/getVpcEndpoint:getVpcEndpoint")
def vpc_endpoint(account: Account, args: dict[str, Any]) -> dict[str, Any]:
    filters = _filters(args) + _argument_filters(
        args, vpcId="vpc-id", serviceName="service-name", state="vpc-endpoint-state"
    )
    endpoint = _single(account.client("ec2").describe_vpc_endpoints(Filters=filters)["VpcEndpoints"], "VPC Endpoint")
    return {
        "id": endpoint["VpcEndpointId"],
        "vpcId": endpoint["VpcId"],
        "serviceName": endpoint["ServiceName"],
        "state": endpoint.get("State", ""),
        "vpcEndpointType": endpoint.get("VpcEndpointType", ""),
        "routeTableIds": endpoint.get("RouteTableIds", []),
        "subnetIds": endpoint.get("SubnetIds", []),
    }


@invoke("aws:servicequotas/getServiceQuota:getServiceQuota")
def service_quota(account: Account, args: dict[str, Any]) -> dict[str, Any]:
    """moto has no EC2 quotas: the value comes from the account facts the run was given."""
    code = args.get("quotaCode")
    if code not in account.quotas:
        raise LookupError(f"{QUOTA_NOT_KNOWN}: {code} is not among the account facts")
    return {
        "id": f"{args['serviceCode']}/{code}",
        "serviceCode": args["serviceCode"],
        "quotaCode": code,
        "value": float(account.quotas[code]),
        "adjustable": True,
        "global": False,
        "quotaName": args.get("quotaName") or code,
        "serviceName": "Amazon Elastic Compute Cloud (Amazon EC2)",
        "usageMetrics": [],
        "arn": f"arn:aws:servicequotas:{account.region}:{account.account_id}:{args['serviceCode']}/{code}",
        "defaultValue": float(account.quotas[code]),
    }


@invoke("aws:s3/getBucket:getBucket")
def bucket(account: Account, args: dict[str, Any]) -> dict[str, Any]:
    """HeadBucket, then the bucket's region, as the provider's data source reads them; a missing
    bucket fails in its words, "reading S3 Bucket (name): couldn't find resource"
    (terraform-provider-aws internal/service/s3/bucket_data_source.go and its not-found error,
    read 2026-11-28). A bucket not in moto that no account fact says exists or not is not known."""
    name = args["bucket"]
    s3 = account.client("s3")
    try:
        s3.head_bucket(Bucket=name)
    except ClientError as error:
        if error.response["Error"]["Code"] not in ("404", "NoSuchBucket", "NotFound"):
            raise
        if not account.buckets_known:
            raise LookupError(f"{BUCKET_NOT_KNOWN}: no account facts say whether {name} exists") from None
        raise LookupError(f"reading S3 Bucket ({name}): couldn't find resource") from None
    region = s3.get_bucket_location(Bucket=name).get("LocationConstraint") or "us-east-1"
    return {
        "id": name, "bucket": name, "arn": f"arn:aws:s3:::{name}", "bucketRegion": region, "region": account.region,
        "bucketDomainName": f"{name}.s3.amazonaws.com",
        "bucketRegionalDomainName": f"{name}.s3.{region}.amazonaws.com",
    }


@invoke("aws:ecr/getRepository:getRepository")
def ecr_repository(account: Account, args: dict[str, Any]) -> dict[str, Any]:
    """DescribeRepositories of the one repository, in the region asked; a missing one fails with
    ECR's RepositoryNotFoundException where account facts list the repositories, else it is not known."""
    region = args.get("region") or account.region
    ecr = account.session.client("ecr", region_name=region)
    registry = args.get("registryId") or account.account_id
    try:
        [found] = ecr.describe_repositories(registryId=registry, repositoryNames=[args["name"]])["repositories"]
    except ClientError as error:
        if error.response["Error"]["Code"] != "RepositoryNotFoundException" or account.ecr_repositories_known:
            raise
        raise LookupError(f"{ECR_REPOSITORY_NOT_KNOWN}: no account facts list {registry}/{args['name']}") from None
    return {
        "id": found["repositoryName"], "name": found["repositoryName"], "arn": found["repositoryArn"],
        "registryId": found["registryId"], "repositoryUrl": found["repositoryUri"], "region": region,
        "imageTagMutability": found.get("imageTagMutability", "MUTABLE"), "mostRecentImageTags": [], "tags": {},
    }


@invoke("aws:ec2/getSecurityGroup:getSecurityGroup")
def security_group(account: Account, args: dict[str, Any]) -> dict[str, Any]:
    """DescribeSecurityGroups of the one group; a missing one fails with EC2's InvalidGroup.NotFound
    where account facts list the groups, else it is not known, and is assumed to exist: created in
    moto under its id, so that the rules referencing it are taken (as `assumed_roles`)."""
    group_id = args["id"]
    try:
        if group_id in account.assumed_security_groups:
            raise LookupError(f"{SECURITY_GROUP_NOT_KNOWN}: no account facts list {group_id}")
        [found] = account.client("ec2").describe_security_groups(GroupIds=[group_id])["SecurityGroups"]
    except ClientError as error:
        if error.response["Error"]["Code"] != "InvalidGroup.NotFound" or account.security_groups_known:
            raise
        assume_security_group(account, group_id)
        raise LookupError(f"{SECURITY_GROUP_NOT_KNOWN}: no account facts list {group_id}") from None
    return {"id": found["GroupId"], "name": found["GroupName"], "vpcId": found.get("VpcId", ""),
            "description": found.get("Description", ""), "arn": f"arn:aws:ec2:{account.region}:{found['OwnerId']}:"
            f"security-group/{found['GroupId']}", "tags": {}}
