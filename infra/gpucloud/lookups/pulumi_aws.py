"""AWS facts through pulumi-aws data sources: the same invokes run against the real provider
during `pulumi preview/up` and against moto under `gpucloud.testing`."""

from __future__ import annotations

import functools
from collections.abc import Callable

import pulumi_aws as aws

from gpucloud.config import CapacityBlockOffer
from gpucloud.lookups.capacity import CapacityBlockOffering, CapacityReservation, lookup_offering, lookup_reservation
from gpucloud.lookups.requirements import GPU_FAMILIES, GpuTypeAttributes, region_gpu_types
from gpucloud.lookups.facts import (
    BUCKET_NOT_KNOWN,
    ECR_REPOSITORY_NOT_KNOWN,
    PARAMETER_NOT_KNOWN,
    QUOTA_NOT_KNOWN,
    ROLE_NOT_KNOWN,
    SECRET_NOT_KNOWN,
    SECURITY_GROUP_NOT_KNOWN,
    Ami,
    Bucket,
    Certificate,
    InstanceTypeFacts,
    LookupUnavailable,
    PrometheusWorkspace,
    PrometheusWorkspaceContents,
    Route,
    StoredParameter,
    Subnet,
)

NOT_FOUND_MARKERS = (
    "InvalidInstanceType",
    "InvalidSubnetID.NotFound",
    "InvalidAMIID",
    "ParameterNotFound",
    "no matching EC2",
    "Your query returned no results",
    "NoSuchEntity",
    "ResourceNotFoundException",
    "couldn't find resource",
    "RepositoryNotFoundException",
    "InvalidGroup.NotFound",
)
"""How the provider (and the engine) word a failed invoke whose object does not exist: AWS's
error codes, and the provider's own words for singular data sources that match nothing."""


def _absent(error: Exception) -> None:
    """None for a lookup of something that does not exist; any other failure is raised."""
    if any(marker in str(error) for marker in NOT_FOUND_MARKERS):
        return None
    raise LookupUnavailable(str(error)) from error


def _exists(invoke: Callable[[], object], not_known: str) -> bool | None:
    """Whether the invoke finds its resource: None where its error carries `not_known` (the offline
    engine has no account facts that say), False where the resource does not exist; any other
    failure is raised."""
    try:
        invoke()
    except Exception as error:  # noqa: BLE001 - invoke failures are plain exceptions
        if not_known in str(error):
            return None
        _absent(error)
        return False
    return True


class PulumiAwsLookups:
    """Answers `gpucloud.lookups.facts.AwsLookups` with synchronous pulumi-aws invokes."""

    @functools.cache
    def account_id(self) -> str:
        return aws.get_caller_identity().account_id

    @functools.cache
    def partition(self) -> str:
        return aws.get_partition().partition

    @functools.cache
    def instance_type(self, name: str) -> InstanceTypeFacts | None:
        try:
            found = aws.ec2.get_instance_type(instance_type=name)
        except Exception as error:  # noqa: BLE001 - invoke failures are plain exceptions
            return _absent(error)
        # The data source's GPU info (pulumi-aws v7 `gpuses`: count, manufacturer, memory_size and
        # name per GPU entry, and `total_gpu_memory`) has no partition size: a slice of a GPU (g6f,
        # gr6f) shows as an entry with a name and memory but a count of 0.
        gpus = found.gpuses or []
        gpu_count = sum(gpu.count or 0 for gpu in gpus)
        model = next((gpu.name for gpu in gpus if gpu.name), "")
        return InstanceTypeFacts(
            name=name,
            gpu_count=gpu_count,
            gpu_model=model,
            gpu_memory_mib=int(found.total_gpu_memory or 0) or sum((gpu.count or 0) * (gpu.memory_size or 0) for gpu in gpus),
            fractional_gpu=gpu_count == 0 and bool(model),
            gpu_info_listed=bool(gpus),
            efa_supported=bool(found.efa_supported),
            efa_max_interfaces=found.efa_maximum_interfaces or 0,
            network_cards=found.maximum_network_cards or 1,
            instance_store_disks=sum(disk.count for disk in (found.instance_disks or [])),
            architectures=tuple(found.supported_architectures or ()),
            vcpus=found.default_vcpus or 0,
        )

    def default_subnets(self) -> list[Subnet]:
        try:
            vpc = aws.ec2.get_vpc(default=True)
        except Exception as error:  # noqa: BLE001 - invoke failures are plain exceptions
            _absent(error)
            return []
        found = aws.ec2.get_subnets(
            filters=[
                aws.ec2.GetSubnetsFilterArgs(name="vpc-id", values=[vpc.id]),
                aws.ec2.GetSubnetsFilterArgs(name="default-for-az", values=["true"]),
            ]
        )
        return [subnet for subnet in map(self.subnet, found.ids) if subnet is not None]

    @functools.cache
    def subnet(self, subnet_id: str) -> Subnet | None:
        try:
            found = aws.ec2.get_subnet(id=subnet_id)
        except Exception as error:  # noqa: BLE001 - invoke failures are plain exceptions
            return _absent(error)
        return Subnet(id=found.id, availability_zone=found.availability_zone, vpc_id=found.vpc_id)

    @functools.cache
    def parameter(self, name: str) -> str | None:
        try:
            return aws.ssm.get_parameter(name=name).value
        except Exception as error:  # noqa: BLE001 - invoke failures are plain exceptions
            return _absent(error)

    @functools.cache
    def ami(self, ami_id: str) -> Ami | None:
        try:
            found = aws.ec2.get_ami(
                filters=[aws.ec2.GetAmiFilterArgs(name="image-id", values=[ami_id])],
                most_recent=True,
                include_deprecated=True,
            )
        except Exception as error:  # noqa: BLE001 - invoke failures are plain exceptions
            return _absent(error)
        return Ami(
            id=found.id,
            root_device_name=found.root_device_name,
            architecture=found.architecture,
            deprecation_time=found.deprecation_time or "",
        )

    @functools.cache
    def role_exists(self, name: str) -> bool | None:
        """Whether the account has the role (iam:GetRole); None where the offline engine has no
        account facts that say, so the plan says it did not check."""
        return _exists(lambda: aws.iam.get_role(name=name), ROLE_NOT_KNOWN)

    @functools.cache
    def prometheus_workspace(self, workspace_id: str) -> PrometheusWorkspace | None:
        try:
            found = aws.amp.get_workspace(workspace_id=workspace_id)
        except Exception as error:  # noqa: BLE001 - invoke failures are plain exceptions
            return _absent(error)
        return PrometheusWorkspace(id=found.workspace_id, arn=found.arn, status=found.status,
                                   kms_key_arn=found.kms_key_arn or "")

    @functools.cache
    def bucket(self, name: str) -> Bucket:
        """The bucket and its region (aws.s3.getBucket: HeadBucket, then the bucket's region;
        terraform-provider-aws internal/service/s3/bucket_data_source.go, read 2026-11-28). The
        data source says nothing of the owner or the encryption: account facts do."""
        try:
            found = aws.s3.get_bucket(bucket=name)
        except Exception as error:  # noqa: BLE001 - invoke failures are plain exceptions
            if BUCKET_NOT_KNOWN in str(error):
                return Bucket(name, exists=None)
            _absent(error)
            return Bucket(name, exists=False)
        return Bucket(name, exists=True, region=found.bucket_region or "")

    @functools.cache
    def ecr_repository_exists(self, registry_id: str, region: str, name: str) -> bool | None:
        """Whether the registry has the repository (aws.ecr.getRepository: DescribeRepositories,
        RepositoryNotFoundException when it does not; terraform-provider-aws
        internal/service/ecr/repository_data_source.go, read 2026-11-28)."""
        return _exists(lambda: aws.ecr.get_repository(name=name, registry_id=registry_id, region=region), ECR_REPOSITORY_NOT_KNOWN)

    @functools.cache
    def security_group_exists(self, group_id: str) -> bool | None:
        """Whether the region has the group (aws.ec2.getSecurityGroup: DescribeSecurityGroups,
        InvalidGroup.NotFound when it does not; "Error codes for the Amazon EC2 API", read 2026-11-28)."""
        return _exists(lambda: aws.ec2.get_security_group(id=group_id), SECURITY_GROUP_NOT_KNOWN)

    @functools.cache
    def stored_parameter(self, name: str) -> StoredParameter:
        """The parameter and its type (aws.ssm.getParameter without decryption, so no KMS Decrypt is
        asked for: GetParameter, ParameterNotFound when it does not exist; terraform-provider-aws
        internal/service/ssm/parameter_data_source.go, read 2026-11-28)."""
        try:
            found = aws.ssm.get_parameter(name=name, with_decryption=False)
        except Exception as error:  # noqa: BLE001 - invoke failures are plain exceptions
            if PARAMETER_NOT_KNOWN in str(error):
                return StoredParameter(name, exists=None)
            _absent(error)
            return StoredParameter(name, exists=False)
        return StoredParameter(name, exists=True, type=found.type)

    @functools.cache
    def secret_exists(self, secret_id: str) -> bool | None:
        """Whether the secret exists, by ARN or name (aws.secretsmanager.getSecret: DescribeSecret,
        ResourceNotFoundException when it does not; terraform-provider-aws
        internal/service/secretsmanager/secret_data_source.go, read 2026-11-28). The value is not read."""
        by = {"arn": secret_id} if secret_id.startswith("arn:") else {"name": secret_id}
        return _exists(lambda: aws.secretsmanager.get_secret(**by), SECRET_NOT_KNOWN)

    @functools.cache
    def certificate(self, arn: str) -> Certificate:
        """The certificate as ACM describes it in its own region. pulumi-aws's `aws.acm.getCertificate`
        finds a certificate by domain or tags only (ListCertificates, then DescribeCertificate of
        those that match; terraform-provider-aws internal/service/acm/certificate_data_source.go, read
        2026-11-28), never by ARN, so this asks DescribeCertificate itself, with the AWS SDK's
        default credentials (the deployer's, as `gpucloud account snapshot` uses)."""
        return describe_certificate(arn)

    def prometheus_workspace_contents(self, workspace_id: str) -> PrometheusWorkspaceContents | None:
        """Not known here: pulumi-aws has no data source for a workspace's alert manager definition
        or rule groups namespaces (its `amp` module reads workspaces, workspace lists and the
        default scraper configuration only, v7.51.1). Account facts answer it offline."""
        return None

    @functools.cache
    def availability_zones(self) -> list[str]:
        """The region's zones that are available (not opt-in Local or Wavelength Zones)."""
        return sorted(aws.get_availability_zones(state="available").names)

    @functools.cache
    def instance_type_zones(self, name: str) -> set[str]:
        """The zones that offer the type (DescribeInstanceTypeOfferings, location type availability-zone)."""
        found = aws.ec2.get_instance_type_offerings(
            filters=[aws.ec2.GetInstanceTypeOfferingsFilterArgs(name="instance-type", values=[name])],
            location_type="availability-zone",
        )
        return set(found.locations)

    @functools.cache
    def offered_gpu_types(self) -> tuple[str, ...]:
        """The types of the GPU families some zone of the region offers, from the offerings
        `instance_type_zones` reads (DescribeInstanceTypeOfferings by availability zone); asked only
        to say what a refused type could be instead."""
        found = aws.ec2.get_instance_type_offerings(location_type="availability-zone")
        return tuple(sorted({name for name in found.instance_types if GPU_FAMILIES.match(name)}))

    @functools.cache
    def subnet_routes(self, subnet: Subnet) -> tuple[Route, ...]:
        """The routes of the subnet's own route table, else of its VPC's main table (VPC user guide,
        "Subnet route tables": a subnet without an explicit association uses the main table)."""
        try:
            table = aws.ec2.get_route_table(subnet_id=subnet.id)
        except Exception as error:  # noqa: BLE001 - invoke failures are plain exceptions
            _absent(error)
            table = aws.ec2.get_route_table(
                vpc_id=subnet.vpc_id,
                filters=[aws.ec2.GetRouteTableFilterArgs(name="association.main", values=["true"])],
            )
        return tuple(_route(route) for route in table.routes or ())

    @functools.cache
    def has_vpc_endpoint(self, vpc_id: str, service: str) -> bool:
        try:
            aws.ec2.get_vpc_endpoint(vpc_id=vpc_id, service_name=service, state="available")
        except Exception as error:  # noqa: BLE001 - invoke failures are plain exceptions
            _absent(error)
            return False
        return True


    @functools.cache
    def ec2_quota(self, code: str) -> float | None:
        """The account's applied value of an EC2 quota in the region (`servicequotas:GetServiceQuota`);
        None where it cannot be read (offline without account facts), so the plan says it was not checked."""
        try:
            return aws.servicequotas.get_service_quota(service_code="ec2", quota_code=code).value
        except Exception as error:  # noqa: BLE001 - invoke failures are plain exceptions
            if QUOTA_NOT_KNOWN in str(error) or "NoSuchResource" in str(error):
                return None
            raise LookupUnavailable(str(error)) from error

    @functools.cache
    def capacity_reservation(self, reservation_id: str) -> CapacityReservation | None:
        return lookup_reservation(reservation_id)

    def capacity_block_offering(self, offer: CapacityBlockOffer) -> CapacityBlockOffering | None:
        return lookup_offering(offer)

    def gpu_instance_types(self) -> tuple[GpuTypeAttributes, ...]:
        return region_gpu_types()

    @functools.cache
    def hibernation(self, name: str) -> tuple[bool, int]:
        """Whether the type can hibernate, and its memory in MiB (what the root volume must hold)."""
        found = aws.ec2.get_instance_type(instance_type=name)
        return bool(found.hibernation_supported), int(found.memory_size or 0)


def describe_certificate(arn: str) -> Certificate:
    """ACM's DescribeCertificate of `arn` in the ARN's region: missing on ResourceNotFoundException,
    not known (with why) when ACM could not be asked."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    region = arn.split(":")[3]
    try:
        found = boto3.session.Session(region_name=region).client("acm").describe_certificate(CertificateArn=arn)
    except ClientError as error:
        if error.response["Error"]["Code"] == "ResourceNotFoundException":
            return Certificate(arn, exists=False, region=region)
        return Certificate(arn, exists=None, region=region, why_not_known=str(error))
    except BotoCoreError as error:
        return Certificate(arn, exists=None, region=region, why_not_known=str(error))
    detail = found["Certificate"]
    return Certificate(arn, exists=True, status=detail.get("Status", ""), not_after=detail.get("NotAfter"),
                       domain=detail.get("DomainName", ""), region=region)


def _route(route) -> Route:
    destination = route.cidr_block or route.ipv6_cidr_block or route.destination_prefix_list_id or ""
    if route.nat_gateway_id:
        return Route(destination, "nat-gateway", route.nat_gateway_id)
    if route.transit_gateway_id:
        return Route(destination, "transit-gateway", route.transit_gateway_id)
    if route.instance_id or route.network_interface_id:
        return Route(destination, "nat-instance", route.instance_id or route.network_interface_id)
    if route.vpc_endpoint_id:
        kind = "gateway-endpoint" if route.destination_prefix_list_id else "firewall-endpoint"
        return Route(destination, kind, route.vpc_endpoint_id)
    gateway = route.gateway_id or ""
    if gateway.startswith("igw-"):
        return Route(destination, "internet-gateway", gateway)
    if gateway.startswith("vpce-"):
        return Route(destination, "gateway-endpoint", gateway)
    if gateway == "local":
        return Route(destination, "local", gateway)
    if route.vpc_peering_connection_id:
        return Route(destination, "peering", route.vpc_peering_connection_id)
    return Route(destination, "other", gateway or route.local_gateway_id or route.carrier_gateway_id or "")
