"""`secretEnv`: the node agent reads each container's secrets with the node role at every start
and hands them to `docker run` through its environment, never on a command line or in a file."""

from __future__ import annotations

import json
import logging

import boto3
import pytest
from gpucloud.node import containers

from node_fakes import REGION
from test_node_services import VLLM, Runner, write_services

TOKEN = "hf_abcdefghijklmnopqrstuvwxyz0123456789"
WANDB = "wandb-0123456789abcdef"
SERVED = {**VLLM, "image": "vllm/vllm-openai:v0.6.3", "ecr_region": None, "secret_env": {"HF_TOKEN": "ssm:/team/hf-token", "WANDB_API_KEY": "secretsmanager:team/wandb"}}


class Exited:
    returncode = 0

    def poll(self):
        return 0

    def wait(self):
        return 0


def boto3_client(service, region):
    return boto3.client(service, region_name=region)


@pytest.mark.node_aws_calls("containerSecrets")
def test_secrets_reach_the_container_through_docker_s_environment_only(aws, tmp_path):
    key = boto3.client("kms", region_name=REGION).create_key(Description="team secrets")["KeyMetadata"]["Arn"]
    boto3.client("ssm", region_name=REGION).put_parameter(Name="/team/hf-token", Value=TOKEN, Type="SecureString",
                                                          KeyId=key)
    boto3.client("secretsmanager", region_name=REGION).create_secret(Name="team/wandb", SecretString=WANDB,
                                                                     KmsKeyId=key)
    path = write_services(tmp_path, {"region": REGION, "containers": [SERVED]})
    run, started = Runner(), []

    result = containers.serve_container(
        "vllm", run, lambda region: pytest.fail("no ECR"), path=path,
        popen=lambda argv, env: started.append((argv, env)) or Exited(), config_dir=str(tmp_path / "docker"),
        aws_client=boto3_client)

    assert result == 0
    argv, env = started[0]
    assert env["HF_TOKEN"] == TOKEN and env["WANDB_API_KEY"] == WANDB
    assert argv[argv.index("HF_TOKEN") - 1] == "--env" and argv[argv.index("WANDB_API_KEY") - 1] == "--env"
    assert not any(TOKEN in word or WANDB in word for call in [argv, *run.calls] for word in call)
    assert not any(TOKEN in file.read_text() for file in tmp_path.rglob("*") if file.is_file())


def test_a_secret_that_cannot_be_read_stops_the_start_naming_it_and_not_its_value(tmp_path, caplog):
    from botocore.exceptions import ClientError

    class Denied:
        def get_parameter(self, **params):
            raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "GetParameter")

    path = write_services(tmp_path, {"region": REGION, "containers": [SERVED]})
    started = []
    with caplog.at_level(logging.ERROR):
        result = containers.serve_container("vllm", Runner(), lambda region: pytest.fail("no ECR"), path=path,
                                            popen=lambda argv, env: started.append(argv) or Exited(),
                                            aws_client=lambda service, region: Denied())
    assert result == 1 and started == []
    assert "secretEnv HF_TOKEN (ssm:/team/hf-token): An error occurred (AccessDeniedException)" in caplog.text


def test_a_binary_secret_is_refused():
    class Binary:
        def get_secret_value(self, **params):
            return {"SecretBinary": b"\x00"}

    with pytest.raises(containers.ServiceError, match="WANDB_API_KEY .* is a binary secret"):
        containers.read_secrets({"WANDB_API_KEY": "secretsmanager:team/wandb"}, lambda service: Binary())
