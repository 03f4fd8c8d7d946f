"""Account facts: what a stack reads from a real account, written down so an offline plan runs the
same checks a real `pulumi preview` runs.

A facts file (YAML or JSON) lists the EC2 quotas, the VPC and subnets the stack names (zones,
CIDRs, route tables and their routes, endpoints), pinned AMIs, the service-linked roles and the
data bucket (region, owner, encryption; without `buckets`, one not in moto is not known).
`seed_account` creates them in the moto account under their real ids before the program runs;
what the file leaves out is looked up in moto as usual (and is then reported missing), except the
service-linked roles, which are then not known. What a named Prometheus workspace holds is not
seeded: the offline plan creates the stack's own namespace and definition afresh, and its rule
reads the facts (`FactsLookups`), knowing the stack's own from another's.
`gpucloud account snapshot` writes the file from a real account, like a lock file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from gpucloud.lookups.facts import Bucket, Certificate, PrometheusWorkspaceContents
from gpucloud.lookups.pulumi_aws import PulumiAwsLookups
from gpucloud.testing.capacity_facts import CapacityFacts
from gpucloud.testing.facts_keys import reason
from gpucloud.naming import AUTOSCALING_SERVICE
from gpucloud.testing.external_seed import seed_bucket, seed_repository, seed_security_group
from gpucloud.testing.named_facts import NamedFacts, facts_certificate, seed_named
from gpucloud.testing.registry import Account

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


def load_facts(path: str | Path) -> AccountFacts:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        document = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        return AccountFacts.model_validate(document or {})
    except FileNotFoundError:
        raise FactsError(f"account facts {path} do not exist") from None
    except (yaml.YAMLError, json.JSONDecodeError) as error:
        raise FactsError(f"account facts {path} are not valid YAML/JSON: {error}") from None
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(str(part) for part in item['loc'])}: {reason(AccountFacts, item)}"
                             for item in error.errors(include_url=False))
        raise FactsError(f"account facts {path}: {problems}") from None


@contextlib.contextmanager
def _moto_ids(module_name: str, function: str, value: str) -> Iterator[None]:
    """moto draws EC2 ids from module-level functions and takes no custom id for them: for one
    call, the id the facts give is drawn instead, so the program sees the account's real ids."""
    import importlib

    module = importlib.import_module(f"moto.ec2.models.{module_name}")
    original = getattr(module, function)
    setattr(module, function, lambda *args, **kwargs: value)
    try:
        yield
    finally:
        setattr(module, function, original)


def seed_account(account: Account, facts: AccountFacts) -> None:
    """Create what the facts describe in the moto account, under their ids."""
    ec2, iam = account.client("ec2"), account.client("iam")
    account.quotas.update(facts.quotas)
    if facts.service_linked_roles is None:
        _assume_service_linked_roles(account)
    for service in facts.service_linked_roles or ():
        iam.create_service_linked_role(AWSServiceName=service)
    for ami in facts.amis:
        _seed_image(account, ec2, ami)
        if ami.deprecation_time:
            account.image_deprecations[ami.id] = ami.deprecation_time
    for vpc in facts.vpcs:
        _seed_vpc(ec2, vpc)
    for reservation in facts.capacity_reservations:
        account.capacity_reservations[reservation.id] = reservation.model_dump()
    account.capacity_block_offerings.extend(offering.model_dump() for offering in facts.capacity_block_offerings)
    for workspace in facts.prometheus_workspaces:
        _seed_workspace(account, workspace)
    account.ecr_repositories_known = facts.ecr_repositories is not None
    for repository in facts.ecr_repositories or ():
        seed_repository(account, repository)
    account.security_groups_known = facts.security_groups is not None
    for group in facts.security_groups or ():
        seed_security_group(ec2, group.id, group.vpc_id)
    account.buckets_known = facts.buckets is not None
    for bucket in facts.buckets or ():
        seed_bucket(account, bucket.name, bucket.region)
    seed_named(account, facts.certificates, facts.parameters, facts.secrets)


def _assume_service_linked_roles(account: Account) -> None:
    """Without facts on the account's service-linked roles, the stack's own (Auto Scaling's) is
    assumed to exist, as it does from an account's first group on: KMS then takes the key policy
    naming it, and its lookup answers "not known", so the plan says it did not check it."""
    role = account.client("iam").create_service_linked_role(AWSServiceName=AUTOSCALING_SERVICE)["Role"]
    account.assumed_roles.add(role["RoleName"])


class FactsLookups(PulumiAwsLookups):
    """The provider's data sources as the engine answers them, and from the account facts what no
    data source reads (what an existing Prometheus workspace holds)."""

    def __init__(self, facts: AccountFacts | None):
        self.facts = facts

    def bucket(self, name: str) -> Bucket:
        """The engine's answer, with the owner and encryption the facts recorded."""
        found = super().bucket(name)
        listed = (self.facts.buckets if self.facts else None) or []
        recorded = next((bucket for bucket in listed if bucket.name == name), None)
        if not found.exists or recorded is None:
            return found
        return dataclasses.replace(found, owned_by_account=recorded.owned_by_account,
                                   encryption=recorded.encryption or "")

    def certificate(self, arn: str) -> Certificate:
        """From the facts: the engine has no status or expiry of its own to give."""
        return facts_certificate(arn, self.facts.certificates if self.facts else None)

    def prometheus_workspace_contents(self, workspace_id: str) -> PrometheusWorkspaceContents | None:
        for workspace in self.facts.prometheus_workspaces if self.facts else ():
            if workspace.id == workspace_id:
                return workspace.contents()
        return None


def _seed_workspace(account: Account, workspace: PrometheusWorkspaceFacts) -> None:
    """moto draws a workspace's id itself: the created workspace is filed again under the id (and
    with the status) the facts give."""
    from moto.amp.models import amp_backends

    created = account.client("amp").create_workspace(**({"alias": workspace.alias} if workspace.alias else {}))
    backend = amp_backends[account.account_id][account.region]
    found = backend.workspaces.pop(created["workspaceId"])
    found.workspace_id = workspace.id
    found.arn = found.arn.replace(created["workspaceId"], workspace.id)
    found.endpoint = found.endpoint.replace(created["workspaceId"], workspace.id)
    found.status = {"statusCode": workspace.status}
    backend.workspaces[workspace.id] = found


def _seed_image(account: Account, ec2, ami: AmiFacts) -> None:
    """moto's RegisterImage keeps no architecture; an image made from an instance of a catalog
    image of the same architecture does, and its root device name is then set to the fact's."""
    [source] = ec2.describe_images(
        Owners=["amazon"], Filters=[{"Name": "architecture", "Values": [ami.architecture]}], MaxResults=5
    )["Images"][:1] or [None]
    if source is None:
        raise FactsError(f"ami {ami.id}: the engine has no {ami.architecture} image to model it on")
    instance = ec2.run_instances(ImageId=source["ImageId"], MinCount=1, MaxCount=1)["Instances"][0]["InstanceId"]
    with _moto_ids("amis", "random_ami_id", ami.id):
        ec2.create_image(InstanceId=instance, Name=ami.name)
    ec2.terminate_instances(InstanceIds=[instance])
    from moto.ec2.models import ec2_backends

    ec2_backends[account.account_id][account.region].amis[ami.id].root_device_name = ami.root_device_name


def _seed_vpc(ec2, vpc: VpcFacts) -> None:
    main_id = next((table.id for table in vpc.route_tables if table.main), None)
    with _moto_ids("vpcs", "random_vpc_id", vpc.id), contextlib.ExitStack() as ids:
        if main_id:
            ids.enter_context(_moto_ids("route_tables", "random_route_table_id", main_id))
        ec2.create_vpc(CidrBlock=vpc.cidr)
    for subnet in vpc.subnets:
        with _moto_ids("subnets", "random_subnet_id", subnet.id):
            ec2.create_subnet(VpcId=vpc.id, CidrBlock=subnet.cidr, AvailabilityZone=subnet.zone)
    [main] = ec2.describe_route_tables(
        Filters=[{"Name": "vpc-id", "Values": [vpc.id]}, {"Name": "association.main", "Values": ["true"]}]
    )["RouteTables"]
    targets = {route.target for table in vpc.route_tables for route in table.routes}
    for endpoint in vpc.endpoints:
        with _moto_ids("vpcs", "random_vpc_ep_id", endpoint.id):
            ec2.create_vpc_endpoint(VpcId=vpc.id, ServiceName=endpoint.service, VpcEndpointType=endpoint.type)
    for target in sorted(targets):
        _seed_target(ec2, vpc, target)
    for table in vpc.route_tables:
        table_id = main["RouteTableId"]
        if not table.main:
            with _moto_ids("route_tables", "random_route_table_id", table.id):
                table_id = ec2.create_route_table(VpcId=vpc.id)["RouteTable"]["RouteTableId"]
            for subnet in table.subnets:
                ec2.associate_route_table(RouteTableId=table_id, SubnetId=subnet)
        for route in table.routes:
            if route.target != "local":
                ec2.create_route(RouteTableId=table_id, DestinationCidrBlock=route.destination, **_target(route.target))


def _seed_target(ec2, vpc: VpcFacts, target: str) -> None:
    """The gateways routes point at, so that the routes can be created (their own settings are not facts)."""
    if target.startswith("igw-"):
        with _moto_ids("internet_gateways", "random_internet_gateway_id", target):
            ec2.create_internet_gateway()
        ec2.attach_internet_gateway(InternetGatewayId=target, VpcId=vpc.id)
    elif target.startswith("nat-") and vpc.subnets:
        address = ec2.allocate_address(Domain="vpc")["AllocationId"]
        with _moto_ids("nat_gateways", "random_nat_gateway_id", target):
            ec2.create_nat_gateway(SubnetId=vpc.subnets[0].id, AllocationId=address)
    elif target.startswith("eni-") and vpc.subnets:
        with _moto_ids("elastic_network_interfaces", "random_eni_id", target):
            ec2.create_network_interface(SubnetId=vpc.subnets[0].id, Description="NAT instance (account fact)")
    elif target.startswith("tgw-"):
        with _moto_ids("transit_gateway", "random_transit_gateway_id", target):
            ec2.create_transit_gateway()
    elif target.startswith("vpce-") and target not in {endpoint.id for endpoint in vpc.endpoints}:
        with _moto_ids("vpcs", "random_vpc_ep_id", target):
            ec2.create_vpc_endpoint(VpcId=vpc.id, ServiceName="com.amazonaws.vpce.firewall", VpcEndpointType="GatewayLoadBalancer")


def _target(target: str) -> dict[str, str]:
    for prefix, key in (("igw-", "GatewayId"), ("nat-", "NatGatewayId"), ("tgw-", "TransitGatewayId"),
                        ("vpce-", "VpcEndpointId"), ("pcx-", "VpcPeeringConnectionId"),
                        ("eni-", "NetworkInterfaceId")):
        if target.startswith(prefix):
            return {key: target}
    raise FactsError(f"route target {target} is not one the facts can describe")
