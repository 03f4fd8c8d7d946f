"""GPU types by attributes: instanceRequirements resolve at plan time to the region's matching GPU
types, which the plan shows and prices, and which the group's overrides allow."""

from __future__ import annotations

import botocore.session
import pytest

from gpucloud.config import ConfigError
from gpucloud.config.groups import ACCELERATOR_NAMES
from gpucloud.plan import plan_stack
from support import deploy, minimal_config, settings_for

SMALL_INFERENCE = {"gpuNames": ["l4", "a10g"], "gpuCount": {"min": 1, "max": 1}}


def spot_group(requirements: dict, **changes) -> dict:
    return {"name": "spot", "instanceRequirements": requirements, "maxSize": 4, **changes}


def test_accelerator_names_are_the_ones_the_installed_ec2_model_takes():
    model = botocore.session.get_session().get_service_model("ec2")

    assert sorted(ACCELERATOR_NAMES) == sorted(model.shape_for("AcceleratorName").enum)
    assert not {"h200", "b200"} & set(ACCELERATOR_NAMES), "the README's advice for these GPUs still holds"


@pytest.mark.parametrize(
    "group, key, reason",
    [
        ({"name": "gg", "maxSize": 2}, "groups[0]", "give instanceTypes"),
        ({"name": "gg", "maxSize": 2, "instanceTypes": ["g5.xlarge"], "instanceRequirements": {}}, "groups[0]", "one of them"),
        (spot_group({"gpuNames": ["h200"]}), "groups[0].instanceRequirements.gpuNames[0]", "Input should be"),
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
    assert matched and all(name.split(".")[0] in ("g5", "g6", "gr6") for name in matched)
    assert any("instanceRequirements: match" in warning and "g5.xlarge" in warning for warning in deployment.warnings)
    [group] = account.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    policy = group["MixedInstancesPolicy"]
    assert policy["InstancesDistribution"]["OnDemandAllocationStrategy"] == "lowest-price"
    allowed = []
    for override in policy["LaunchTemplate"]["Overrides"]:
        requirements = override["InstanceRequirements"]
        assert (requirements["AcceleratorNames"], requirements["AcceleratorCount"]) == (["l4", "a10g"], {"Min": 1, "Max": 1})
        assert requirements["AcceleratorTypes"] == ["gpu"] and "InstanceType" not in override
        allowed += requirements["AllowedInstanceTypes"]
    assert sorted(allowed) == sorted(matched), "each node shape allows its own matched types, and all are allowed"


def test_requirements_that_match_nothing_are_refused_naming_them(account):
    with pytest.raises(ConfigError) as error:
        deploy(settings_for(minimal_config(groups=[spot_group({"gpuNames": ["a100"], "gpuCount": {"min": 3, "max": 3}})])), account)

    assert "matches no GPU instance type offered in us-east-1" in dict(error.value.problems)["gpu-cloud:groups[0].instanceRequirements"]


def test_excluded_types_are_left_out_and_the_plan_prices_the_range():
    plan = plan_stack(settings_for(minimal_config(groups=[spot_group({**SMALL_INFERENCE, "excludedInstanceTypes": ["g5.*"]})])))

    matched = plan.outputs["groups"]["spot"]["instanceTypes"]
    assert matched and not [name for name in matched if name.startswith("g5.")]
    [group] = plan.cost_estimate.groups
    assert group.notes[0].endswith("(cheapest type instanceRequirements match)")
    assert group.instance_type != group.max_instance_type
