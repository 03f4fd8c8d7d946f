"""storage.lustre and storage.s3Mount: the FSx for Lustre file system on the engine (one deployment for
the module), what FSx refuses that moto does not, the nodes' mounts and gate, the estimate and the policies."""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from gpucloud.config.errors import ConfigError
from gpucloud.node.commands import CommandResult
from gpucloud.node.config import NodeConfig
from gpucloud.node.shared_storage import mount_shared, shared_storage_problems
from gpucloud.policy import registry
from gpucloud.policy.model import PlannedResource
from gpucloud.pricing.catalog import load_catalog
from gpucloud.pricing.estimate import estimate_stack
from gpucloud.testing import moto_account
from gpucloud.testing.handlers.fsx import create_lustre_file_system, record_data_repository_association
from gpucloud.testing.registry import ResourceRequest
from support import deploy, minimal_config, node_configs, settings_for

LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
ASSOCIATION = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"
STORAGE = {"lustre": {"storageCapacityGiB": 2400, "throughputPerTiB": 250, "zone": "us-east-1b"}, "s3Mount": {"writePrefix": True, "install": "download"}}


@pytest.fixture(scope="module")
def deployed():
    settings = settings_for(minimal_config(storage=STORAGE))
    with moto_account(settings.region) as account:
        yield deploy(settings, account)


def of_type(deployment, token):
    return [resource for resource in deployment.resources if resource.type == token]


def test_file_system_is_persistent_2_under_the_project_key_and_kept(deployed):
    [system] = deployed.client("fsx").describe_file_systems()["FileSystems"]
    assert system["StorageCapacity"] == 2400
    assert system["LustreConfiguration"]["DeploymentType"] == "PERSISTENT_2"
    assert system["LustreConfiguration"]["PerUnitStorageThroughput"] == 250
    assert system["KmsKeyId"] == deployed.outputs["kmsKeyArn"]
    [resource] = of_type(deployed, LUSTRE)
    assert resource.retain_on_delete and resource.protect
    policy = json.loads(deployed.client("kms").get_key_policy(KeyId=system["KmsKeyId"], PolicyName="default")["Policy"])
    services = [s["Condition"]["StringEquals"]["kms:ViaService"] for s in policy["Statement"] if s["Sid"] == "AccountUsesKeyOnlyThroughAwsServices"]
    assert "fsx.us-east-1.amazonaws.com" in services[0]


def test_lustre_ports_open_only_to_the_file_system_and_the_node_groups(deployed):
    ec2 = deployed.client("ec2")
    [resource] = of_type(deployed, LUSTRE)
    [fs_group_id] = resource.inputs["securityGroupIds"]
    node_group_ids = {group["securityGroupId"] for group in deployed.outputs["groups"].values()}
    [group] = ec2.describe_security_groups(GroupIds=[fs_group_id])["SecurityGroups"]
    for permissions in (group["IpPermissions"], group["IpPermissionsEgress"]):
        assert {(p["IpProtocol"], p["FromPort"], p["ToPort"]) for p in permissions} == {("tcp", 988, 988), ("tcp", 1018, 1023)}
        for permission in permissions:
            assert not permission["IpRanges"] and not permission["Ipv6Ranges"]
            assert {pair["GroupId"] for pair in permission["UserIdGroupPairs"]} == {fs_group_id, *node_group_ids}


def test_node_groups_admit_lustre_from_the_file_servers_and_nothing_else_from_them(deployed):
    ec2 = deployed.client("ec2")
    [resource] = of_type(deployed, LUSTRE)
    [fs_group_id] = resource.inputs["securityGroupIds"]
    for name, outputs in deployed.outputs["groups"].items():
        rules = ec2.describe_security_group_rules(
            Filters=[{"Name": "group-id", "Values": [outputs["securityGroupId"]]}])["SecurityGroupRules"]
        from_servers = [rule for rule in rules if rule.get("ReferencedGroupInfo", {}).get("GroupId") == fs_group_id]
        assert {(rule["IsEgress"], rule["IpProtocol"], rule["FromPort"], rule["ToPort"]) for rule in from_servers} == {
            (False, "tcp", 988, 988), (False, "tcp", 1018, 1023)}, name
        [group] = ec2.describe_security_groups(GroupIds=[outputs["securityGroupId"]])["SecurityGroups"]
        for permission in group["IpPermissions"]:
            if any(pair["GroupId"] == fs_group_id for pair in permission["UserIdGroupPairs"]):
                assert [pair["GroupId"] for pair in permission["UserIdGroupPairs"]] == [fs_group_id], name
                assert not permission["IpRanges"] and not permission["Ipv6Ranges"], name


def test_associations_link_each_prefix_and_export_only_write_prefixes(deployed):
    associations = of_type(deployed, ASSOCIATION)
    assert all(not resource.validated and "moto has no FSx data repository associations" in resource.note for resource in associations)
    links = {resource.inputs["fileSystemPath"]: resource.inputs for resource in associations}
    assert set(links) == {"/datasets/", "/runs/"}
    assert links["/datasets/"]["dataRepositoryPath"] == "s3://demo-data/datasets/"
    assert "autoExportPolicy" not in links["/datasets/"]["s3"]
    assert links["/runs/"]["s3"]["autoExportPolicy"]["events"] == ["NEW", "CHANGED", "DELETED"]


def test_every_node_mounts_the_file_system_and_the_s3_prefixes(deployed):
    [system] = deployed.client("fsx").describe_file_systems()["FileSystems"]
    [resource] = of_type(deployed, LUSTRE)
    for config in node_configs(deployed):
        assert config["lustre_source"] == f"{system['DNSName']}@tcp:/{resource.outputs['mountName']}"
        assert config["lustre_mount_path"] == "/fsx"
        assert config["s3_mounts"] == ["ro demo-data datasets/ /s3/datasets", "rw demo-data runs/ /s3/runs"]


def test_the_s3_gateway_endpoint_lets_the_mount_s3_download_through(deployed):
    """In us-east-1, the release bucket's region, the node's download of mount-s3 takes the S3
    gateway endpoint, whose policy must admit the unsigned read; elsewhere it never reaches it."""
    from gpucloud.documents import MOUNTPOINT_RELEASE_BUCKET, mountpoint_release_buckets
    from gpucloud.node.shared_storage import MOUNT_S3_RELEASE

    [endpoint] = [endpoint for endpoint in deployed.client("ec2").describe_vpc_endpoints()["VpcEndpoints"]
                  if endpoint["ServiceName"] == "com.amazonaws.us-east-1.s3"]
    unsigned = [statement for statement in json.loads(endpoint["PolicyDocument"])["Statement"]
                if statement["Principal"] == "*" and "Condition" not in statement]
    package = MOUNT_S3_RELEASE.format(arch="x86_64", kind="deb").removeprefix("https://s3.amazonaws.com/")
    assert package.startswith(f"{MOUNTPOINT_RELEASE_BUCKET}/")
    assert any(statement["Action"] == "s3:GetObject" and f"arn:aws:s3:::{MOUNTPOINT_RELEASE_BUCKET}/*" in statement["Resource"]
               for statement in unsigned), "the node's mount-s3 download is refused by the endpoint"
    assert mountpoint_release_buckets("aws", "us-west-2") == [], "another region's download leaves through NAT"


def test_policies_pass_the_deployed_file_system(deployed):
    [resource] = of_type(deployed, LUSTRE)
    assert registry.check(LUSTRE, resource.inputs) == []


@pytest.mark.parametrize(("lustre", "message"), [
    ({"storageCapacityGiB": 3600}, "use 1200, 2400 or a multiple of 2400"),
    ({"throughputPerTiB": 200}, "not sold for PERSISTENT_2"),
    ({"deploymentType": "SCRATCH_2", "throughputPerTiB": 125}, "SCRATCH_2 has a fixed throughput"),
])
def test_sizes_and_throughputs_fsx_does_not_sell_are_config_errors(lustre, message):
    with pytest.raises(ConfigError) as error:
        settings_for(minimal_config(storage={"lustre": lustre}))
    assert "gpu-cloud:storage.lustre" in str(error.value) and message in str(error.value)


def test_overlapping_prefixes_and_unreachable_downloads_are_refused():
    nested = {"bucket": "demo-data", "readPrefixes": ["datasets/", "datasets/imagenet/"]}
    with pytest.raises(ConfigError, match=r"gpu-cloud:data: 'datasets/imagenet/' lies under 'datasets/'"):
        settings_for(minimal_config(data=nested, storage={"lustre": {}}))
    closed = {"egress": "endpointsOnly", "interfaceEndpoints": ["ssm", "ssmmessages", "ec2messages", "autoscaling", "logs", "monitoring", "sts", "kms", "ec2"]}
    with pytest.raises(ConfigError, match=r"gpu-cloud:storage.s3Mount.install: download fetches mount-s3"):
        settings_for(minimal_config(network=closed, storage={"s3Mount": {"install": "download"}}))


def _subnet_and_group(account, admits_lustre: bool):
    ec2 = account.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.1.0/24")["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName="fs", Description="fs", VpcId=vpc)["GroupId"]
    if admits_lustre:
        ec2.authorize_security_group_ingress(GroupId=group, IpPermissions=[
            {"IpProtocol": "tcp", "FromPort": 988, "ToPort": 988, "UserIdGroupPairs": [{"GroupId": group}]}])
    return subnet, group


@pytest.mark.parametrize(("change", "reason"), [
    ({"storageCapacity": 3600}, "StorageCapacity 3600 GiB is not offered"),
    ({"perUnitStorageThroughput": 200}, "PerUnitStorageThroughput 200 is not offered"),
    ({"deploymentType": "SCRATCH_2", "perUnitStorageThroughput": None, "kmsKeyId": "arn:aws:kms:us-east-1:123456789012:key/x"},
     "KmsKeyId is not supported on SCRATCH_2"),
    ({"admits": False}, "do not permit Lustre LNET network traffic on port 988"),
])
def test_engine_refuses_what_fsx_refuses_and_moto_accepts(change, reason):
    with moto_account() as account:
        subnet, group = _subnet_and_group(account, change.pop("admits", True))
        inputs = {"deploymentType": "PERSISTENT_2", "storageCapacity": 1200, "perUnitStorageThroughput": 125,
                  "subnetIds": subnet, "securityGroupIds": [group], **change}
        with pytest.raises(ClientError) as error:
            create_lustre_file_system(account, ResourceRequest(LUSTRE, "fs", {k: v for k, v in inputs.items() if v is not None}))
        assert reason in error.value.response["Error"]["Message"]


def test_engine_refuses_overlapping_associations():
    with moto_account() as account:
        subnet, group = _subnet_and_group(account, True)
        created = create_lustre_file_system(account, ResourceRequest(LUSTRE, "fs", {
            "deploymentType": "SCRATCH_2", "storageCapacity": 1200, "subnetIds": subnet, "securityGroupIds": [group]}))
        link = {"fileSystemId": created.id, "fileSystemPath": "/datasets/", "dataRepositoryPath": "s3://b/datasets/"}
        record_data_repository_association(account, ResourceRequest(ASSOCIATION, "a", link))
        with pytest.raises(ClientError, match="overlaps /datasets/"):
            record_data_repository_association(account, ResourceRequest(ASSOCIATION, "b", {
                **link, "fileSystemPath": "/datasets/imagenet/", "dataRepositoryPath": "s3://b/other/"}))


def _ok(argv, timeout_s, env=None):
    return CommandResult(tuple(argv), 0)


def test_gate_fails_a_node_without_the_lustre_client_with_the_reason():
    config = NodeConfig(lustre_source="fs-1.fsx.us-east-1.amazonaws.com@tcp:/abcdefgh")
    [problem] = shared_storage_problems(config, which=lambda name: None, mounts={})
    assert "Lustre client is not installed" in problem and "/fsx" in problem
    assert shared_storage_problems(config, which=lambda name: "/sbin/" + name, mounts={}) == [
        "/fsx is not mounted: the FSx for Lustre file system fs-1.fsx.us-east-1.amazonaws.com@tcp:/abcdefgh did not "
        "mount at boot (see the gpucloud-storage unit's log)"]
    mounted = {"/fsx": ("172.31.0.5@tcp:/abcdefgh", "lustre"), "/s3/datasets": ("mountpoint-s3", "fuse")}
    with_s3 = config.replace(s3_mounts=("ro demo-data datasets/ /s3/datasets",))
    assert shared_storage_problems(with_s3, which=lambda name: "/usr/bin/" + name, mounts=mounted) == []
    [missing] = shared_storage_problems(with_s3, which=lambda name: None if name == "mount-s3" else "/sbin/x", mounts=mounted)
    assert "mount-s3 (Mountpoint for Amazon S3) is not installed" in missing


def test_mount_shared_mounts_lustre_and_s3_read_only(tmp_path):
    calls = []
    config = NodeConfig(region="us-east-1", lustre_source="fs-1.fsx.us-east-1.amazonaws.com@tcp:/abcdefgh",
                        lustre_mount_path=str(tmp_path / "fsx"),
                        s3_mounts=(f"ro demo-data datasets/ {tmp_path}/s3/datasets",))
    failures = mount_shared(config, run=lambda argv, timeout_s: calls.append(list(argv)) or _ok(argv, timeout_s),
                            which=lambda name: "/usr/bin/" + name, mounts={})
    assert failures == []
    assert calls == [
        ["mount", "-t", "lustre", "-o", "relatime,flock", config.lustre_source, str(tmp_path / "fsx")],
        ["mount-s3", "--prefix", "datasets/", "--allow-other", "--read-only", "--region", "us-east-1", "demo-data",
         f"{tmp_path}/s3/datasets"],
    ]


def test_estimate_prices_the_file_system_all_month_or_says_why_not():
    catalog = load_catalog()
    persistent = settings_for(minimal_config(storage={"lustre": {"storageCapacityGiB": 2400}})).config
    [line] = [line for line in estimate_stack(persistent, "us-east-1", catalog).lines if "FSx for Lustre" in line.resource]
    rate = catalog.lustre("us-east-1", "PERSISTENT_2", 125).usd_per_gb_month
    assert line.monthly.min == line.monthly.max == 2400 * rate
    # A region outside the catalog (ca-west-1) says why it cannot price the file system.
    elsewhere = estimate_stack(persistent, "ca-west-1", catalog)
    assert any("FSx for Lustre" in item.resource and "no FSx for Lustre PERSISTENT_2 at 125 MB/s/TiB price for ca-west-1"
               in item.reason for item in elsewhere.unpriced)


def test_policies_ask_a_key_of_persistent_file_systems_and_their_retention():
    found = registry.check(LUSTRE, {"deploymentType": "PERSISTENT_2", "storageCapacity": 1200})
    [violation] = [item for item in found if item.policy_name == "file-system-encrypted-with-cmk"]
    assert "aws/fsx" in violation.message
    assert any(item.policy_name == "required-tags" for item in found)
    assert registry.check(LUSTRE, {"deploymentType": "SCRATCH_2", "storageCapacity": 1200, "tags": {
        "Project": "p", "Owner": "o", "CostCenter": "c"}}) == []
    planned = [PlannedResource(urn="urn:fs", type=LUSTRE, name="fs", props={"deploymentType": "PERSISTENT_2"})]
    retained = [item for item in registry.evaluate(planned) if "deleted with the stack" in item.message]
    assert retained and retained[0].urn == "urn:fs"


def test_storage_guide_tier_costs_for_10_tb_are_what_the_estimate_code_computes():
    from gpucloud.pricing.estimate import gp3_volume_month
    from gpucloud.pricing.file_systems import lustre_month
    from support import ROOT

    catalog = load_catalog()
    readme = (ROOT / "docs" / "guides" / "storage.md").read_text()
    assert f"${lustre_month(catalog, 'us-east-1', 'PERSISTENT_2', 125, 9600):,.2f} (9600 GiB" in readme
    assert f"${lustre_month(catalog, 'us-east-1', 'SCRATCH_2', None, 9600):,.2f} (9600 GiB)" in readme
    assert f"${gp3_volume_month(catalog.gp3('us-east-1'), 9314):,.2f} per node" in readme


def test_outputs_name_the_file_system_and_the_bucket_policy_its_s3_role_needs(deployed):
    [resource] = of_type(deployed, LUSTRE)
    [system] = deployed.client("fsx").describe_file_systems(FileSystemIds=[resource.id])["FileSystems"]
    assert deployed.outputs["fileSystemId"] == system["FileSystemId"]
    [subnet] = deployed.client("ec2").describe_subnets(SubnetIds=system["SubnetIds"])["Subnets"]
    assert subnet["AvailabilityZone"] == "us-east-1b"  # storage.lustre.zone, not the group's first zone
    assert deployed.outputs["fileSystemDnsName"] == system["DNSName"]
    assert deployed.outputs["fileSystemMountName"] == resource.outputs["mountName"]  # moto describes no MountName
    document = deployed.outputs["dataBucketPolicyForFileSystem"]
    role = ("arn:aws:iam::123456789012:role/aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/"
            f"AWSServiceRoleForFSxS3Access_{system['FileSystemId']}")
    assert {statement["Principal"]["AWS"] for statement in document["Statement"]} == {role}
    [outside] = [s for s in document["Statement"] if s["Sid"] == "FileSystemReachesNoOtherObjects"]
    assert outside["NotResource"] == ["arn:aws:s3:::demo-data", "arn:aws:s3:::demo-data/datasets/*", "arn:aws:s3:::demo-data/runs/*"]
    assert any(warning.startswith("gpu-cloud:data.bucket: not checked: the policy of demo-data") for warning in deployed.warnings)
