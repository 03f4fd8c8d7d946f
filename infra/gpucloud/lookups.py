"""AWS facts through pulumi-aws data sources: the same invokes run against the real provider
during `pulumi preview/up` and against moto under `gpucloud.testing`."""

from __future__ import annotations

import functools

import pulumi_aws as aws

from gpucloud.resolve import Ami, InstanceTypeFacts, Subnet


class PulumiAwsLookups:
    """Answers `gpucloud.resolve.AwsLookups` with synchronous pulumi-aws invokes."""

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
        except Exception:  # noqa: BLE001 - the provider reports an unknown type as an invoke error
            return None
        gpus = found.gpuses or []
        return InstanceTypeFacts(
            name=name,
            gpu_count=sum(gpu.count for gpu in gpus),
            gpu_model=gpus[0].name if gpus else "",
            gpu_memory_mib=sum(gpu.count * gpu.memory_size for gpu in gpus),
            efa_supported=bool(found.efa_supported),
            efa_max_interfaces=found.efa_maximum_interfaces or 0,
            network_cards=found.maximum_network_cards or 1,
            instance_store_disks=sum(disk.count for disk in (found.instance_disks or [])),
            architectures=tuple(found.supported_architectures or ()),
        )

    def default_subnets(self) -> list[Subnet]:
        try:
            vpc = aws.ec2.get_vpc(default=True)
        except Exception:  # noqa: BLE001 - no default VPC in this region
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
        except Exception:  # noqa: BLE001 - unknown subnet
            return None
        return Subnet(id=found.id, availability_zone=found.availability_zone, vpc_id=found.vpc_id)

    @functools.cache
    def parameter(self, name: str) -> str | None:
        try:
            return aws.ssm.get_parameter(name=name).value
        except Exception:  # noqa: BLE001 - unknown parameter
            return None

    @functools.cache
    def ami(self, ami_id: str) -> Ami | None:
        try:
            found = aws.ec2.get_ami(
                filters=[aws.ec2.GetAmiFilterArgs(name="image-id", values=[ami_id])],
                most_recent=True,
            )
        except Exception:  # noqa: BLE001 - unknown or invisible AMI
            return None
        return Ami(id=found.id, root_device_name=found.root_device_name, architecture=found.architecture)
