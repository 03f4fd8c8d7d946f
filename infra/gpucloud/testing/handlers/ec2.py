"""Security groups and their rules, EBS volumes, launch templates and placement groups."""

from __future__ import annotations

from typing import Any

from gpucloud.testing.handlers.kms import require_key
from gpucloud.testing.service_model import check_unsent
from gpucloud.testing.registry import (
    Account,
    Created,
    ResourceRequest,
    as_bool,
    aws_tags,
    drop_none,
    refused,
    resource,
    tag_specification,
)


@resource("aws:ec2/securityGroup:SecurityGroup")
def create_security_group(account: Account, request: ResourceRequest) -> Created:
    ec2 = account.client("ec2")
    inputs = request.inputs
    name = request.physical_name()
    group_id = ec2.create_security_group(
        **drop_none(
            {
                "GroupName": name,
                "Description": inputs.get("description", "Managed by Pulumi"),
                "VpcId": inputs.get("vpcId"),
                "TagSpecifications": tag_specification("security-group", inputs.get("tags")),
            }
        )
    )["GroupId"]
    # Like the provider, remove the allow-all egress AWS adds: rules are declared explicitly.
    ec2.revoke_security_group_egress(
        GroupId=group_id, IpPermissions=[{"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}]
    )
    ingress = [_inline_permission(rule, group_id) for rule in inputs.get("ingress", [])]
    egress = [_inline_permission(rule, group_id) for rule in inputs.get("egress", [])]
    if ingress:
        ec2.authorize_security_group_ingress(GroupId=group_id, IpPermissions=ingress)
    if egress:
        ec2.authorize_security_group_egress(GroupId=group_id, IpPermissions=egress)
    return Created(
        id=group_id,
        outputs={"arn": account.arn("ec2", f"security-group/{group_id}"), "name": name, "ownerId": account.account_id},
    )


def _inline_permission(rule: dict[str, Any], own_group_id: str) -> dict[str, Any]:
    """An inline `ingress`/`egress` block of aws.ec2.SecurityGroup as an IpPermission."""
    protocol = str(rule["protocol"])
    description = drop_none({"Description": rule.get("description")})
    groups = list(rule.get("securityGroups") or []) + ([own_group_id] if rule.get("self") else [])
    return drop_none(
        {
            "IpProtocol": protocol,
            "FromPort": None if protocol in ("-1", "all") else rule.get("fromPort"),
            "ToPort": None if protocol in ("-1", "all") else rule.get("toPort"),
            "IpRanges": [{"CidrIp": cidr, **description} for cidr in rule.get("cidrBlocks") or []],
            "Ipv6Ranges": [{"CidrIpv6": cidr, **description} for cidr in rule.get("ipv6CidrBlocks") or []],
            "UserIdGroupPairs": [{"GroupId": group, **description} for group in groups],
            "PrefixListIds": [{"PrefixListId": item, **description} for item in rule.get("prefixListIds") or []],
        }
    )


def _rule_permission(inputs: dict[str, Any]) -> dict[str, Any]:
    protocol = inputs["ipProtocol"]
    description = drop_none({"Description": inputs.get("description")})
    permission: dict[str, Any] = {"IpProtocol": protocol}
    if protocol not in ("-1", "all"):
        permission.update(FromPort=inputs["fromPort"], ToPort=inputs["toPort"])
    if inputs.get("cidrIpv4"):
        permission["IpRanges"] = [{"CidrIp": inputs["cidrIpv4"], **description}]
    if inputs.get("cidrIpv6"):
        permission["Ipv6Ranges"] = [{"CidrIpv6": inputs["cidrIpv6"], **description}]
    if inputs.get("referencedSecurityGroupId"):
        permission["UserIdGroupPairs"] = [{"GroupId": inputs["referencedSecurityGroupId"], **description}]
    if inputs.get("prefixListId"):
        permission["PrefixListIds"] = [{"PrefixListId": inputs["prefixListId"], **description}]
    return permission


def _authorize(account: Account, request: ResourceRequest, egress: bool) -> Created:
    ec2 = account.client("ec2")
    inputs = request.inputs
    call = ec2.authorize_security_group_egress if egress else ec2.authorize_security_group_ingress
    response = call(
        GroupId=inputs["securityGroupId"],
        IpPermissions=[_rule_permission(inputs)],
        **drop_none({"TagSpecifications": tag_specification("security-group-rule", inputs.get("tags"))}),
    )
    rule_id = response["SecurityGroupRules"][0]["SecurityGroupRuleId"]
    return Created(
        id=rule_id,
        outputs={"securityGroupRuleId": rule_id, "arn": account.arn("ec2", f"security-group-rule/{rule_id}")},
    )


@resource("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
def authorize_ingress(account: Account, request: ResourceRequest) -> Created:
    return _authorize(account, request, egress=False)


@resource("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
def authorize_egress(account: Account, request: ResourceRequest) -> Created:
    return _authorize(account, request, egress=True)


@resource("aws:ebs/volume:Volume")
def create_volume(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    require_key(account, inputs.get("kmsKeyId"), request.name)
    volume = account.client("ec2").create_volume(
        **drop_none(
            {
                "AvailabilityZone": inputs["availabilityZone"],
                "Size": inputs.get("size"),
                "SnapshotId": inputs.get("snapshotId"),
                "VolumeType": inputs.get("type"),
                "Iops": inputs.get("iops"),
                "Throughput": inputs.get("throughput"),
                "Encrypted": inputs.get("encrypted"),
                "KmsKeyId": inputs.get("kmsKeyId"),
                "TagSpecifications": tag_specification("volume", inputs.get("tags")),
            }
        )
    )
    volume_id = volume["VolumeId"]
    return Created(
        id=volume_id,
        outputs={"arn": account.arn("ec2", f"volume/{volume_id}"), "encrypted": volume["Encrypted"]},
    )


@resource("aws:ec2/placementGroup:PlacementGroup")
def record_placement_group(account: Account, request: ResourceRequest) -> Created:
    name = request.physical_name()
    inputs = request.inputs
    check_unsent(account.client("ec2"), "CreatePlacementGroup", drop_none({
        "GroupName": name, "Strategy": inputs.get("strategy"), "SpreadLevel": inputs.get("spreadLevel"),
        "PartitionCount": inputs.get("partitionCount"),
        "TagSpecifications": tag_specification("placement-group", inputs.get("tags")),
    }))
    return Created(
        id=name,
        outputs={"name": name, "arn": account.arn("ec2", f"placement-group/{name}"), "placementGroupId": f"pg-{name}"},
        validated=False,
        note="moto does not implement CreatePlacementGroup; checked against EC2's model, recorded by the engine only",
    )


def _launch_template_data(account: Account, request: ResourceRequest) -> dict[str, Any]:
    inputs = request.inputs
    ec2 = account.client("ec2")
    devices = []
    for mapping in inputs.get("blockDeviceMappings", []):
        ebs = mapping.get("ebs") or {}
        require_key(account, ebs.get("kmsKeyId"), f"{request.name} {mapping.get('deviceName')}")
        devices.append(
            drop_none(
                {
                    "DeviceName": mapping.get("deviceName"),
                    "Ebs": drop_none(
                        {
                            "VolumeSize": ebs.get("volumeSize"),
                            "VolumeType": ebs.get("volumeType"),
                            "Encrypted": as_bool(ebs.get("encrypted")),
                            "KmsKeyId": ebs.get("kmsKeyId"),
                            "Iops": ebs.get("iops"),
                            "Throughput": ebs.get("throughput"),
                            "DeleteOnTermination": as_bool(ebs.get("deleteOnTermination")),
                        }
                    ),
                }
            )
        )
    interfaces = []
    checked: set[tuple[str, ...]] = set()
    for interface in inputs.get("networkInterfaces", []):
        groups = interface.get("securityGroups") or []
        if groups and tuple(groups) not in checked:
            # An EFA template repeats its groups on every network card (32 on a p5): one check each.
            ec2.describe_security_groups(GroupIds=groups)
            checked.add(tuple(groups))
        interfaces.append(
            drop_none(
                {
                    "DeviceIndex": interface.get("deviceIndex"),
                    "NetworkCardIndex": interface.get("networkCardIndex"),
                    "InterfaceType": interface.get("interfaceType"),
                    "Groups": groups,
                    "SubnetId": interface.get("subnetId"),
                    "AssociatePublicIpAddress": as_bool(interface.get("associatePublicIpAddress")),
                    "DeleteOnTermination": as_bool(interface.get("deleteOnTermination")),
                }
            )
        )
    image = inputs.get("imageId")
    if image:
        ec2.describe_images(ImageIds=[image])
    profile = inputs.get("iamInstanceProfile") or {}
    if profile.get("arn"):
        account.client("iam").get_instance_profile(InstanceProfileName=profile["arn"].rsplit("/", 1)[-1])
    metadata = inputs.get("metadataOptions") or {}
    market = inputs.get("instanceMarketOptions") or {}
    reservation = ((inputs.get("capacityReservationSpecification") or {}).get("capacityReservationTarget") or {}).get(
        "capacityReservationId")
    if market.get("marketType") == "capacity-block":
        found = account.capacity_reservations.get(reservation or "")
        if found is None or found["reservation_type"] != "capacity-block":
            raise refused("CreateLaunchTemplate", "InvalidParameterValue",
                          f"{request.name}: market type capacity-block needs a Capacity Block as its reservation target, "
                          f"not {reservation!r} (EC2 user guide, \"Launch instances into a Capacity Block\")")
    return drop_none(
        {
            "ImageId": image,
            "InstanceType": inputs.get("instanceType"),
            "EbsOptimized": as_bool(inputs.get("ebsOptimized")),
            "IamInstanceProfile": drop_none({"Arn": profile.get("arn"), "Name": profile.get("name")}),
            "MetadataOptions": drop_none(
                {
                    "HttpEndpoint": metadata.get("httpEndpoint"),
                    "HttpTokens": metadata.get("httpTokens"),
                    "HttpPutResponseHopLimit": metadata.get("httpPutResponseHopLimit"),
                    "InstanceMetadataTags": metadata.get("instanceMetadataTags"),
                }
            ),
            "Monitoring": drop_none({"Enabled": (inputs.get("monitoring") or {}).get("enabled")}),
            "BlockDeviceMappings": devices,
            "NetworkInterfaces": interfaces,
            "SecurityGroupIds": inputs.get("vpcSecurityGroupIds"),
            "UserData": inputs.get("userData"),
            "Placement": drop_none({"GroupName": (inputs.get("placement") or {}).get("groupName")}),
            "InstanceMarketOptions": drop_none({"MarketType": market.get("marketType")}),
            "CapacityReservationSpecification": drop_none({
                "CapacityReservationTarget": drop_none({"CapacityReservationId": reservation}),
            }),
            "HibernationOptions": drop_none({"Configured": (inputs.get("hibernationOptions") or {}).get("configured")}),
            "TagSpecifications": [
                {"ResourceType": spec["resourceType"], "Tags": aws_tags(spec.get("tags"))}
                for spec in inputs.get("tagSpecifications", [])
            ],
        }
    )


@resource("aws:ec2/launchTemplate:LaunchTemplate")
def create_launch_template(account: Account, request: ResourceRequest) -> Created:
    name = request.physical_name()
    template = account.client("ec2").create_launch_template(
        **drop_none(
            {
                "LaunchTemplateName": name,
                "VersionDescription": request.inputs.get("description"),
                "LaunchTemplateData": _launch_template_data(account, request),
                "TagSpecifications": tag_specification("launch-template", request.inputs.get("tags")),
            }
        )
    )["LaunchTemplate"]
    template_id = template["LaunchTemplateId"]
    return Created(
        id=template_id,
        outputs={
            "name": name,
            "arn": account.arn("ec2", f"launch-template/{template_id}"),
            "latestVersion": template["LatestVersionNumber"],
            "defaultVersion": template["DefaultVersionNumber"],
        },
    )
