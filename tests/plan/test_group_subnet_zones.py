"""The spot rule counts a group's pools by the zones of the subnets it launches into: the plan asks
the account for those subnets' zones, and for no others."""

from __future__ import annotations

from gpucloud.plan.preview import _group_subnet_zones
from gpucloud.testing import AppliedResource, Deployment, moto_account


def group(name: str, subnets: list[str]) -> AppliedResource:
    return AppliedResource(urn=f"urn:{name}", type="aws:autoscaling/group:Group", name=name, custom=True,
                           inputs={"vpcZoneIdentifiers": subnets})


def test_the_zones_are_those_of_the_groups_subnets_only():
    with moto_account() as account:
        ec2 = account.client("ec2")
        vpc = ec2.create_vpc(CidrBlock="10.8.0.0/16")["Vpc"]["VpcId"]
        a1, a2, b, unused = (ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.8.{index}.0/24", AvailabilityZone=zone)["Subnet"]["SubnetId"]
                             for index, zone in enumerate(["us-east-1a", "us-east-1a", "us-east-1b", "us-east-1c"]))
        deployment = Deployment(account=account, project="p", stack="s", outputs={},
                                resources=[group("trainers", [a1, a2]), group("servers", [b, a1])])
        zones = _group_subnet_zones(deployment)
        without_groups = _group_subnet_zones(Deployment(account=account, project="p", stack="s", outputs={}, resources=[]))

    assert zones == {a1: "us-east-1a", a2: "us-east-1a", b: "us-east-1b"}
    assert unused not in zones and without_groups == {}
