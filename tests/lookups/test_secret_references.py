"""The parameters and secrets containers' `secretEnv` names: looked up by the program without their
values (aws.ssm.getParameter without decryption, aws.secretsmanager.getSecret), recorded by
`account snapshot` (type and KMS key, never a value), not checked offline without facts."""

from __future__ import annotations

import boto3
import pulumi_aws as aws
import pytest
from moto import mock_aws

from gpucloud.config import ConfigError
from gpucloud.plan import plan_stack
from gpucloud.plan.named_snapshot import read_named
from gpucloud.testing import run_program
from gpucloud.testing.facts import AccountFacts, seed_account
from support import minimal_config, settings_for

PARAMETER, SECRET = "/team/hf-token", "team/wandb"
SECRET_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:team/wandb-AbCdEf"
CONTAINER = "gpu-cloud:groups[0].services.containers[0].secretEnv"


def secret_stack(wandb: str = f"secretsmanager:{SECRET}"):
    server = {"name": "vllm", "image": "vllm/vllm-openai:v0.6.3", "port": 8000,
              "secretEnv": {"HF_TOKEN": f"ssm:{PARAMETER}", "WANDB_API_KEY": wandb}}
    return settings_for(minimal_config(groups=[{"name": "servers", "instanceTypes": ["g5.xlarge"], "minSize": 0,
                                                "maxSize": 2, "services": {"containers": [server]}}]))


def facts(parameters=(), secrets=(), parameter_type="SecureString") -> AccountFacts:
    return AccountFacts.model_validate({
        "serviceLinkedRoles": ["autoscaling.amazonaws.com"],
        "parameters": [{"name": name, "type": parameter_type, **({"keyId": "alias/aws/ssm"} if parameter_type ==
                        "SecureString" else {})} for name in parameters],
        "secrets": [{"name": name, "arn": SECRET_ARN} for name in secrets]})


def test_the_data_sources_fail_with_the_services_codes_when_facts_list_them(account):
    seed_account(account, facts())
    with pytest.raises(Exception, match="ParameterNotFound"):
        run_program(lambda: aws.ssm.get_parameter(name=PARAMETER, with_decryption=False), account)
    with pytest.raises(Exception, match="ResourceNotFoundException"):
        run_program(lambda: aws.secretsmanager.get_secret(name=SECRET), account)


def test_a_missing_parameter_and_secret_stop_the_plan_each_naming_its_key():
    with pytest.raises(ConfigError) as error:
        plan_stack(secret_stack(), facts=facts())
    assert dict(error.value.problems) == {
        f"{CONTAINER}.HF_TOKEN": f"ssm:{PARAMETER} does not exist in us-east-1 (SSM GetParameter: ParameterNotFound): "
                                 "create it, or name one that exists; the node would not start the container",
        f"{CONTAINER}.WANDB_API_KEY": f"secretsmanager:{SECRET} does not exist in us-east-1 (Secrets Manager "
                                      "DescribeSecret: ResourceNotFoundException): create it, or name one that "
                                      "exists; the node would not start the container",
    }


@pytest.mark.parametrize("wandb", [f"secretsmanager:{SECRET}", f"secretsmanager:{SECRET_ARN}"])
def test_those_the_facts_list_plan_without_a_line(wandb):
    plan = plan_stack(secret_stack(wandb), facts=facts([PARAMETER], [SECRET]))
    assert not [f for f in plan.findings if "secretEnv" in f.message]


def test_a_parameter_that_is_not_a_secure_string_is_a_warning_at_its_key():
    plan = plan_stack(secret_stack(), facts=facts([PARAMETER], [SECRET], parameter_type="String"))
    [line] = [f for f in plan.findings if "not a SecureString" in f.message]
    assert line.severity == "warning"
    assert line.message.startswith(f"{CONTAINER}.HF_TOKEN: ssm:{PARAMETER} is a String parameter, not a SecureString")


def test_without_facts_they_are_one_not_checked_line():
    plan = plan_stack(secret_stack())
    [line] = [f for f in plan.findings if "secretEnv not checked" in f.message]
    assert line.severity == "warning"
    assert f"(ssm:{PARAMETER}, secretsmanager:{SECRET})" in line.message


def test_the_snapshot_records_type_and_key_but_never_a_value(monkeypatch):
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    with mock_aws():
        boto3.client("ssm", region_name="us-east-1").put_parameter(
            Name=PARAMETER, Value="hf_secret_value", Type="SecureString", KeyId="alias/team")
        created = boto3.client("secretsmanager", region_name="us-east-1").create_secret(
            Name=SECRET, SecretString="wandb_secret_value")
        found = read_named(secret_stack(), boto3.Session(region_name="us-east-1"))
    assert found["parameters"] == [{"name": PARAMETER, "type": "SecureString", "keyId": "alias/team"}]
    assert found["secrets"] == [{"name": SECRET, "arn": created["ARN"], "kmsKeyId": ""}]
    assert "secret_value" not in repr(found)
    AccountFacts.model_validate(found)
