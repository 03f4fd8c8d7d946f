"""`gpucloud account snapshot`: the account facts of one stack, read from a real account with
read-only calls, so that offline plans check what a real preview checks. Refresh it like a lock file.

IAM permissions it needs: sts:GetCallerIdentity, servicequotas:GetServiceQuota, iam:GetRole,
ec2:DescribeSubnets, ec2:DescribeVpcs, ec2:DescribeRouteTables, ec2:DescribeVpcEndpoints,
ec2:DescribeImages, for groups on reserved capacity ec2:DescribeCapacityReservations and
ec2:DescribeCapacityBlockOfferings, and for a stack naming a Prometheus workspace
aps:DescribeWorkspace, aps:DescribeAlertManagerDefinition and aps:ListRuleGroupsNamespaces, for
the ECR repositories of the account it names ecr:DescribeRepositories (and for its containers' images
ecr:DescribeImages, `plan/cold_start_snapshot.py`), for allowedSecurityGroupIds
ec2:DescribeSecurityGroups, for an endpoint's certificateArn acm:DescribeCertificate, for secretEnv
ssm:DescribeParameters and secretsmanager:DescribeSecret (`plan/named_snapshot.py`), and for the data bucket
s3:ListBucket (HeadBucket), s3:GetBucketLocation and s3:GetEncryptionConfiguration (GetBucketEncryption),
and for the capacity facts ec2:GetSpotPlacementScores, ec2:DescribeAvailabilityZones,
ec2:DescribeSpotPriceHistory, ec2:DescribeInstanceTypeOfferings, ec2:DescribeCapacityReservations and
ec2:DescribeCapacityBlockOfferings (`plan/capacity_snapshot.py`).
"""

from __future__ import annotations

import datetime
from typing import Any

import boto3
import yaml
from botocore.exceptions import ClientError

from gpucloud.config import StackSettings
from gpucloud.plan.capacity_snapshot import read_capacity
from gpucloud.lookups.ecr import named_repositories
from gpucloud.plan.cold_start_snapshot import ecr_image_sizes
from gpucloud.plan.named_snapshot import read_named
from gpucloud.lookups.security_groups import named_security_groups
from gpucloud.lookups.quotas import ON_DEMAND_QUOTAS, SPOT_QUOTAS
from gpucloud.naming import AUTOSCALING_SERVICE, AUTOSCALING_SERVICE_ROLE, STACK_TAG
from gpucloud.testing.facts import AccountFacts

ROUTE_TARGETS = ("GatewayId", "NatGatewayId", "TransitGatewayId", "VpcPeeringConnectionId", "NetworkInterfaceId")


def snapshot_account(settings: StackSettings, session: boto3.Session, today: datetime.date | None = None,
                     capacity: bool = True, now: datetime.datetime | None = None) -> AccountFacts:
    """What the stack reads from the account: quotas, the Auto Scaling service-linked role, the VPC
    of its listed subnets (subnets, route tables, endpoints), its pinned AMIs, the capacity it
    names and the Prometheus workspace it names; with `capacity`, what getting its instances looks
    like now (spot scores and prices, zone offerings, free reservations, block offers) at `now`."""
    region = settings.region
    ec2 = session.client("ec2", region_name=region)
    account_id = session.client("sts", region_name=region).get_caller_identity()["Account"]
    document: dict[str, Any] = {
        "snapshot": {
            "takenOn": (today or datetime.date.today()).isoformat(),
            "accountId": account_id,
            "region": region,
        },
        "quotas": _quotas(session.client("service-quotas", region_name=region)),
        "serviceLinkedRoles": [AUTOSCALING_SERVICE] if _role_exists(session.client("iam"), AUTOSCALING_SERVICE_ROLE) else [],
        "vpcs": _vpcs(ec2, settings.config.network.subnet_ids or []),
        "amis": _amis(ec2, sorted({group.ami_id for group in settings.config.groups if group.ami_id})),
        "capacityReservations": _reservations(ec2, settings),
        "capacityBlockOfferings": _offerings(ec2, settings),
        "prometheusWorkspaces": _workspaces(session.client("amp", region_name=region), settings),
        "buckets": _buckets(session.client("s3", region_name=region), settings, account_id),
        "ecrRepositories": _ecr_repositories(session, settings, account_id),
        "ecrImageSizes": ecr_image_sizes(session, settings, account_id),
        "securityGroups": _security_groups(ec2, settings),
        **read_named(settings, session),
    }
    if capacity:
        document["capacity"] = read_capacity(settings, ec2, now or datetime.datetime.now(datetime.timezone.utc))
    return AccountFacts.model_validate(document)


def dump_facts(facts: AccountFacts) -> str:
    header = "# Account facts written by `gpucloud account snapshot`; refresh them like a lock file.\n"
    return header + yaml.safe_dump(facts.model_dump(mode="json", by_alias=True, exclude_none=True), sort_keys=False)


def unanswered_quotas(facts: AccountFacts) -> list[str]:
    """The EC2 vCPU quotas Service Quotas gave no value for (NoSuchResourceException: a new account,
    or a region where the quota is not set up), as `code (name)`: the plan leaves these unchecked."""
    return [f"{code} ({name})" for code, name in [*ON_DEMAND_QUOTAS.values(), *SPOT_QUOTAS.values()]
            if code not in facts.quotas]


def _quotas(quotas) -> dict[str, float]:
    values = {}
    for code, _name in [*ON_DEMAND_QUOTAS.values(), *SPOT_QUOTAS.values()]:
        try:
            values[code] = quotas.get_service_quota(ServiceCode="ec2", QuotaCode=code)["Quota"]["Value"]
        except ClientError as error:
            if error.response["Error"]["Code"] != "NoSuchResourceException":
                raise
    return values


def _role_exists(iam, name: str) -> bool:
    try:
        iam.get_role(RoleName=name)
    except ClientError as error:
        if error.response["Error"]["Code"] == "NoSuchEntity":
            return False
        raise
    return True


def _vpcs(ec2, subnet_ids: list[str]) -> list[dict[str, Any]]:
    if not subnet_ids:
        return []
    listed = ec2.describe_subnets(SubnetIds=subnet_ids)["Subnets"]
    vpcs = []
    for vpc_id in sorted({subnet["VpcId"] for subnet in listed}):
        [vpc] = ec2.describe_vpcs(VpcIds=[vpc_id])["Vpcs"]
        in_vpc = [{"Name": "vpc-id", "Values": [vpc_id]}]
        subnets = ec2.describe_subnets(Filters=in_vpc)["Subnets"]
        tables = ec2.describe_route_tables(Filters=in_vpc)["RouteTables"]
        endpoints = ec2.describe_vpc_endpoints(Filters=in_vpc)["VpcEndpoints"]
        vpcs.append({
            "id": vpc_id,
            "cidr": vpc["CidrBlock"],
            "subnets": [{"id": s["SubnetId"], "zone": s["AvailabilityZone"], "cidr": s["CidrBlock"]}
                        for s in sorted(subnets, key=lambda s: s["SubnetId"])],
            "routeTables": [_table(table) for table in tables],
            "endpoints": [{"id": e["VpcEndpointId"], "service": e["ServiceName"], "type": e["VpcEndpointType"]}
                          for e in endpoints if e.get("State", "available").lower() == "available"],
        })
    return vpcs


def _table(table: dict[str, Any]) -> dict[str, Any]:
    associations = table.get("Associations", [])
    routes = []
    for route in table["Routes"]:
        destination = route.get("DestinationCidrBlock")
        target = next((route[key] for key in ROUTE_TARGETS if route.get(key)), None)
        if destination and target:
            routes.append({"destination": destination, "target": target})
    return {
        "id": table["RouteTableId"],
        "main": any(association.get("Main") for association in associations),
        "subnets": sorted(a["SubnetId"] for a in associations if a.get("SubnetId")),
        "routes": routes,
    }


def _amis(ec2, image_ids: list[str]) -> list[dict[str, Any]]:
    if not image_ids:
        return []
    images = ec2.describe_images(ImageIds=image_ids, IncludeDeprecated=True)["Images"]
    return [
        {
            "id": image["ImageId"],
            "name": image.get("Name", image["ImageId"]),
            "architecture": image["Architecture"],
            "rootDeviceName": image["RootDeviceName"],
            **({"deprecationTime": image["DeprecationTime"]} if image.get("DeprecationTime") else {}),
        }
        for image in images
    ]


def _reservations(ec2, settings: StackSettings) -> list[dict[str, Any]]:
    """The reservations the groups name (ODCRs and Capacity Blocks); one the account lacks is left
    out, so the offline plan reports it missing as a real preview would."""
    wanted = sorted({
        *(rid for group in settings.config.groups if group.capacity.reservations for rid in group.capacity.reservations.ids),
        *(group.capacity.capacity_block.reservation_id for group in settings.config.groups
          if group.capacity.capacity_block and group.capacity.capacity_block.reservation_id),
    })
    found = []
    for reservation_id in wanted:
        try:
            [item] = ec2.describe_capacity_reservations(CapacityReservationIds=[reservation_id])["CapacityReservations"]
        except ClientError as error:
            if "NotFound" in error.response["Error"]["Code"]:
                continue
            raise
        found.append({
            "id": item["CapacityReservationId"], "instanceType": item["InstanceType"], "zone": item["AvailabilityZone"],
            "instanceCount": item["TotalInstanceCount"], "platform": item["InstancePlatform"], "state": item["State"],
            "reservationType": item.get("ReservationType", "default"),
            **({"start": item["StartDate"].isoformat()} if item.get("StartDate") else {}),
            **({"end": item["EndDate"].isoformat()} if item.get("EndDate") else {}),
        })
    return found


def _ecr_repositories(session, settings: StackSettings, account_id: str) -> list[str]:
    """The repositories of the snapshot's account the stack names that exist (DescribeRepositories
    in each one's region; RepositoryNotFoundException: left out, so the plan reports it missing)."""
    found = []
    for _key, match in named_repositories(settings):
        if match["account"] != account_id:
            continue
        ecr = session.client("ecr", region_name=match["region"])
        try:
            ecr.describe_repositories(registryId=account_id, repositoryNames=[match["repository"]])
        except ClientError as error:
            if error.response["Error"]["Code"] == "RepositoryNotFoundException":
                continue
            raise
        found.append(f"{account_id}.dkr.ecr.{match['region']}.amazonaws.com/{match['repository']}")
    return sorted(set(found))


def _security_groups(ec2, settings: StackSettings) -> list[dict[str, str]]:
    """The groups `allowedSecurityGroupIds` names that exist (DescribeSecurityGroups, one at a time:
    InvalidGroup.NotFound leaves it out, so the plan reports it missing)."""
    found = []
    for group_id in sorted({group_id for _key, group_id in named_security_groups(settings)}):
        try:
            [group] = ec2.describe_security_groups(GroupIds=[group_id])["SecurityGroups"]
        except ClientError as error:
            if error.response["Error"]["Code"] == "InvalidGroup.NotFound":
                continue
            raise
        found.append({"id": group["GroupId"], "vpcId": group.get("VpcId", "")})
    return found


def _buckets(s3, settings: StackSettings, account_id: str) -> list[dict[str, Any]]:
    """The data bucket, if it exists: its region (GetBucketLocation: no constraint is us-east-1),
    whether the snapshot's account owns it (HeadBucket with ExpectedBucketOwner answers 403 for a
    bucket of another account) and its default encryption (GetBucketEncryption). Amazon S3 API
    Reference, HeadBucket, GetBucketLocation, GetBucketEncryption, read 2026-11-28. One missing
    (404) is left out, so the plan reports it missing."""
    data = settings.config.data
    if data is None:
        return []
    try:
        s3.head_bucket(Bucket=data.bucket)
    except ClientError as error:
        if error.response["Error"]["Code"] in ("404", "NoSuchBucket", "NotFound"):
            return []
        raise
    region = s3.get_bucket_location(Bucket=data.bucket).get("LocationConstraint") or "us-east-1"
    return [{"name": data.bucket, "region": region, "ownedByAccount": _owned_by(s3, data.bucket, account_id),
             **_encryption(s3, data.bucket)}]


def _owned_by(s3, bucket: str, account_id: str) -> bool:
    try:
        s3.head_bucket(Bucket=bucket, ExpectedBucketOwner=account_id)
    except ClientError as error:
        if error.response["Error"]["Code"] in ("403", "AccessDenied"):
            return False
        raise
    return True


def _encryption(s3, bucket: str) -> dict[str, str]:
    """Its default encryption's algorithm; nothing where the caller may not read it."""
    try:
        rules = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"]
    except ClientError as error:
        if error.response["Error"]["Code"] in ("AccessDenied", "ServerSideEncryptionConfigurationNotFoundError"):
            return {}
        raise
    return {"encryption": rules[0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"]} if rules else {}


def _workspaces(amp, settings: StackSettings) -> list[dict[str, Any]]:
    """The existing workspace `monitoring.prometheus.workspaceId` names, with what it already holds
    of what the stack adds (its alert manager definition and rule groups namespaces: AMP refuses a
    second); one the account lacks is left out, so the offline plan reports it missing as a real
    preview would."""
    prometheus = settings.config.monitoring.prometheus
    if not (prometheus.enabled and prometheus.workspace_id):
        return []
    try:
        found = amp.describe_workspace(workspaceId=prometheus.workspace_id)["workspace"]
    except ClientError as error:
        if error.response["Error"]["Code"] == "ResourceNotFoundException":
            return []
        raise
    topics = _alert_manager_topics(amp, found["workspaceId"])
    pages = amp.get_paginator("list_rule_groups_namespaces").paginate(workspaceId=found["workspaceId"])
    namespaces = [namespace for page in pages for namespace in page["ruleGroupsNamespaces"]]
    return [{
        "id": found["workspaceId"], **({"alias": found["alias"]} if found.get("alias") else {}),
        "status": found["status"]["statusCode"],
        "alertManagerDefinition": topics is not None,
        **({"alertManagerTopics": topics} if topics else {}),
        "ruleGroupsNamespaces": [
            {"name": namespace["name"],
             **({"stack": namespace["tags"][STACK_TAG]} if STACK_TAG in namespace.get("tags", {}) else {})}
            for namespace in namespaces
        ],
    }]


def _alert_manager_topics(amp, workspace_id: str) -> list[str] | None:
    """The SNS topics the workspace's alert manager definition sends to; None where it has none."""
    try:
        data = amp.describe_alert_manager_definition(workspaceId=workspace_id)["alertManagerDefinition"]["data"]
    except ClientError as error:
        if error.response["Error"]["Code"] == "ResourceNotFoundException":
            return None
        raise
    definition = yaml.safe_load(data) or {}
    config = yaml.safe_load(definition.get("alertmanager_config") or "") or {}
    return [sns["topic_arn"] for receiver in config.get("receivers") or []
            for sns in receiver.get("sns_configs") or [] if sns.get("topic_arn")]


def _offerings(ec2, settings: StackSettings) -> list[dict[str, Any]]:
    """The Capacity Block offerings EC2 proposes today for each offering a group asks for."""
    found = []
    for group in settings.config.groups:
        block = group.capacity.capacity_block
        if block is None or block.offering is None:
            continue
        offer = block.offering
        answer = ec2.describe_capacity_block_offerings(
            InstanceType=offer.instance_type, InstanceCount=offer.count, CapacityDurationHours=offer.duration_hours,
            StartDateRange=datetime.datetime.combine(offer.start_after, datetime.time(), datetime.timezone.utc),
            EndDateRange=datetime.datetime.combine(offer.end_before, datetime.time(), datetime.timezone.utc),
        )["CapacityBlockOfferings"]
        for item in answer:
            found.append({
                "id": item["CapacityBlockOfferingId"], "instanceType": item["InstanceType"],
                "instanceCount": item["InstanceCount"], "zone": item["AvailabilityZone"],
                "start": item["StartDate"].isoformat(), "end": item["EndDate"].isoformat(),
                "durationHours": item["CapacityBlockDurationHours"], "upfrontUsd": float(item["UpfrontFee"]),
            })
    return found
