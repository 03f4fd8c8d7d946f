"""The program as `pulumi up` runs it: `infra/__main__.py`, config from the stack file through Pulumi's config."""

from __future__ import annotations

import copy

import pulumi
import pytest
import yaml

from gpucloud.plan import PROJECT
from gpucloud.testing import run_program_file
from support import ROOT, STACKS

PROGRAM = ROOT / "infra" / "__main__.py"


def stack_file_config(stack: str) -> dict:
    """The `config:` map of a stack file, as `pulumi up` hands it to the program."""
    return yaml.safe_load((STACKS / f"Pulumi.{stack}.yaml").read_text())["config"]


def test_entry_point_builds_the_stack_from_its_pulumi_config(account):
    deployment = run_program_file(PROGRAM, account, project=PROJECT, stack="notebooks", config=stack_file_config("notebooks"))

    [environment] = deployment.of_type("gpu-cloud:index:ProjectEnvironment")
    assert environment.name == "notebooks"
    assert set(deployment.outputs) == {
        "kmsKeyArn", "instanceRoleArn", "alertsTopicArn", "artifactsBucketName", "agentBundleKey", "groups", "jobDocumentName"
    }
    [group] = account.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    assert group["AutoScalingGroupName"] == "gpu-cloud-notebooks-workbench"
    [volume] = [v for v in account.client("ec2").describe_volumes()["Volumes"] if v.get("Tags")]
    assert volume["Size"] == 200 and volume["Encrypted"]


def test_entry_point_refuses_a_bad_config_naming_stack_key_and_reason_before_any_resource(account):
    config = copy.deepcopy(stack_file_config("notebooks"))
    config["gpu-cloud:access"]["jupyterCidrs"] = ["0.0.0.0/0"]

    with pytest.raises(pulumi.RunError) as refused:
        run_program_file(PROGRAM, account, project=PROJECT, stack="notebooks", config=config)

    message = str(refused.value)
    assert "stack 'notebooks' (stacks/Pulumi.notebooks.yaml)" in message
    assert "gpu-cloud:access.jupyterCidrs[0]" in message and "0.0.0.0/0" in message
    assert account.client("kms").list_keys()["Keys"] == []
    assert account.client("iam").list_roles()["Roles"] == []


def test_entry_point_stops_before_any_resource_when_a_quota_is_below_min_size(account):
    account.quotas.update({"L-DB2E81BA": 0, "L-3819A6DF": 0})
    config = copy.deepcopy(stack_file_config("llm-infer"))

    with pytest.raises(pulumi.RunError) as stopped:
        run_program_file(PROGRAM, account, project=PROJECT, stack="llm-infer", config=config)

    assert "EC2 quota Running On-Demand G and VT instances (L-DB2E81BA)" in str(stopped.value)
    assert "request-service-quota-increase" in str(stopped.value)
    assert account.client("kms").list_keys()["Keys"] == []
