"""The mixed instances policy's overrides keep the stack file's order of instanceTypes, across node
shapes (types of another shape name their own launch template): that order is the priority of
on-demand `prioritized`, the default, and of spot `capacity-optimized-prioritized`."""

from __future__ import annotations

from support import deployed_alone, minimal_config, settings_for


def test_the_overrides_keep_the_listed_order_across_node_shapes():
    listed = ["g5.xlarge", "g6.xlarge", "g5.2xlarge"]  # A10G, L4, A10G: two node shapes
    settings = settings_for(minimal_config(groups=[{"name": "batch", "instanceTypes": listed, "maxSize": 4,
                                                    "onDemandBaseCapacity": 1}]))

    with deployed_alone(settings) as deployment:
        [found] = deployment.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]

    policy = found["MixedInstancesPolicy"]
    assert policy["InstancesDistribution"]["OnDemandAllocationStrategy"] == "prioritized"
    overrides = policy["LaunchTemplate"]["Overrides"]
    assert [override["InstanceType"] for override in overrides] == listed, "first listed, first tried"
    primary = policy["LaunchTemplate"]["LaunchTemplateSpecification"]["LaunchTemplateId"]
    assert [override.get("LaunchTemplateSpecification", {}).get("LaunchTemplateId", primary) == primary
            for override in overrides] == [True, False, True], "g6.xlarge keeps its own launch template"
