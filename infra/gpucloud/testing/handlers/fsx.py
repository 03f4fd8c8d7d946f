"""FSx for Lustre file systems (moto has them) and data repository associations (moto lacks them:
checked against FSx's model and the account, recorded by the engine, not validated).

What FSx refuses that moto accepts, each checked here (read 2026-11-25):
- capacity and throughput per deployment type: botocore fsx model, CreateFileSystem.StorageCapacity
  and CreateFileSystemLustreConfiguration.PerUnitStorageThroughput documentation;
- a KMS key on a scratch file system: same model, CreateFileSystem.KmsKeyId ("applies to PERSISTENT
  deployment types"), and terraform-provider-aws internal/service/fsx/lustre_file_system.go, which
  sends kms_key_id for persistent types only;
- security groups that do not admit Lustre's port 988 from themselves: FSx for Lustre user guide,
  "Creating an FSx for Lustre file system fails" (cannot-create-fs.html);
- data repository associations: at most 8 per file system, paths that do not overlap, none on a
  Lustre 2.10 file system (FSx for Lustre user guide, "Linking your file system to an Amazon S3
  bucket"; pulumi-aws 7.51.1 fsx.DataRepositoryAssociation file_system_path).

And what the provider's CustomizeDiff refuses before any AWS call, which the schema rules in
data/provider_rules.json cannot say (they hang on another property's value): read 2026-11-27 from
internal/service/fsx/lustre_file_system.go at the commit that entry names.
"""

from __future__ import annotations

import hashlib
from typing import Any

from gpucloud.limits import LUSTRE_MAX_ASSOCIATIONS as MAX_ASSOCIATIONS
from gpucloud.limits import LUSTRE_PERSISTENT_2_THROUGHPUTS as PERSISTENT_2_THROUGHPUTS
from gpucloud.limits import lustre_capacity_allowed
from gpucloud.testing.handlers.kms import require_key
from gpucloud.testing.provider_rules import ProviderRulesBroken, RuleViolation, source_of
from gpucloud.testing.registry import Account, BrokenReferenceError, Created, ResourceRequest, aws_tags, drop_none, refused, resource
from gpucloud.testing.service_model import check_unsent

NOT_VALIDATED = (
    "moto has no FSx data repository associations: checked against FSx's model, the file system and the "
    "other associations in the account, recorded by the engine only"
)


def _subnet_ids(value: Any) -> list[str]:
    """pulumi-aws v7 sends `subnetIds` as one string (the provider's list of at most one)."""
    if isinstance(value, str):
        return [value]
    return list(value or [])


def _admits_lustre_from_itself(group: dict[str, Any]) -> bool:
    for permission in group.get("IpPermissions", []):
        protocol = permission.get("IpProtocol")
        ports_ok = protocol == "-1" or (
            protocol == "tcp" and permission.get("FromPort", 0) <= 988 <= permission.get("ToPort", -1)
        )
        peers = {pair.get("GroupId") for pair in permission.get("UserIdGroupPairs", [])}
        if ports_ok and group["GroupId"] in peers:
            return True
    return False


LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
INTELLIGENT_TIERING_THROUGHPUT_STEP = 4000
"""MB/s of throughput_capacity per step of the read cache bounds below (the provider's `factor`)."""
READ_CACHE_GIB_PER_STEP = (32, 131072)
"""The user-provisioned read cache size, in GiB, the provider allows per step of throughput_capacity."""


def _customize_diff(request: ResourceRequest) -> None:
    """The provider's CustomizeDiff refusals (resourceLustreFileSystemMetadataConfigCustomizeDiff and
    resourceLustreFileSystemDataReadCacheConfigurationCustomizeDiff): `pulumi preview` fails on them."""
    inputs = request.inputs
    source = source_of(LUSTRE)
    found: list[RuleViolation] = []
    deployment = inputs.get("deploymentType") or "SCRATCH_1"
    if inputs.get("metadataConfiguration") is not None and deployment != "PERSISTENT_2":
        found.append(RuleViolation(LUSTRE, request.name, "metadataConfiguration", None, (
            f"CustomizeDiff: metadata_configuration can only be set when deployment type is PERSISTENT_2 "
            f"(deploymentType is {deployment})"), source))
    if inputs.get("storageType") == "INTELLIGENT_TIERING":
        throughput = inputs.get("throughputCapacity") or 0
        if not throughput:
            found.append(RuleViolation(LUSTRE, request.name, "throughputCapacity", None, (
                "CustomizeDiff: ThroughputCapacity is a required parameter for Lustre file systems with StorageType "
                "INTELLIGENT_TIERING"), source))
        else:
            cache = inputs.get("dataReadCacheConfiguration") or {}
            size = cache.get("size") or 0
            if cache.get("sizingMode") == "USER_PROVISIONED" and size > 0:
                steps = int(throughput) // INTELLIGENT_TIERING_THROUGHPUT_STEP
                low, high = (steps * gib for gib in READ_CACHE_GIB_PER_STEP)
                if not low <= size <= high:
                    found.append(RuleViolation(LUSTRE, request.name, "dataReadCacheConfiguration.size", size, (
                        f"CustomizeDiff: file systems with throughput capacity of {throughput} MB/s support a read cache "
                        f"of {low} to {high} GiB"), source))
    if found:
        raise ProviderRulesBroken(found)


def _check_lustre(account: Account, request: ResourceRequest) -> None:
    _customize_diff(request)
    inputs = request.inputs
    operation = "CreateFileSystem"
    deployment = inputs.get("deploymentType", "SCRATCH_1")
    capacity = inputs.get("storageCapacity")
    throughput = inputs.get("perUnitStorageThroughput")
    if deployment in ("SCRATCH_2", "PERSISTENT_2") and (capacity is None or not lustre_capacity_allowed(int(capacity))):
        raise refused(operation, "BadRequest", (
            f"{request.name}: StorageCapacity {capacity} GiB is not offered for {deployment} (1200, 2400, then "
            "increments of 2400 GiB)"))
    if deployment == "PERSISTENT_2" and throughput not in PERSISTENT_2_THROUGHPUTS:
        raise refused(operation, "BadRequest", (
            f"{request.name}: PerUnitStorageThroughput {throughput} is not offered for PERSISTENT_2 (125, 250, 500, 1000)"))
    if deployment.startswith("SCRATCH") and throughput is not None:
        raise refused(operation, "BadRequest", f"{request.name}: PerUnitStorageThroughput is not supported on {deployment}")
    if deployment.startswith("SCRATCH") and inputs.get("kmsKeyId"):
        raise refused(operation, "BadRequest", f"{request.name}: KmsKeyId is not supported on {deployment} file systems")
    require_key(account, inputs.get("kmsKeyId"), request.name)
    ec2 = account.client("ec2")
    subnets = _subnet_ids(inputs.get("subnetIds"))
    ec2.describe_subnets(SubnetIds=subnets)
    groups = list(inputs.get("securityGroupIds") or [])
    described = ec2.describe_security_groups(GroupIds=groups)["SecurityGroups"] if groups else []
    if not any(_admits_lustre_from_itself(group) for group in described):
        raise refused(operation, "BadRequest", (
            f"{request.name}: the file system cannot be created because the provided security groups do not permit "
            "Lustre LNET network traffic on port 988 (between the file system's own servers)"))


def _mount_name(file_system_id: str) -> str:
    """FSx assigns an 8-character lowercase mount name to SCRATCH_2 and PERSISTENT types; moto gives none."""
    return hashlib.sha256(file_system_id.encode()).hexdigest()[:8]


@resource("aws:fsx/lustreFileSystem:LustreFileSystem")
def create_lustre_file_system(account: Account, request: ResourceRequest) -> Created:
    _check_lustre(account, request)
    inputs = request.inputs
    lustre = drop_none({
        "DeploymentType": inputs.get("deploymentType"),
        "PerUnitStorageThroughput": inputs.get("perUnitStorageThroughput"),
        "DataCompressionType": inputs.get("dataCompressionType"),
        "WeeklyMaintenanceStartTime": inputs.get("weeklyMaintenanceStartTime"),
        "AutomaticBackupRetentionDays": inputs.get("automaticBackupRetentionDays"),
        "CopyTagsToBackups": inputs.get("copyTagsToBackups"),
    })
    created = account.client("fsx").create_file_system(**drop_none({
        "FileSystemType": "LUSTRE",
        "StorageCapacity": inputs.get("storageCapacity"),
        "StorageType": inputs.get("storageType"),
        "SubnetIds": _subnet_ids(inputs.get("subnetIds")),
        "SecurityGroupIds": list(inputs.get("securityGroupIds") or []),
        "KmsKeyId": inputs.get("kmsKeyId"),
        "FileSystemTypeVersion": inputs.get("fileSystemTypeVersion"),
        "LustreConfiguration": lustre,
        "Tags": aws_tags(inputs.get("tags")),
    }))["FileSystem"]
    file_system_id = created["FileSystemId"]
    subnet = account.client("ec2").describe_subnets(SubnetIds=created["SubnetIds"])["Subnets"][0]
    return Created(
        id=file_system_id,
        outputs={
            "arn": created["ResourceARN"],
            "dnsName": created["DNSName"],
            "mountName": _mount_name(file_system_id),
            "ownerId": account.account_id,
            "vpcId": subnet["VpcId"],
            "networkInterfaceIds": [],
        },
    )


@resource("aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation")
def record_data_repository_association(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    operation = "CreateDataRepositoryAssociation"
    file_system_id = inputs["fileSystemId"]
    fsx = account.client("fsx")
    systems = fsx.describe_file_systems(FileSystemIds=[file_system_id])["FileSystems"]
    if not systems:
        raise BrokenReferenceError(f"{request.name}: FSx file system {file_system_id} does not exist")
    if systems[0].get("FileSystemType") != "LUSTRE" or (systems[0].get("LustreConfiguration") or {}).get("DeploymentType") == "SCRATCH_1":
        raise refused(operation, "BadRequest", f"{request.name}: data repository associations need a SCRATCH_2 or PERSISTENT Lustre file system")
    s3 = inputs.get("s3") or {}
    params = drop_none({
        "FileSystemId": file_system_id,
        "FileSystemPath": inputs.get("fileSystemPath"),
        "DataRepositoryPath": inputs.get("dataRepositoryPath"),
        "BatchImportMetaDataOnCreate": inputs.get("batchImportMetaDataOnCreate"),
        "ImportedFileChunkSize": inputs.get("importedFileChunkSize"),
        "S3": drop_none({
            "AutoImportPolicy": drop_none({"Events": (s3.get("autoImportPolicy") or {}).get("events")}),
            "AutoExportPolicy": drop_none({"Events": (s3.get("autoExportPolicy") or {}).get("events")}),
        }),
        "Tags": aws_tags(inputs.get("tags")),
    })
    check_unsent(fsx, operation, params)
    existing = account.data_repository_associations.setdefault(file_system_id, [])
    if len(existing) >= MAX_ASSOCIATIONS:
        raise refused(operation, "ServiceLimitExceeded", f"{request.name}: {file_system_id} already has {MAX_ASSOCIATIONS} data repository associations")
    path = params.get("FileSystemPath", "/").rstrip("/") + "/"
    repository = params["DataRepositoryPath"].rstrip("/") + "/"
    for other in existing:
        if path.startswith(other["path"]) or other["path"].startswith(path):
            raise refused(operation, "BadRequest", f"{request.name}: file system path {path} overlaps {other['path']} of {other['id']}")
        if repository.startswith(other["repository"]) or other["repository"].startswith(repository):
            raise refused(operation, "BadRequest", f"{request.name}: {repository} overlaps {other['repository']} of {other['id']}")
    association_id = "dra-" + hashlib.sha256(f"{file_system_id}{path}".encode()).hexdigest()[:17]
    existing.append({"id": association_id, "path": path, "repository": repository})
    return Created(
        id=association_id,
        outputs={"associationId": association_id, "arn": account.arn("fsx", f"association/{file_system_id}/{association_id}")},
        validated=False,
        note=NOT_VALIDATED,
    )
