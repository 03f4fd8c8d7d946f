"""SharedFileSystem: the project's FSx for Lustre file system, linked to its S3 prefixes.

Facts it is built on (read 2026-11-25):
- The file system's security group must admit Lustre traffic, TCP 988 and 1018-1023, from itself
  (its file servers talk to each other) and from the clients; FSx refuses to create a file system
  whose groups do not permit port 988 (FSx for Lustre user guide, "File system access control with
  Amazon VPC" and "Creating an FSx for Lustre file system fails",
  https://docs.aws.amazon.com/fsx/latest/LustreGuide/cannot-create-fs.html).
- One subnet, so one zone: terraform-provider-aws internal/service/fsx/lustre_file_system.go,
  `subnet_ids` MaxItems 1 (the aws-sdk-go-v2 version, bridged by pulumi-aws 7.51.1 as pyproject pins it).
- `kms_key_id` applies to persistent deployment types only (same file, its create function); FSx
  encrypts scratch file systems with a key of its own.
- Data repository associations: internal/service/fsx/data_repository_association.go
  (`data_repository_path` begins with s3://, `file_system_path` with /; events NEW, CHANGED,
  DELETED, at most 3).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pulumi
import pulumi_aws as aws

from gpucloud.config.storage import lustre_path
from gpucloud.documents.file_system_bucket import file_system_bucket_policy
from gpucloud.lookups.storage import file_system_zone
from gpucloud.naming import association_name

if TYPE_CHECKING:
    from gpucloud.lookups import ResolvedStack

LUSTRE_PORTS = ((988, 988), (1018, 1023))
"""TCP ports Lustre (LNet) uses between clients and file servers, and between file servers."""
ALL_EVENTS = ["NEW", "CHANGED", "DELETED"]


def association_specs(bucket: str, read_prefixes: Sequence[str], write_prefixes: Sequence[str]) -> list[dict]:
    """One data repository association per prefix: read prefixes imported (lazy load, new, changed and
    deleted objects followed), write prefixes imported and exported, so what a job writes under
    /fsx/<write prefix> lands in S3 under that prefix."""
    specs = []
    for prefix in read_prefixes:
        specs.append({"prefix": prefix, "path": lustre_path(prefix), "repository": f"s3://{bucket}/{prefix}", "export": False})
    for prefix in write_prefixes:
        specs.append({"prefix": prefix, "path": lustre_path(prefix), "repository": f"s3://{bucket}/{prefix}", "export": True})
    return specs


@dataclass(frozen=True)
class SharedFileSystemArgs:
    vpc_id: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    """The one subnet (and so zone) the file servers live in."""
    deployment_type: str
    storage_capacity_gib: int
    bucket: str
    account_id: str
    partition: str
    """Of the account the file system (and so its S3 role) lives in."""
    throughput_per_tib: int | None = None
    kms_key_arn: pulumi.Input[str] | None = None
    """The project key; persistent deployment types only."""
    read_prefixes: Sequence[str] = ()
    write_prefixes: Sequence[str] = ()
    retain_on_delete: bool = True
    description: str = "gpu-cloud shared file system"
    tags: Mapping[str, str] = field(default_factory=dict)


class SharedFileSystem(pulumi.ComponentResource):
    """An FSx for Lustre file system in its own security group, linked to the project's prefixes.

    Nodes reach it only through `admit_clients`: one pair of rules per node security group, so
    nothing else in the VPC can mount it.
    """

    file_system_id: pulumi.Output[str]
    """fs-... id."""
    dns_name: pulumi.Output[str]
    """What clients mount: <dns_name>@tcp:/<mount_name>."""
    mount_name: pulumi.Output[str]
    """The Lustre mount name FSx assigned."""
    security_group_id: pulumi.Output[str]
    """The file system's own security group."""
    data_bucket_policy: pulumi.Output[dict]
    """The statements the data bucket's policy needs so the file system reaches its prefixes only
    (the bucket is the user's: the stack does not set its policy)."""

    def __init__(self, name: str, args: SharedFileSystemArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-cloud:index:SharedFileSystem", name, None, opts)
        self._name = name
        self._tags = dict(args.tags)
        self.security_group = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=args.vpc_id,
            description=f"{args.description}: Lustre from the project's nodes only",
            tags={**args.tags, "Name": f"{name}-sg"},
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.security_group_id = self.security_group.id
        self._rules(f"{name}-servers", self.security_group_id, "the file servers of this file system")
        persistent = args.deployment_type.startswith("PERSISTENT")
        retain = pulumi.ResourceOptions(parent=self, retain_on_delete=args.retain_on_delete, protect=args.retain_on_delete)
        self.file_system = aws.fsx.LustreFileSystem(
            f"{name}-lustre",
            deployment_type=args.deployment_type,
            storage_capacity=args.storage_capacity_gib,
            storage_type="SSD",
            per_unit_storage_throughput=args.throughput_per_tib,
            subnet_ids=args.subnet_id,
            security_group_ids=[self.security_group_id],
            kms_key_id=args.kms_key_arn if persistent else None,
            file_system_type_version="2.15",
            data_compression_type="LZ4",
            tags={**args.tags, "Name": name},
            opts=pulumi.ResourceOptions.merge(retain, pulumi.ResourceOptions(depends_on=self._server_rules)),
        )
        self.associations = [
            aws.fsx.DataRepositoryAssociation(
                association_name(name, spec["path"]),
                file_system_id=self.file_system.id,
                file_system_path=spec["path"],
                data_repository_path=spec["repository"],
                batch_import_meta_data_on_create=True,
                s3={
                    "auto_import_policy": {"events": ALL_EVENTS},
                    **({"auto_export_policy": {"events": ALL_EVENTS}} if spec["export"] else {}),
                },
                tags={**args.tags, "Name": association_name(name, spec["path"])},
                # Not under the (protected) file system: children inherit `protect`, and a prefix
                # dropped from the config must be able to take its association with it. The alias
                # is the name by list position that earlier versions gave, so a deployed
                # association keeps its resource.
                opts=pulumi.ResourceOptions(parent=self, aliases=[pulumi.Alias(name=f"{name}-link-{index}")]),
            )
            for index, spec in enumerate(association_specs(args.bucket, args.read_prefixes, args.write_prefixes))
        ]
        self.file_system_id = self.file_system.id
        self.dns_name = self.file_system.dns_name
        self.mount_name = self.file_system.mount_name
        self.data_bucket_policy = self.file_system.id.apply(lambda file_system_id: file_system_bucket_policy(
            args.partition, args.account_id, file_system_id, args.bucket, args.read_prefixes, args.write_prefixes))
        self.register_outputs({
            "fileSystemId": self.file_system_id,
            "dnsName": self.dns_name,
            "mountName": self.mount_name,
            "securityGroupId": self.security_group_id,
            "dataBucketPolicy": self.data_bucket_policy,
        })

    def _rules(self, label: str, peer: pulumi.Input[str], who: str) -> None:
        """Ingress from `peer` and egress to it on Lustre's ports."""
        child = pulumi.ResourceOptions(parent=self.security_group)
        rules = []
        for low, high in LUSTRE_PORTS:
            for direction, kind in (("in", aws.vpc.SecurityGroupIngressRule), ("out", aws.vpc.SecurityGroupEgressRule)):
                rule_name = f"{label}-{direction}-{low}"
                rules.append(kind(
                    rule_name,
                    security_group_id=self.security_group_id,
                    description=f"Lustre TCP {low}-{high} {'from' if direction == 'in' else 'to'} {who}",
                    ip_protocol="tcp",
                    from_port=low,
                    to_port=high,
                    referenced_security_group_id=peer,
                    tags={**self._tags, "Name": rule_name},
                    opts=child,
                ))
        if peer is self.security_group_id:
            self._server_rules = rules

    def admit_clients(self, label: str, security_group_id: pulumi.Input[str]) -> None:
        """Let one node security group mount the file system (called once per GPU group, whose
        security group exists only once the group is declared)."""
        self._rules(f"{self._name}-{label}", security_group_id, f"the nodes of {label}")

    @property
    def mount(self) -> pulumi.Output[dict]:
        """What the nodes' user data needs: the mount source's parts."""
        return pulumi.Output.all(self.dns_name, self.mount_name).apply(
            lambda values: {"dns_name": values[0], "mount_name": values[1]}
        )


def project_file_system(
    name: str,
    stack: ResolvedStack,
    vpc_id: pulumi.Input[str],
    private_subnet_ids: Mapping[str, pulumi.Input[str]] | None,
    kms_key_arn: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
) -> SharedFileSystem | None:
    """The stack's `storage.lustre`, in `storage.lustre.zone` or else the first zone of its first
    group (nodes of other zones mount it across zones, which AWS bills as in-region data
    transfer), or None."""
    config = stack.settings.config
    lustre = config.storage.lustre
    if lustre is None or config.data is None:
        return None
    zone = file_system_zone(lustre.zone, stack.groups)
    if private_subnet_ids is not None:
        subnet_id = private_subnet_ids[zone]
    else:
        subnet_id = next(subnet.id for group in stack.groups for subnet in group.subnets if subnet.availability_zone == zone)
    return SharedFileSystem(
        f"{name}-shared-fs",
        SharedFileSystemArgs(
            vpc_id=vpc_id,
            subnet_id=subnet_id,
            deployment_type=lustre.deployment_type,
            storage_capacity_gib=lustre.storage_capacity_gib,
            throughput_per_tib=lustre.throughput,
            kms_key_arn=kms_key_arn,
            bucket=config.data.bucket,
            account_id=stack.account_id,
            partition=stack.partition,
            read_prefixes=config.data.read_prefixes,
            write_prefixes=config.data.write_prefixes,
            retain_on_delete=lustre.retained,
            description=f"gpu-cloud {config.project}",
            tags=stack.settings.tags,
        ),
        opts=opts,
    )
