"""`capacity.allocation`: the mixed instances policy's spot and on-demand strategies and capacity
rebalancing reach the Auto Scaling group as written (read back with DescribeAutoScalingGroups on
the moto engine), and the combinations the Auto Scaling API refuses are refused at config time,
one line naming the key (moto and the provider take any string)."""

from __future__ import annotations

import pytest

from support import config_problems, deployed_alone, minimal_config, settings_for

TYPES = ["g5.xlarge", "g6.xlarge", "g5.2xlarge"]


def group(**settings):
    return {"name": "batch", "instanceTypes": TYPES, "maxSize": 4, **settings}


def described_group(deployment):
    [found] = deployment.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    return found


def test_capacity_optimized_prioritized_keeps_the_listed_order_and_on_demand_follows_it():
    settings = settings_for(minimal_config(groups=[group(
        onDemandBaseCapacity=1, capacity={"allocation": {"spot": "capacity-optimized-prioritized"}})]))

    with deployed_alone(settings) as deployment:
        found = described_group(deployment)

    policy = found["MixedInstancesPolicy"]
    distribution = policy["InstancesDistribution"]
    assert distribution["SpotAllocationStrategy"] == "capacity-optimized-prioritized"
    assert distribution["OnDemandAllocationStrategy"] == "prioritized", "the same priority for on-demand"
    assert distribution["OnDemandBaseCapacity"] == 1
    assert [override["InstanceType"] for override in policy["LaunchTemplate"]["Overrides"]] == TYPES, (
        "the overrides' order is the priority: first listed, first tried")
    assert found["CapacityRebalance"] is True


def test_lowest_price_takes_its_pools_and_rebalancing_can_be_turned_off():
    settings = settings_for(minimal_config(groups=[group(capacity={"allocation": {
        "spot": "lowest-price", "spotInstancePools": 3, "capacityRebalance": False}})]))

    with deployed_alone(settings) as deployment:
        found = described_group(deployment)

    distribution = found["MixedInstancesPolicy"]["InstancesDistribution"]
    assert (distribution["SpotAllocationStrategy"], distribution["SpotInstancePools"]) == ("lowest-price", 3)
    assert found["CapacityRebalance"] is False


def test_without_allocation_the_group_keeps_price_capacity_optimized_and_rebalances_with_spot():
    with deployed_alone(settings_for(minimal_config(groups=[group()]))) as deployment:
        found = described_group(deployment)

    distribution = found["MixedInstancesPolicy"]["InstancesDistribution"]
    assert (distribution["SpotAllocationStrategy"], distribution["OnDemandAllocationStrategy"]) == (
        "price-capacity-optimized", "prioritized")
    assert "SpotInstancePools" not in distribution
    assert found["CapacityRebalance"] is True


def test_capacity_optimized_prioritized_with_a_single_type_is_taken():
    settings_for(minimal_config(groups=[{"name": "one", "instanceTypes": ["g5.xlarge"], "maxSize": 2,
                                         "capacity": {"allocation": {"spot": "capacity-optimized-prioritized"}}}]))


REQUIREMENTS = {"gpuCount": {"min": 1, "max": 1}, "allowedInstanceTypes": ["g5.*"]}


@pytest.mark.parametrize(("settings", "key", "reason"), [
    ({"capacity": {"allocation": {"spot": "price-capacity-optimized", "spotInstancePools": 2}}},
     "groups[0].capacity.allocation", "spotInstancePools is valid only with spot: lowest-price"),
    ({"capacity": {"allocation": {"spotInstancePools": 21, "spot": "lowest-price"}}},
     "groups[0].capacity.allocation.spotInstancePools", "less than or equal to 20"),
    ({"capacity": {"allocation": {"spot": "capacity-optimized-prioritised"}}},
     "groups[0].capacity.allocation.spot", "capacity-optimized-prioritized"),
    ({"instanceTypes": [], "instanceRequirements": REQUIREMENTS,
      "capacity": {"allocation": {"spot": "capacity-optimized-prioritized"}}},
     "groups[0].capacity.allocation.spot", "not valid for a group of instanceRequirements"),
    ({"instanceTypes": [], "instanceRequirements": REQUIREMENTS, "capacity": {"allocation": {"onDemand": "prioritized"}}},
     "groups[0].capacity.allocation.onDemand", "lowest-price is the only on-demand strategy"),
    ({"spotPercent": 0, "capacity": {"allocation": {"spot": "capacity-optimized"}}},
     "groups[0].capacity.allocation.spot", "the group runs no spot"),
    ({"instanceTypes": ["g5.xlarge"], "spotPercent": 0, "warmPool": {"minSize": 1},
      "capacity": {"allocation": {"onDemand": "prioritized"}}},
     "groups[0].capacity.allocation", "no mixed instances policy"),
])
def test_allocations_auto_scaling_refuses_are_refused_naming_the_key(settings, key, reason):
    [(where, message)] = config_problems(minimal_config(groups=[group(**settings)]))
    assert where == f"gpu-cloud:{key}"
    assert reason in message
