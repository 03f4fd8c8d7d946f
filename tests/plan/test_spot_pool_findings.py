"""The single-spot-pool warning tells each group a fix it can make: a multi-node group cannot take a
second zone (its cluster placement group is in one), so it is pointed at the keys that do help."""

from __future__ import annotations

from gpucloud.plan.findings import spot_capacity_findings
from gpucloud.testing.engine import AppliedResource


def spot_group(types: list[str], subnets: list[str], placement_group: str | None = None) -> AppliedResource:
    inputs = {
        "name": "gpu-cloud-demo-trainers",
        "vpcZoneIdentifiers": subnets,
        "mixedInstancesPolicy": {
            "instancesDistribution": {"onDemandPercentageAboveBaseCapacity": 0},
            "launchTemplate": {"overrides": [{"instanceType": kind} for kind in types]},
        },
    }
    if placement_group:
        inputs["placementGroup"] = placement_group
    return AppliedResource(urn="urn:demo", type="aws:autoscaling/group:Group", name="demo-trainers-nodes-asg",
                           custom=True, inputs=inputs)


def test_a_multi_node_group_is_not_told_to_add_a_zone():
    group = spot_group(["p5en.48xlarge", "p5.48xlarge"], ["subnet-a"], placement_group="demo-trainers-pg")
    [finding] = spot_capacity_findings([group], {"subnet-a": "us-east-1a"})
    assert "subnets in two zones" not in finding.message
    for key in ("onDemandBaseCapacity", "capacity.reservations", "capacity.capacityBlock"):
        assert key in finding.message


def test_a_multi_node_group_of_one_type_is_told_to_list_more_types():
    group = spot_group(["p5.48xlarge"], ["subnet-a"], placement_group="demo-trainers-pg")
    [finding] = spot_capacity_findings([group], {"subnet-a": "us-east-1a"})
    assert "list at least two instance types" in finding.message and "two zones" not in finding.message


def test_a_group_in_one_zone_is_told_to_add_a_zone():
    group = spot_group(["g5.xlarge", "g6.xlarge"], ["subnet-a"])
    [finding] = spot_capacity_findings([group], {"subnet-a": "us-east-1a"})
    assert "subnets in two zones" in finding.message
