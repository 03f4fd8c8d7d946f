"""The three example stacks, deployed on the engine and checked through boto3 as an operator would."""

from __future__ import annotations

import base64
import gzip
import hashlib
import ipaddress
import json
import re

import yaml

from gpucloud.config import load_stack_file
from gpucloud.config.node_role import LONGEST_PARTITION, node_role_policies_size
from gpucloud.policy import iam_lint
from gpucloud.policy.taggable import is_taggable
from gpucloud.naming import instance_role_name
from support import STACKS
from userdata_checks import schema_problems, shellcheck_problems

MANAGED_GRAFANA_TYPES = {
    "aws:grafana/workspace:Workspace", "aws:grafana/workspaceServiceAccount:WorkspaceServiceAccount",
    "aws:grafana/workspaceServiceAccountToken:WorkspaceServiceAccountToken",
    "grafana:oss/dataSource:DataSource", "grafana:oss/dashboard:Dashboard",
}
"""moto has no Managed Grafana: the engine checks these and records them."""
GPU_TYPES = {"vision-train": {"p4d.24xlarge", "p5.48xlarge"}, "llm-infer": {"g5.2xlarge", "g6e.2xlarge", "g5.4xlarge"}, "notebooks": {"g5.xlarge", "g4dn.xlarge"}}

def project_key_arn(example) -> str:
    return example.outputs["kmsKeyArn"]

def launch_template_versions(example):
    ec2 = example.client("ec2")
    templates = ec2.describe_launch_templates()["LaunchTemplates"]
    assert templates, "no launch template was created"
    return [
        ec2.describe_launch_template_versions(LaunchTemplateId=template["LaunchTemplateId"])["LaunchTemplateVersions"][-1]
        for template in templates
    ]

def asg(example):
    groups = example.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    assert len(groups) == 1
    return groups[0]

def test_stack_builds_with_every_resource_applied(example):
    types = {resource.type for resource in example.resources}
    assert {"aws:kms/key:Key", "aws:iam/role:Role", "aws:ec2/launchTemplate:LaunchTemplate", "aws:autoscaling/group:Group"} <= types
    not_validated = {resource.type for resource in example.unvalidated}
    assert not_validated <= {
        "aws:ec2/placementGroup:PlacementGroup", "aws:backup/selection:Selection", "aws:s3/bucketPolicy:BucketPolicy",
        "aws:amp/alertManagerDefinition:AlertManagerDefinition", *MANAGED_GRAFANA_TYPES,
        "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation",
    }
    monitoring = example.settings.config.monitoring
    assert set(example.outputs) == {
        "kmsKeyArn", "instanceRoleArn", "alertsTopicArn", "artifactsBucketName", "agentBundleKey", "groups",
        "jobDocumentName",
        *(["prometheusWorkspaceId", "prometheusRemoteWriteUrl"] if monitoring.prometheus.enabled else []),
        *(["grafanaEndpoint"] if monitoring.grafana.enabled else []),
        *(["fileSystemId", "fileSystemDnsName", "fileSystemMountName", "dataBucketPolicyForFileSystem"]
          if example.settings.config.storage.lustre else []),
        *(["jobRunnerPolicyArn"] if example.settings.config.access.job_runner_policy else []),
    }

def test_key_is_customer_managed_with_rotation(example):
    kms = example.client("kms")
    key_id = project_key_arn(example)
    metadata = kms.describe_key(KeyId=key_id)["KeyMetadata"]
    assert metadata["KeyManager"] == "CUSTOMER" and metadata["KeyState"] == "Enabled"
    assert kms.get_key_rotation_status(KeyId=key_id)["KeyRotationEnabled"] is True
    aliases = {alias["AliasName"] for alias in kms.list_aliases(KeyId=key_id)["Aliases"]}
    assert aliases == {f"alias/gpu-cloud/{example.stack}"}
    key = next(r for r in example.of_type("aws:kms/key:Key"))
    assert key.protect and key.retain_on_delete and key.inputs["deletionWindowInDays"] == 30

def test_key_policy_lets_only_the_node_and_backup_roles_and_autoscaling_use_it(example):
    policy = json.loads(example.client("kms").get_key_policy(KeyId=project_key_arn(example), PolicyName="default")["Policy"])
    account = example.account.account_id
    root = f"arn:aws:iam::{account}:root"
    autoscaling = f"arn:aws:iam::{account}:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling"
    statements = {statement["Sid"]: statement for statement in policy["Statement"]}

    prometheus = example.settings.config.monitoring.prometheus.enabled
    region = example.settings.region
    jupyter = any(group.services.jupyter is not None for group in example.settings.config.groups)
    assert {sid: statement["Principal"] for sid, statement in statements.items()} == {
        "AccountAdministersKey": {"AWS": root},
        "ProjectInstanceRolesUseKey": {"AWS": root},
        "ProjectInstanceRolesAttachEncryptedVolumes": {"AWS": root},
        "AccountUsesKeyOnlyThroughAwsServices": {"AWS": root},
        "AccountGrantsOnlyForAwsResourcesThroughAwsServices": {"AWS": root},
        "AutoScalingLaunchesEncryptedVolumes": {"AWS": autoscaling},
        "AlarmAndBudgetServicesPublishToEncryptedTopic": {"Service": [
            "cloudwatch.amazonaws.com", "budgets.amazonaws.com", *(["aps.amazonaws.com"] if prometheus else [])
        ]},
        "AutoScalingAttachesEncryptedVolumes": {"AWS": autoscaling},
        "CloudWatchLogsEncryptsProjectLogGroups": {"Service": f"logs.{region}.amazonaws.com"},
        **({"AccountUsesKeyForStackParametersOnlyThroughParameterStore": {"AWS": root}} if jupyter else {}),
        "ProjectRolesPublishToEncryptedTopic": {"AWS": root},
    }
    assert statements["ProjectRolesPublishToEncryptedTopic"]["Condition"] == {
        "StringEquals": {"kms:CallerAccount": account, "kms:ViaService": f"sns.{region}.amazonaws.com"},
        "ArnEquals": {"aws:PrincipalArn": [f"arn:aws:iam::{account}:role/gpu-cloud-{example.settings.name_base}-jobs-role"]},
    }, "the job supervisor publishes each job's end to the encrypted alerts topic"
    assert statements["CloudWatchLogsEncryptsProjectLogGroups"]["Condition"]["ArnLike"] == {
        "kms:EncryptionContext:aws:logs:arn": [
            f"arn:aws:logs:{region}:{account}:log-group:/gpu-cloud/{example.settings.name_base}/jobs*",
            *(f"arn:aws:logs:{region}:{account}:log-group:{prefix}{example.settings.name_base}/*"
              for prefix in ("/gpu-cloud-vpc/", *(["/gpu-cloud-aps/"] if prometheus else []))),
        ]
    }
    backs_up = any(group.persistent_volume_gib for group in example.settings.config.groups)
    lustre = example.settings.config.storage.lustre
    assert statements["ProjectInstanceRolesUseKey"]["Condition"]["ArnEquals"]["aws:PrincipalArn"] == [
        example.outputs["instanceRoleArn"],
        *([example.outputs["instanceRoleArn"].replace("-node", "-backup")] if backs_up else []),
    ]
    assert statements["AccountUsesKeyOnlyThroughAwsServices"]["Condition"]["StringEquals"]["kms:ViaService"] == [
        f"ec2.{example.settings.region}.amazonaws.com",
        f"backup.{example.settings.region}.amazonaws.com",
        f"s3.{example.settings.region}.amazonaws.com",
        *([f"aps.{region}.amazonaws.com"] if prometheus else []),
        *([f"fsx.{region}.amazonaws.com"] if lustre and lustre.deployment_type == "PERSISTENT_2" else []),
    ]
    assert "kms:Decrypt" not in statements["AccountAdministersKey"]["Action"]
    for statement in policy["Statement"]:
        assert "kms:*" not in statement["Action"]


def test_every_block_device_is_encrypted_with_the_project_key(example):
    for version in launch_template_versions(example):
        devices = version["LaunchTemplateData"]["BlockDeviceMappings"]
        assert devices
        for device in devices:
            assert device["Ebs"]["Encrypted"] is True
            assert device["Ebs"]["KmsKeyId"] == project_key_arn(example)
            assert device["Ebs"]["VolumeType"] == "gp3"

MOTO_DEFAULT_ROOT_GIB = 8
"""moto gives every instance it launches a root volume of its own before mapping the launch
template's devices; that volume stays behind, untagged and unencrypted (not an AWS behaviour)."""


def test_every_ebs_volume_is_encrypted_with_the_project_key(example):
    ec2 = example.client("ec2")
    instances = [instance for reservation in ec2.describe_instances()["Reservations"] for instance in reservation["Instances"]]
    mapped = {mapping["Ebs"]["VolumeId"] for instance in instances for mapping in instance["BlockDeviceMappings"]}
    volumes = ec2.describe_volumes()["Volumes"]
    persistent = [volume for volume in volumes if any(tag["Key"] == "Project" for tag in volume.get("Tags", []))]
    ours = [volume for volume in volumes if volume["VolumeId"] in mapped] + persistent

    devices_per_instance = {len(version["LaunchTemplateData"]["BlockDeviceMappings"]) for version in launch_template_versions(example)}
    assert len(devices_per_instance) == 1
    assert len(ours) == len(instances) * devices_per_instance.pop() + sum(
        1 for group in example.settings.config.groups if group.persistent_volume_gib
    )
    for volume in ours:
        assert volume["Encrypted"] and volume["KmsKeyId"] == project_key_arn(example), volume["VolumeId"]
    moto_leftovers = [volume for volume in volumes if volume not in ours]
    assert len(moto_leftovers) == len(instances)
    assert all(volume["Size"] == MOTO_DEFAULT_ROOT_GIB and not volume.get("Tags") for volume in moto_leftovers)


def test_examples_put_volumes_under_the_encryption_check():
    """The check above must see volumes: instances run at desired capacity, or a persistent volume exists."""
    checked = [
        settings.stack
        for settings in (load_stack_file(path) for path in sorted(STACKS.glob("Pulumi.*.yaml")))
        if any(group.desired_capacity or group.persistent_volume_gib for group in settings.config.groups)
    ]
    assert checked == ["llm-infer", "notebooks"]


def test_launch_templates_require_imdsv2_and_no_public_ip(example):
    for version in launch_template_versions(example):
        data = version["LaunchTemplateData"]
        assert data["MetadataOptions"]["HttpTokens"] == "required"
        # One hop, or two where the example's one group runs containers on docker's bridge network.
        [group] = example.settings.config.groups
        assert data["MetadataOptions"]["HttpPutResponseHopLimit"] == (2 if group.services and group.services.containers else 1)
        assert data["IamInstanceProfile"]["Arn"].endswith(f"instance-profile/gpu-cloud-{example.stack}-node")
        first = next(interface for interface in data["NetworkInterfaces"] if interface.get("NetworkCardIndex", 0) == 0)
        assert first["AssociatePublicIpAddress"] is False

def test_group_uses_mixed_instances_over_the_configured_gpu_types(example):
    group = asg(example)
    policy = group["MixedInstancesPolicy"]
    types = {override["InstanceType"] for override in policy["LaunchTemplate"]["Overrides"]}
    assert types == GPU_TYPES[example.stack]
    assert policy["InstancesDistribution"]["SpotAllocationStrategy"] == "price-capacity-optimized"
    template = policy["LaunchTemplate"]["LaunchTemplateSpecification"]
    assert template["Version"].isdigit(), "the group must pin a version number, not $Latest"

def test_group_has_launch_and_terminate_hooks(example):
    group = asg(example)
    hooks = example.client("autoscaling").describe_lifecycle_hooks(AutoScalingGroupName=group["AutoScalingGroupName"])[
        "LifecycleHooks"
    ]
    transitions = {hook["LifecycleTransition"]: hook for hook in hooks}
    assert transitions["autoscaling:EC2_INSTANCE_LAUNCHING"]["DefaultResult"] == "ABANDON"
    assert transitions["autoscaling:EC2_INSTANCE_TERMINATING"]["DefaultResult"] == "CONTINUE"

def test_desired_capacity_is_left_to_the_autoscaler_after_creation(example):
    group = next(iter(example.of_type("aws:autoscaling/group:Group")))
    assert "desiredCapacity" in group.ignore_changes
    assert group.inputs["instanceRefresh"]["strategy"] == "Rolling"

def test_security_groups_have_no_world_open_ingress(example):
    for group in example.client("ec2").describe_security_groups()["SecurityGroups"]:
        for permission in group["IpPermissions"]:
            assert all(r["CidrIp"] != "0.0.0.0/0" for r in permission.get("IpRanges", []))
            assert all(r["CidrIpv6"] != "::/0" for r in permission.get("Ipv6Ranges", []))

PRIVATE_RANGES = tuple(ipaddress.ip_network(cidr) for cidr in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"))
"""RFC 1918 and RFC 4193: what a VPN or Direct Connect brings into a VPC."""

def test_nodes_admit_cidrs_only_from_private_ranges(example):
    """The examples' nodes sit in private subnets: only a network routed into the VPC reaches them
    by address, and `gpucloud connect` (Session Manager port forwarding) needs no inbound rule."""
    ec2 = example.client("ec2")
    node_groups = [outputs["securityGroupId"] for outputs in example.outputs["groups"].values()]
    for group in ec2.describe_security_groups(GroupIds=node_groups)["SecurityGroups"]:
        for permission in group["IpPermissions"]:
            for cidr in [r["CidrIp"] for r in permission["IpRanges"]] + [r["CidrIpv6"] for r in permission["Ipv6Ranges"]]:
                network = ipaddress.ip_network(cidr)
                assert any(network.version == private.version and network.subnet_of(private) for private in PRIVATE_RANGES), (
                    f"{group['GroupName']} admits {cidr} on {permission.get('FromPort')}")

def test_every_taggable_resource_carries_the_project_tags(example):
    for resource in example.resources:
        if not resource.custom or not is_taggable(resource.type):
            continue
        tags = resource.inputs.get("tags")
        if isinstance(tags, list):
            tags = {tag["key"]: tag["value"] for tag in tags}
        assert tags, f"{resource.urn} has no tags"
        assert {"Project", "Owner", "CostCenter", "ManagedBy"} <= set(tags), resource.urn

def groups_of(example):
    by_name = {group["AutoScalingGroupName"]: group for group in example.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]}
    return [(config, by_name[f"gpu-cloud-{example.stack}-{config.name}"]) for config in example.settings.config.groups]

def test_spot_split_and_capacity_rebalance_are_as_configured(example):
    for config, group in groups_of(example):
        distribution = group["MixedInstancesPolicy"]["InstancesDistribution"]
        assert distribution["OnDemandBaseCapacity"] == config.on_demand_base_capacity
        assert distribution["OnDemandPercentageAboveBaseCapacity"] == 100 - config.spot_percent
        assert group["CapacityRebalance"] is config.uses_spot
        assert (group["MinSize"], group["MaxSize"], group["DesiredCapacity"]) == (
            config.min_size, config.max_size, config.initial_capacity,
        )

def node_subnets(example) -> list[dict]:
    return example.client("ec2").describe_subnets(
        Filters=[{"Name": "tag:gpu-cloud:subnet", "Values": ["nodes"]}]
    )["Subnets"]


def test_groups_span_the_node_subnets_of_zones_offering_their_types(example):
    ec2 = example.client("ec2")
    nodes = {subnet["SubnetId"]: subnet["AvailabilityZone"] for subnet in node_subnets(example)}
    assert len(nodes) == example.settings.config.network.zones
    for config, group in groups_of(example):
        subnets = group["VPCZoneIdentifier"].split(",")
        assert set(subnets) <= set(nodes), "groups run only in the private node subnets"
        zones = {nodes[subnet] for subnet in subnets}
        if config.multi_node or config.persistent_volume_gib:
            assert len(zones) == 1, "multi-node and persistent-volume groups stay in one zone"
        for instance_type in config.instance_types:
            offered = {offering["Location"] for offering in ec2.describe_instance_type_offerings(
                LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": [instance_type]}]
            )["InstanceTypeOfferings"]}
            assert zones <= offered if (config.multi_node or config.persistent_volume_gib) else zones & offered, (
                f"{config.name}: {instance_type} is not offered in {sorted(zones - offered)}"
            )


def test_every_node_subnet_routes_out_through_a_nat_gateway_never_an_internet_gateway(example):
    ec2 = example.client("ec2")
    for subnet in node_subnets(example):
        assert not subnet["MapPublicIpOnLaunch"]
        [table] = ec2.describe_route_tables(
            Filters=[{"Name": "association.subnet-id", "Values": [subnet["SubnetId"]]}]
        )["RouteTables"]
        [default] = [route for route in table["Routes"] if route.get("DestinationCidrBlock") == "0.0.0.0/0"]
        assert default.get("NatGatewayId", "").startswith("nat-") and "GatewayId" not in default, default
        [nat] = ec2.describe_nat_gateways(NatGatewayIds=[default["NatGatewayId"]])["NatGateways"]
        [public] = ec2.describe_route_tables(
            Filters=[{"Name": "association.subnet-id", "Values": [nat["SubnetId"]]}]
        )["RouteTables"]
        assert any(route.get("GatewayId", "").startswith("igw-") for route in public["Routes"]
                   if route.get("DestinationCidrBlock") == "0.0.0.0/0"), "the NAT gateway's subnet reaches the internet"
        endpoints = ec2.describe_vpc_endpoints(Filters=[{"Name": "vpc-id", "Values": [subnet["VpcId"]]}])["VpcEndpoints"]
        assert any(endpoint["ServiceName"].endswith(".s3") and table["RouteTableId"] in endpoint["RouteTableIds"]
                   for endpoint in endpoints), "S3 traffic skips the NAT through the gateway endpoint"


def test_the_vpc_logs_its_flows_encrypted_and_its_default_security_group_has_no_rules(example):
    ec2, logs = example.client("ec2"), example.client("logs")
    [vpc] = ec2.describe_vpcs(Filters=[{"Name": "tag:gpu-cloud:stack", "Values": [example.settings.name_base]}])["Vpcs"]
    [flow_log] = ec2.describe_flow_logs(Filters=[{"Name": "resource-id", "Values": [vpc["VpcId"]]}])["FlowLogs"]
    [group] = logs.describe_log_groups(logGroupNamePrefix=f"/gpu-cloud-vpc/{example.settings.name_base}/")["logGroups"]
    assert flow_log["LogDestination"].removesuffix(":*") == group["arn"].removesuffix(":*")
    assert flow_log["TrafficType"] == "ALL" and flow_log["LogDestinationType"] == "cloud-watch-logs"
    assert group["kmsKeyId"] == project_key_arn(example)
    assert group["retentionInDays"] == example.settings.config.network.flow_logs_retention_days
    [default] = ec2.describe_security_groups(
        Filters=[{"Name": "vpc-id", "Values": [vpc["VpcId"]]}, {"Name": "group-name", "Values": ["default"]}]
    )["SecurityGroups"]
    assert default["IpPermissions"] == [] and default["IpPermissionsEgress"] == []


def test_multi_node_groups_get_efa_on_every_network_card_and_a_cluster_placement(example):
    ec2 = example.client("ec2")
    for config, group in groups_of(example):
        if not config.multi_node:
            continue
        assert group["PlacementGroup"]
        specs = [group["MixedInstancesPolicy"]["LaunchTemplate"]["LaunchTemplateSpecification"]] + [
            o["LaunchTemplateSpecification"] for o in group["MixedInstancesPolicy"]["LaunchTemplate"]["Overrides"] if "LaunchTemplateSpecification" in o
        ]
        cards_by_type = {
            it["InstanceType"]: it["NetworkInfo"]["EfaInfo"]["MaximumEfaInterfaces"]
            for it in ec2.describe_instance_types(InstanceTypes=config.instance_types)["InstanceTypes"]
        }
        seen = set()
        for spec in specs:
            data = ec2.describe_launch_template_versions(LaunchTemplateId=spec["LaunchTemplateId"], Versions=[spec["Version"]])[
                "LaunchTemplateVersions"
            ][0]["LaunchTemplateData"]
            interfaces = sorted(data["NetworkInterfaces"], key=lambda i: i["NetworkCardIndex"])
            assert [i["InterfaceType"] for i in interfaces] == ["efa"] + ["efa-only"] * (len(interfaces) - 1)
            assert all(i["Groups"] for i in interfaces), "every EFA interface carries the group's security group"
            seen.add(len(interfaces))
        assert seen == set(cards_by_type.values())

def test_multi_node_security_group_allows_members_only(example):
    ec2 = example.client("ec2")
    for config, group in groups_of(example):
        template = group["MixedInstancesPolicy"]["LaunchTemplate"]["LaunchTemplateSpecification"]
        data = ec2.describe_launch_template_versions(LaunchTemplateId=template["LaunchTemplateId"])["LaunchTemplateVersions"][0]["LaunchTemplateData"]
        group_id = data["NetworkInterfaces"][0]["Groups"][0]
        security_group = ec2.describe_security_groups(GroupIds=[group_id])["SecurityGroups"][0]
        self_rules = [p for p in security_group["IpPermissions"] if any(pair["GroupId"] == group_id for pair in p.get("UserIdGroupPairs", []))]
        assert bool(self_rules) is config.multi_node

def test_persistent_volume_sits_in_the_zone_of_its_group_and_is_retained(example):
    ec2 = example.client("ec2")
    for config, group in groups_of(example):
        if not config.persistent_volume_gib:
            continue
        volume_id = example.outputs["groups"][config.name]["persistentVolumeId"]
        volume = ec2.describe_volumes(VolumeIds=[volume_id])["Volumes"][0]
        first_subnet = ec2.describe_subnets(SubnetIds=[group["VPCZoneIdentifier"].split(",")[0]])["Subnets"][0]
        assert volume["AvailabilityZone"] == first_subnet["AvailabilityZone"]
        assert volume["Size"] == config.persistent_volume_gib and volume["VolumeType"] == "gp3"
        tags = {tag["Key"]: tag["Value"] for tag in volume["Tags"]}
        assert tags["gpu-cloud:attach-to"] == group["AutoScalingGroupName"]
        record = next(r for r in example.of_type("aws:ebs/volume:Volume"))
        assert record.protect and record.retain_on_delete

def test_scaling_policies_and_schedules_are_as_configured(example):
    autoscaling = example.client("autoscaling")
    for config, group in groups_of(example):
        name = group["AutoScalingGroupName"]
        policies = autoscaling.describe_policies(AutoScalingGroupName=name)["ScalingPolicies"]
        tracking = [p for p in policies if p["PolicyType"] == "TargetTrackingScaling"]
        steps = [p for p in policies if p["PolicyType"] == "StepScaling"]
        scaling = config.scaling
        per_target = [p for p in tracking if "PredefinedMetricSpecification" in p["TargetTrackingConfiguration"]]
        assert [p["TargetTrackingConfiguration"]["PredefinedMetricSpecification"]["PredefinedMetricType"] for p in per_target] == (
            ["ALBRequestCountPerTarget"] if config.endpoint else [])
        tracking = [p for p in tracking if p not in per_target]
        assert len(tracking) == (1 if scaling.target_tracking else 0)
        if scaling.target_tracking:
            spec = tracking[0]["TargetTrackingConfiguration"]
            assert spec["CustomizedMetricSpecification"]["MetricName"] == scaling.target_tracking.metric_name
            assert spec["TargetValue"] == scaling.target_tracking.target_value
        adjustments = sorted(p["StepAdjustments"][0]["ScalingAdjustment"] for p in steps)
        expected = sorted(
            [s.scale_out_by for s in scaling.step_scaling]
            + ([-scaling.gpu_idle_scale_in.scale_in_by] if scaling.gpu_idle_scale_in else [])
            + ([0] if config.idle_shutdown else [])
        )
        assert adjustments == expected
        alarms = example.client("cloudwatch").describe_alarms()["MetricAlarms"]
        for policy in steps:
            assert any(policy["PolicyARN"] in alarm["AlarmActions"] for alarm in alarms), "every step policy has its alarm"
        actions = {a["ScheduledActionName"]: a for a in autoscaling.describe_scheduled_actions(AutoScalingGroupName=name)["ScheduledUpdateGroupActions"]}
        assert set(actions) == {s.name for s in scaling.schedules}
        for schedule in scaling.schedules:
            action = actions[schedule.name]
            assert action["Recurrence"] == schedule.recurrence and action["TimeZone"] == schedule.time_zone
            assert action.get("DesiredCapacity") == schedule.desired_capacity
            assert action.get("MaxSize") == schedule.max_size

def test_gpu_idle_alarm_watches_the_group_utilisation(example):
    alarms = example.client("cloudwatch").describe_alarms()["MetricAlarms"]
    for config, group in groups_of(example):
        idle = config.scaling.gpu_idle_scale_in
        if not idle:
            continue
        policies = example.client("autoscaling").describe_policies(AutoScalingGroupName=group["AutoScalingGroupName"])["ScalingPolicies"]
        [scale_in] = [p for p in policies if p.get("StepAdjustments", [{}])[0].get("ScalingAdjustment") == -idle.scale_in_by]
        [alarm] = [a for a in alarms if scale_in["PolicyARN"] in a["AlarmActions"]]
        assert alarm["MetricName"] == "nvidia_smi_utilization_gpu"
        assert alarm["Dimensions"] == [{"Name": "AutoScalingGroupName", "Value": group["AutoScalingGroupName"]}]
        assert alarm["Threshold"] == idle.utilization_percent and alarm["ComparisonOperator"] == "LessThanThreshold"
        assert alarm["Period"] * alarm["EvaluationPeriods"] == idle.minutes * 60

def rendered_user_data(example) -> list[str]:
    return [
        gzip.decompress(base64.b64decode(version["LaunchTemplateData"]["UserData"])).decode()
        for version in launch_template_versions(example)
    ]

def test_user_data_passes_cloud_init_schema_and_shellcheck(example, tmp_path):
    for number, text in enumerate(rendered_user_data(example)):
        folder = tmp_path / str(number)
        folder.mkdir()
        assert schema_problems(text, folder) == ""
        scripts, complaints = shellcheck_problems(text, folder)
        assert scripts == ["runcmd"], "user data carries no shell scripts: they come in the agent bundle"
        assert complaints == ""

def test_user_data_tells_each_node_what_its_type_must_show(example):
    ec2 = example.client("ec2")
    for config, group in groups_of(example):
        policy = group["MixedInstancesPolicy"]["LaunchTemplate"]
        default = policy["LaunchTemplateSpecification"]["LaunchTemplateId"]
        facts = {
            it["InstanceType"]: it
            for it in ec2.describe_instance_types(InstanceTypes=config.instance_types)["InstanceTypes"]
        }
        for override in policy["Overrides"]:
            template = override.get("LaunchTemplateSpecification", {}).get("LaunchTemplateId", default)
            data = ec2.describe_launch_template_versions(LaunchTemplateId=template)["LaunchTemplateVersions"][-1]
            document = yaml.safe_load(gzip.decompress(base64.b64decode(data["LaunchTemplateData"]["UserData"])))
            [node] = [json.loads(f["content"]) for f in document["write_files"] if f["path"] == "/etc/gpucloud/node.json"]
            gpus = facts[override["InstanceType"]]["GpuInfo"]["Gpus"][0]
            assert (node["expected_gpu_count"], node["expected_gpu_model"]) == (gpus["Count"], gpus["Name"])
            assert node["launch_hook_name"] == f"{group['AutoScalingGroupName']}-launch"
            assert node["persistent_volume_tag_value"] == (group["AutoScalingGroupName"] if config.persistent_volume_gib else None)
            assert (node["data_disk_device"] is not None) == bool(config.data_volume_gib)

def test_generated_iam_documents_lint_clean_with_parliament(example):
    documents = [
        resource.inputs["policy"]
        for resource in example.resources
        if resource.type in ("aws:iam/rolePolicy:RolePolicy", "aws:iam/policy:Policy")
    ]
    assert documents, "the stack generates IAM documents"
    for document in documents:
        findings = iam_lint.lint_policy(document)
        assert not iam_lint.has_medium_or_worse(findings), iam_lint.summarize(findings)

def test_agent_bundle_lies_in_a_private_kms_encrypted_versioned_bucket_under_the_pinned_hash(example):
    s3 = example.client("s3")
    bucket = example.outputs["artifactsBucketName"]
    key = example.outputs["agentBundleKey"]
    encryption = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"]
    assert encryption == [{
        "ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": project_key_arn(example)},
        "BucketKeyEnabled": True,
    }]
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"
    assert set(s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"].values()) == {True}
    assert s3.get_bucket_ownership_controls(Bucket=bucket)["OwnershipControls"]["Rules"] == [
        {"ObjectOwnership": "BucketOwnerEnforced"}
    ]
    bundle = s3.get_object(Bucket=bucket, Key=key)
    data = bundle["Body"].read()
    assert bundle["ServerSideEncryption"] == "aws:kms" and bundle["SSEKMSKeyId"] == project_key_arn(example)
    pinned = {
        json.loads(entry["content"])["agent_sha256"]
        for text in rendered_user_data(example)
        for entry in yaml.safe_load(text)["write_files"]
        if entry["path"] == "/etc/gpucloud/node.json"
    }
    assert pinned == {hashlib.sha256(data).hexdigest()} and key.endswith(f"-{hashlib.sha256(data).hexdigest()}.zip")
    [policy] = [r for r in example.of_type("aws:s3/bucketPolicy:BucketPolicy") if r.inputs["bucket"] == bucket]
    readers = json.loads(policy.inputs["policy"])["Statement"][1]["Condition"]["ArnNotEquals"]["aws:PrincipalArn"]
    assert example.outputs["instanceRoleArn"] in readers

def test_the_configs_count_of_the_node_role_policies_is_what_iam_holds_with_the_longest_partition(example):
    """The config refuses a stack whose node role policies pass IAM's 10,240 characters (white space
    not counted) before any resource: its count is the role's inline policies as the stack put them,
    every one, with only the partition of each ARN taken at its longest, never below."""
    iam = example.client("iam")
    role = instance_role_name(example.settings.name_base)
    held = [json.dumps(iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"])
            for name in iam.list_role_policies(RoleName=role)["PolicyNames"]]
    measured = sum(len(re.sub(r"\s", "", text)) for text in held)
    arns = sum(text.count("arn:aws:") for text in held)
    counted = node_role_policies_size(example.settings.config, example.settings.name_base, example.settings.region)
    assert counted == measured + arns * (len(LONGEST_PARTITION) - len("aws")), (role, len(held))
