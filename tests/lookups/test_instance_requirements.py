"""GPU types by attributes: instanceRequirements resolve at plan time to the region's matching GPU
types, which the plan shows and prices, and which the group's overrides allow."""

from __future__ import annotations

import botocore.session
import pytest

from gpucloud.config import ConfigError
from gpucloud.config.requirements import ACCELERATOR_MANUFACTURERS, ACCELERATOR_NAMES
from gpucloud.plan import plan_stack
from support import deploy, minimal_config, settings_for

SMALL_INFERENCE = {"gpuNames": ["t4", "a100"], "gpuCount": {"min": 1, "max": 1}}


def spot_group(requirements: dict, **changes) -> dict:
    return {"name": "spot", "instanceRequirements": requirements, "maxSize": 4, **changes}


def test_accelerator_names_are_the_ones_the_installed_auto_scaling_model_takes():
    model = botocore.session.get_session().get_service_model("autoscaling")

    assert sorted(ACCELERATOR_NAMES) == sorted(model.shape_for("AcceleratorName").enum)
    assert not {"h100", "h200", "l4", "a10g"} & set(ACCELERATOR_NAMES), "the README's advice for these GPUs still holds"


def test_accelerator_manufacturers_are_the_ones_the_installed_auto_scaling_model_takes():
    model = botocore.session.get_session().get_service_model("autoscaling")

    assert sorted(ACCELERATOR_MANUFACTURERS) == sorted(model.shape_for("AcceleratorManufacturer").enum)


@pytest.mark.parametrize(
    "group, key, reason",
    [
        ({"name": "gg", "maxSize": 2}, "groups[0]", "give instanceTypes"),
        ({"name": "gg", "maxSize": 2, "instanceTypes": ["g5.xlarge"], "instanceRequirements": {}}, "groups[0]", "one of them"),
        (spot_group({"gpuNames": ["h200"]}), "groups[0].instanceRequirements.gpuNames[0]", "Input should be"),
        (spot_group({"gpuNames": ["t4", "h100"]}), "groups[0].instanceRequirements.gpuNames[1]", "Input should be"),
        (spot_group({"gpuManufacturers": ["nvidia", "habana"]}), "groups[0].instanceRequirements.gpuManufacturers[1]",
         "Input should be 'nvidia', 'amd', 'amazon-web-services' or 'xilinx'"),
        (spot_group({"allowedInstanceTypes": ["g6.*"], "excludedInstanceTypes": ["g6.xlarge"]}),
         "groups[0].instanceRequirements", "not both"),
        (spot_group({"gpuCount": {"min": 4, "max": 2}}), "groups[0].instanceRequirements.gpuCount", "min 4 is above max 2"),
    ],
)
def test_requirements_aws_would_refuse_are_config_errors(group, key, reason):
    with pytest.raises(ConfigError) as error:
        settings_for(minimal_config(groups=[group]))

    assert any(named == f"gpu-cloud:{key}" and reason in why for named, why in error.value.problems), error.value.problems


def test_requirements_resolve_to_the_matching_gpu_types_and_reach_the_group_as_allowed_types(account):
    deployment = deploy(settings_for(minimal_config(groups=[spot_group(SMALL_INFERENCE)])), account)

    matched = deployment.outputs["groups"]["spot"]["instanceTypes"]
    assert matched and all(name.split(".")[0] in ("g4dn", "p4d", "p4de") for name in matched), matched
    assert any("instanceRequirements: match" in warning and "g4dn.xlarge" in warning for warning in deployment.warnings)
    [group] = account.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    policy = group["MixedInstancesPolicy"]
    assert policy["InstancesDistribution"]["OnDemandAllocationStrategy"] == "lowest-price"
    allowed = []
    for override in policy["LaunchTemplate"]["Overrides"]:
        requirements = override["InstanceRequirements"]
        assert (requirements["AcceleratorNames"], requirements["AcceleratorCount"]) == (["t4", "a100"], {"Min": 1, "Max": 1})
        assert requirements["AcceleratorTypes"] == ["gpu"] and "InstanceType" not in override
        assert (requirements["VCpuCount"], requirements["MemoryMiB"]) == ({"Min": 1}, {"Min": 1}), "the provider takes no 0"
        allowed += requirements["AllowedInstanceTypes"]
    assert sorted(allowed) == sorted(matched), "each node shape allows its own matched types, and all are allowed"


def test_requirements_that_match_nothing_are_refused_naming_them(account):
    with pytest.raises(ConfigError) as error:
        deploy(settings_for(minimal_config(groups=[spot_group({"gpuNames": ["a100"], "gpuCount": {"min": 3, "max": 3}})])), account)

    assert "matches no GPU instance type offered in us-east-1" in dict(error.value.problems)["gpu-cloud:groups[0].instanceRequirements"]


def test_excluded_types_are_left_out_and_the_plan_prices_the_range():
    plan = plan_stack(settings_for(minimal_config(groups=[spot_group({**SMALL_INFERENCE, "excludedInstanceTypes": ["g4dn.x*", "g4dn.2*"]})])))

    matched = plan.outputs["groups"]["spot"]["instanceTypes"]
    assert matched and not {"g4dn.xlarge", "g4dn.2xlarge"} & set(matched)
    [group] = plan.cost_estimate.groups
    assert group.notes[0].endswith("(cheapest type instanceRequirements match)")
    assert group.instance_type != group.max_instance_type


def test_more_node_shapes_than_auto_scaling_takes_requirement_sets_for_are_listed_as_types(account):
    deployment = deploy(settings_for(minimal_config(groups=[spot_group({"gpuNames": ["t4", "a100", "v100"], "excludedInstanceTypes": ["g5g.*"]})])), account)

    matched = deployment.outputs["groups"]["spot"]["instanceTypes"]
    [group] = account.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    overrides = group["MixedInstancesPolicy"]["LaunchTemplate"]["Overrides"]
    assert len(account.client("ec2").describe_launch_templates()["LaunchTemplates"]) > 4, "more shapes than four sets"
    assert not [override for override in overrides if "InstanceRequirements" in override]
    assert sorted(override["InstanceType"] for override in overrides) == sorted(matched), "the same types, listed"
