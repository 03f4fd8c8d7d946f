"""The AWS facts a stack config needs, as plain values, and the protocol that answers them.

The real answer comes from pulumi-aws data sources (`pulumi_aws.PulumiAwsLookups`), so `pulumi
preview` checks the real account; any stand-in with the same methods works too.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Protocol

DEEP_LEARNING_AMI_PARAMETER = (
    "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"
)


@dataclass(frozen=True)
class InstanceTypeFacts:
    """What EC2 says about one instance type (from DescribeInstanceTypes)."""

    name: str
    gpu_count: int
    gpu_model: str
    gpu_memory_mib: int
    efa_supported: bool
    efa_max_interfaces: int
    network_cards: int
    instance_store_disks: int
    architectures: tuple[str, ...]
    vcpus: int = 0
    fractional_gpu: bool = False
    """The type sells a slice of one GPU: DescribeInstanceTypes reports a GPU name and memory with a
    GPU count of 0 (g6f and gr6f: part of an NVIDIA L4; `gpu_memory_mib` is the slice's memory).
    The instance sees the slice as one GPU of that model ("Appears as a full GPU", Cast AI docs,
    "Fractional GPUs (AWS)", https://docs.cast.ai/docs/gpu-sharing-fractional, read 2026-11-25)."""
    gpu_info_listed: bool = False
    """Whether DescribeInstanceTypes lists any GPU under GpuInfo at all, so that a refusal can say
    what it reported."""

    @property
    def has_gpu(self) -> bool:
        """A GPU type: whole GPUs, or a slice of one."""
        return self.gpu_count > 0 or self.fractional_gpu

    @property
    def node_gpu_count(self) -> int:
        """How many GPUs the node's driver lists: one per GPU, and one for a slice of a GPU."""
        return 1 if self.fractional_gpu else self.gpu_count

    @property
    def gpu_report(self) -> str:
        """What DescribeInstanceTypes says of the type's GPUs, in words."""
        if self.fractional_gpu:
            return f"a fraction of one {self.gpu_model} ({self.gpu_memory_mib} MiB of GPU memory, GPU count 0)"
        if self.gpu_count:
            return f"{self.gpu_count} x {self.gpu_model}"
        if self.gpu_info_listed:
            return "GpuInfo with a GPU count of 0 and no GPU name"
        return "no GpuInfo"

    @property
    def efa_interfaces(self) -> int:
        """How many EFA interfaces a multi-node launch template gives this type: one per card."""
        return min(self.efa_max_interfaces, self.network_cards)


@dataclass(frozen=True)
class Subnet:
    id: str
    availability_zone: str
    vpc_id: str


@dataclass(frozen=True)
class Route:
    """One route of a route table: where it goes, and the target's kind and id."""

    destination: str
    target_kind: str
    """internet-gateway, nat-gateway, nat-instance, transit-gateway, firewall-endpoint (a Gateway
    Load Balancer endpoint), gateway-endpoint (S3 or DynamoDB), peering, local, or other."""
    target: str


EGRESS_TARGETS = ("nat-gateway", "nat-instance", "transit-gateway", "firewall-endpoint")
"""Default-route targets that give a private node a way out: NAT gateway, NAT instance, transit
gateway (a central egress VPC) or a firewall endpoint in front of one."""


@dataclass(frozen=True)
class Ami:
    id: str
    root_device_name: str
    architecture: str
    deprecation_time: str = ""
    """When EC2 deprecated (or will deprecate) the image, ISO 8601; empty when it never does."""


@dataclass(frozen=True)
class PrometheusWorkspace:
    """An existing Amazon Managed Service for Prometheus workspace."""

    id: str
    arn: str
    status: str
    """ACTIVE when it takes samples, rules and an alert manager definition."""
    kms_key_arn: str = ""


@dataclass(frozen=True)
class PrometheusWorkspaceContents:
    """What an existing workspace already holds of what a stack adds to it: AMP keeps one alert
    manager definition per workspace and one rule groups namespace per name."""

    alert_manager_topics: tuple[str, ...] | None
    """None: the workspace has no alert manager definition; else the SNS topics its receivers
    send to (a stack knows its own definition by its alerts topic)."""
    rule_groups_namespaces: dict[str, str] = field(default_factory=dict)
    """Namespace name -> the `gpu-cloud:stack` tag it carries ("" for one no gpu-cloud stack made)."""


@dataclass(frozen=True)
class Bucket:
    """An S3 bucket the stack names but does not create (`data.bucket`)."""

    name: str
    exists: bool | None
    """None: not known (offline, no account facts say)."""
    region: str = ""
    owned_by_account: bool | None = None
    """Whether the deploying account owns it; None where nothing read it (no pulumi-aws data
    source says; `gpucloud account snapshot` asks HeadBucket with ExpectedBucketOwner)."""
    encryption: str = ""
    """Its default encryption (SSEAlgorithm of GetBucketEncryption), where the facts say."""


@dataclass(frozen=True)
class Certificate:
    """An ACM certificate the stack names by ARN (`groups[].endpoint.certificateArn`)."""

    arn: str
    exists: bool | None
    """None: not known (offline without account facts, or DescribeCertificate could not be asked)."""
    status: str = ""
    """ISSUED, PENDING_VALIDATION, EXPIRED, REVOKED, ... (DescribeCertificate `Status`)."""
    not_after: datetime.datetime | None = None
    """When it expires (DescribeCertificate `NotAfter`)."""
    domain: str = ""
    region: str = ""
    why_not_known: str = ""
    """Why it is not known, where a lookup failed for another reason than the certificate missing."""


@dataclass(frozen=True)
class StoredParameter:
    """An SSM parameter `secretEnv` names, as GetParameter without decryption describes it."""

    name: str
    exists: bool | None
    """None: not known (offline without account facts)."""
    type: str = ""
    """String, StringList or SecureString."""


QUOTA_NOT_KNOWN = "quota value not known"
"""How the offline engine words a quota it has no account fact for."""
ROLE_NOT_KNOWN = "role not known"
"""How the offline engine words a service-linked role no account fact says exists or not."""
ECR_REPOSITORY_NOT_KNOWN = "repository not known"
"""How the offline engine words an ECR repository, not in its account, that no account fact lists."""
SECURITY_GROUP_NOT_KNOWN = "security group not known"
"""How the offline engine words a security group, not in its account, that no account fact lists."""
BUCKET_NOT_KNOWN = "bucket not known"
"""How the offline engine words a bucket, not in its account, that no account fact says exists or not."""
PARAMETER_NOT_KNOWN = "parameter not known"
"""How the offline engine words an SSM parameter, not in its account, that no account fact lists."""
SECRET_NOT_KNOWN = "secret not known"
"""How the offline engine words a Secrets Manager secret, not in its account, that no account fact lists."""



class LookupUnavailable(Exception):
    """An AWS lookup failed for a reason other than the thing not existing (credentials,
    throttling, an outage): no rule can be checked, and saying "does not exist" would mislead."""


class AwsLookups(Protocol):
    """AWS facts; each lookup answers None when the thing does not exist and raises
    `LookupUnavailable` when AWS could not be asked."""


    def account_id(self) -> str: ...
    def partition(self) -> str: ...
    def instance_type(self, name: str) -> InstanceTypeFacts | None: ...
    def subnet(self, subnet_id: str) -> Subnet | None: ...
    def parameter(self, name: str) -> str | None: ...
    def ami(self, ami_id: str) -> Ami | None: ...
    def role_exists(self, name: str) -> bool | None: ...  # None: not known (offline, no facts say)
    def availability_zones(self) -> list[str]: ...
    def subnet_routes(self, subnet: Subnet) -> tuple[Route, ...]: ...
    def has_vpc_endpoint(self, vpc_id: str, service: str) -> bool: ...
    def ec2_quota(self, code: str) -> float | None: ...
    def instance_type_zones(self, name: str) -> set[str]: ...
    def offered_gpu_types(self) -> tuple[str, ...]: ...
    def prometheus_workspace(self, workspace_id: str) -> PrometheusWorkspace | None: ...
    def bucket(self, name: str) -> Bucket: ...
    def security_group_exists(self, group_id: str) -> bool | None: ...  # None: not known
    def ecr_repository_exists(self, registry_id: str, region: str, name: str) -> bool | None: ...  # None: not known
    def certificate(self, arn: str) -> Certificate: ...
    def stored_parameter(self, name: str) -> StoredParameter: ...
    def secret_exists(self, secret_id: str) -> bool | None: ...  # None: not known
    # None: not known (no pulumi-aws data source reads it; the offline plan's account facts do)
    def prometheus_workspace_contents(self, workspace_id: str) -> PrometheusWorkspaceContents | None: ...
