"""The account facts as data: one pydantic model per thing a facts file records (quotas, VPCs with
their subnets, route tables and endpoints, AMIs, capacity reservations and blocks, Prometheus
workspaces, security groups, buckets), camelCase in the file and snake_case here."""

from __future__ import annotations

import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from gpucloud.lookups.facts import PrometheusWorkspaceContents
from gpucloud.testing.capacity_facts import CapacityFacts
from gpucloud.testing.named_facts import NamedFacts

FACTS_STALE_AFTER_DAYS = 30


class _Facts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)


class SubnetFacts(_Facts):
    id: str = Field(pattern=r"^subnet-[0-9a-f]{8,17}$")
    zone: str
    cidr: str


class RouteFacts(_Facts):
    destination: str
    target: str = Field(pattern=r"^(local|igw-|nat-|tgw-|vpce-|pcx-|eni-)[0-9a-z]*$")
    """`local`, or the id of an internet gateway, NAT gateway, transit gateway, VPC endpoint
    (a firewall's Gateway Load Balancer endpoint), peering connection or network interface (a NAT instance)."""


class RouteTableFacts(_Facts):
    id: str = Field(pattern=r"^rtb-[0-9a-f]{8,17}$")
    main: bool = False
    subnets: list[str] = Field(default_factory=list)
    routes: list[RouteFacts] = Field(default_factory=list)


class EndpointFacts(_Facts):
    id: str = Field(pattern=r"^vpce-[0-9a-f]{8,17}$")
    service: str
    type: Literal["Gateway", "Interface", "GatewayLoadBalancer"] = "Interface"


class VpcFacts(_Facts):
    id: str = Field(pattern=r"^vpc-[0-9a-f]{8,17}$")
    cidr: str
    subnets: list[SubnetFacts] = Field(default_factory=list)
    route_tables: list[RouteTableFacts] = Field(default_factory=list)
    endpoints: list[EndpointFacts] = Field(default_factory=list)


class AmiFacts(_Facts):
    id: str = Field(pattern=r"^ami-[0-9a-f]{8,17}$")
    name: str
    architecture: Literal["x86_64", "arm64"] = "x86_64"
    root_device_name: str = "/dev/sda1"
    deprecation_time: str | None = None


class CapacityReservationFacts(_Facts):
    """An On-Demand Capacity Reservation or a Capacity Block the account holds."""

    id: str = Field(pattern=r"^cr-[0-9a-f]{17}$")
    instance_type: str
    zone: str
    instance_count: int = Field(ge=1)
    platform: str = "Linux/UNIX"
    state: Literal["active", "scheduled", "payment-pending", "expired", "cancelled", "failed", "pending"] = "active"
    reservation_type: Literal["default", "capacity-block"] = "default"
    start: datetime.datetime | None = None
    end: datetime.datetime | None = None
    upfront_usd: float | None = None
    """What a Capacity Block cost (its offering's upfront fee)."""
    resource_groups: list[str] = Field(default_factory=list)
    """ARNs of the capacity reservation resource groups it belongs to."""


class CapacityBlockOfferingFacts(_Facts):
    """A Capacity Block EC2 offered for sale (DescribeCapacityBlockOfferings)."""

    id: str = Field(pattern=r"^cb-[0-9a-f]{17}$")
    instance_type: str
    instance_count: int
    zone: str
    start: datetime.datetime
    end: datetime.datetime
    duration_hours: int
    upfront_usd: float


class RuleGroupsNamespaceFacts(_Facts):
    """A rule groups namespace a workspace holds (ListRuleGroupsNamespaces)."""

    name: str
    stack: str | None = None
    """Its `gpu-cloud:stack` tag: the name base of the stack that made it, if one did."""


class PrometheusWorkspaceFacts(_Facts):
    """An Amazon Managed Service for Prometheus workspace a stack names by id, and what it already
    holds of what the stack adds to it (absent: not known, and the plan says it did not check)."""

    id: str = Field(pattern=r"^ws-[0-9a-f-]{36}$")
    alias: str | None = None
    status: Literal["ACTIVE", "CREATING", "UPDATING", "DELETING", "CREATION_FAILED"] = "ACTIVE"
    alert_manager_definition: bool | None = None
    """Whether it has an alert manager definition (DescribeAlertManagerDefinition)."""
    alert_manager_topics: list[str] = Field(default_factory=list)
    """The SNS topics that definition sends to."""
    rule_groups_namespaces: list[RuleGroupsNamespaceFacts] | None = None

    def contents(self) -> PrometheusWorkspaceContents | None:
        """What the workspace holds, or None where the facts do not say."""
        if self.alert_manager_definition is None or self.rule_groups_namespaces is None:
            return None
        return PrometheusWorkspaceContents(
            alert_manager_topics=tuple(self.alert_manager_topics) if self.alert_manager_definition else None,
            rule_groups_namespaces={namespace.name: namespace.stack or "" for namespace in self.rule_groups_namespaces},
        )


class SecurityGroupFacts(_Facts):
    """A security group the stack names, as DescribeSecurityGroups read it."""

    id: str
    vpc_id: str


class BucketFacts(_Facts):
    """An S3 bucket the stack names but does not create, as its snapshot read it (HeadBucket,
    GetBucketLocation, GetBucketEncryption)."""

    name: str
    region: str
    owned_by_account: bool = True
    """False: HeadBucket with ExpectedBucketOwner set to the snapshot's account was refused (403)."""
    encryption: str | None = None
    """SSEAlgorithm of its default encryption (AES256, aws:kms, aws:kms:dsse); absent: not read."""


class SnapshotFacts(_Facts):
    taken_on: datetime.date
    account_id: str
    region: str


class AccountFacts(NamedFacts):
    snapshot: SnapshotFacts | None = None
    quotas: dict[str, float] = Field(default_factory=dict)
    """EC2 quota code -> applied value (vCPUs)."""
    service_linked_roles: list[str] | None = None
    """AWS service names whose service-linked role exists (`autoscaling.amazonaws.com`); absent:
    not known (the plan then says it did not check the role, and creates nothing for it)."""
    vpcs: list[VpcFacts] = Field(default_factory=list)
    amis: list[AmiFacts] = Field(default_factory=list)
    capacity_reservations: list[CapacityReservationFacts] = Field(default_factory=list)
    capacity_block_offerings: list[CapacityBlockOfferingFacts] = Field(default_factory=list)
    prometheus_workspaces: list[PrometheusWorkspaceFacts] = Field(default_factory=list)
    ecr_repositories: list[str] | None = None
    """The ECR repositories of the account the stack names that exist,
    `<account>.dkr.ecr.<region>.amazonaws.com/<name>`; absent: not known."""
    ecr_image_sizes: dict[str, int] | None = None
    """Each container image of this account's ECR the stack runs, to its size in bytes as ECR stores it
    (DescribeImages imageSizeInBytes, compressed layers): the cold-start budget pulls it where the stack
    file gives no imageSizeGiB; absent: not known."""
    security_groups: list[SecurityGroupFacts] | None = None
    """The security groups the stack names (`allowedSecurityGroupIds`) that exist; absent: not known."""
    buckets: list[BucketFacts] | None = None
    """The buckets the stack names that exist; one it names and this leaves out does not exist.
    Absent: not known (the plan then says the data bucket was not checked)."""
    capacity: CapacityFacts | None = None
    """Spot scores and prices, zone offerings, free reservations and block offers
    (`testing/capacity_facts.py`); absent: capacity not checked."""

    def age_warning(self, today: datetime.date | None = None) -> str | None:
        """Facts older than FACTS_STALE_AFTER_DAYS may no longer be true of the account."""
        if self.snapshot is None:
            return None
        age = ((today or datetime.date.today()) - self.snapshot.taken_on).days
        if age > FACTS_STALE_AFTER_DAYS:
            return (f"the account facts were taken {age} days ago ({self.snapshot.taken_on}), more than "
                    f"{FACTS_STALE_AFTER_DAYS}: refresh them with `gpucloud account snapshot`")
        return None


class FactsError(Exception):
    """A facts file that cannot be read; the message names the file and the key."""
