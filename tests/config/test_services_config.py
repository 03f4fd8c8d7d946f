"""`groups[].services`: what a group's nodes serve, refused where it could not work, naming the key."""

from __future__ import annotations

import pytest

from gpucloud.config.node_endpoints import missing_interface_endpoints
from support import config_problems, minimal_config, settings_for

ECR_IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/vllm:v0.6.3"
OFFLINE = {"egress": "endpointsOnly", "interfaceEndpoints": [
    "ssm", "ssmmessages", "ec2messages", "autoscaling", "logs", "monitoring", "ec2"]}


def with_services(services, network=None, **group):
    base = {"name": "workers", "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 2, "services": services, **group}
    values = minimal_config(groups=[base])
    if network is not None:
        values["network"] = network
    return values


def container(**changes):
    return {"name": "vllm", "image": "vllm/vllm-openai:v0.6.3", "port": 8000, **changes}


def test_a_group_serves_nothing_unless_it_asks():
    services = settings_for(minimal_config()).config.groups[0].services
    assert not services.any and services.containers == []


def test_a_full_services_section_parses_with_its_defaults():
    settings = settings_for(with_services({"jupyter": {}, "tensorboard": {}, "containers": [
        container(healthCheck={"path": "/health"}, env={"HF_HOME": "/data/hf"}, gpus=2)]}))
    services = settings.config.groups[0].services
    assert services.jupyter.install == "pip" and services.tensorboard.log_dir is None
    assert services.port_of(8000).health_check.start_period_seconds == 600
    assert services.containers[0].restart_policy == "always" and services.containers[0].ecr is None


@pytest.mark.parametrize(("changes", "key", "reason"), [
    ({"image": "vllm/vllm-openai:latest"}, "containers[0].image", "pin a version tag or a digest"),
    ({"image": "vllm/vllm-openai"}, "containers[0].image", "pinned image reference"),
    ({"port": 8888}, "containers[0].port", "JupyterLab"),
    ({"port": 22}, "containers[0].port", "SSH"),
    ({"gpus": 17}, "containers[0].gpus", "0 to 16"),
    ({"env": {"HF_TOKEN": "hf_abc"}}, "containers[0].env", "name it in secretEnv"),
    ({"secretEnv": {"HF_TOKEN": "ssm:/aws/hf"}}, "containers[0].secretEnv", "HF_TOKEN: '/aws/hf' is not an SSM parameter"),
    ({"secretEnv": {"HF_TOKEN": "ssm:team/hf"}}, "containers[0].secretEnv", "a hierarchy starts with /"),
    ({"secretEnv": {"HF_TOKEN": "ssm:/a b"}}, "containers[0].secretEnv", "not an SSM parameter name"),
    ({"secretEnv": {"KEY": "secretsmanager:team key"}}, "containers[0].secretEnv", "KEY: 'team key' is not a secret name"),
    ({"secretEnv": {"KEY": "secretsmanager:arn:aws:secretsmanager:us-east-1:123456789012:secret:team"}},
     "containers[0].secretEnv", "not a whole secret ARN"),
    ({"secretEnv": {"KEY": "vault:team/key"}}, "containers[0].secretEnv", "names no store"),
    ({"secretEnv": {"1KEY": "ssm:/team/key"}}, "containers[0].secretEnv", "not starting with a digit"),
    ({"env": {"HF_HOME": "/a"}, "secretEnv": {"HF_HOME": "ssm:/team/key"}}, "containers[0]", "in both env and secretEnv"),
    ({"secretEnv": {"KEY": "secretsmanager:arn:aws:secretsmanager:eu-west-1:123456789012:secret:team/key-Ab12Cd"}},
     "containers[0].secretEnv.KEY", "replicate it to us-east-1"),
    ({"env": {"1BAD": "x"}}, "containers[0].env", "not starting with a digit"),
    ({"port": None, "healthCheck": {"path": "/health"}}, "containers[0]", "give port"),
    ({"healthCheck": {"intervalSeconds": 5, "timeoutSeconds": 5}}, "containers[0].healthCheck", "below intervalSeconds"),
    ({"restartPolicy": "unless-stopped"}, "containers[0].restartPolicy", "always"),
])
def test_a_container_that_could_not_run_is_refused_naming_its_key(changes, key, reason):
    [(found, why)] = config_problems(with_services({"containers": [container(**changes)]}))
    assert found.startswith(f"gpu-cloud:groups[0].services.{key}") and reason in why, (found, why)


def test_secret_env_names_a_parameter_or_a_secret_by_name_or_whole_arn():
    references = {"HF_TOKEN": "ssm:/team/hf-token", "PLAIN": "ssm:hf-token", "WANDB_API_KEY": "secretsmanager:team/wandb",
                  "DB": "secretsmanager:arn:aws:secretsmanager:us-east-1:123456789012:secret:team/db-Ab12Cd"}
    settings = settings_for(with_services({"containers": [container(secretEnv=references)]}))
    assert settings.config.groups[0].services.containers[0].secret_env == references


def test_two_containers_may_not_share_a_name_or_a_port():
    [(key, why)] = config_problems(with_services({"containers": [container(), container(name="other")]}))
    assert key == "gpu-cloud:groups[0].services.containers" and "port 8000" in why


def test_tensorboard_needs_a_write_prefix_or_a_log_dir():
    values = with_services({"tensorboard": {}})
    values["data"] = {"bucket": "demo-data", "readPrefixes": ["datasets/"]}
    [(key, why)] = config_problems(values)
    assert key == "gpu-cloud:groups[0].services.tensorboard.logDir" and "data.writePrefixes" in why
    values["groups"][0]["services"] = {"tensorboard": {"logDir": "/scratch/runs"}}
    assert settings_for(values).config.groups[0].services.tensorboard.log_dir == "/scratch/runs"


@pytest.mark.parametrize("log_dir", ["s3://other-bucket/runs/", "s3://demo-data/secrets/"])
def test_tensorboard_reads_only_what_the_node_role_may_read(log_dir):
    [(key, why)] = config_problems(with_services({"tensorboard": {"logDir": log_dir}}))
    assert key == "gpu-cloud:groups[0].services.tensorboard.logDir" and "outside what the node role may read" in why


def test_install_image_needs_an_image_of_your_own():
    [(key, why)] = config_problems(with_services({"jupyter": {"install": "image"}}))
    assert key == "gpu-cloud:groups[0].services.jupyter.install" and "amiId" in why
    assert settings_for(with_services({"jupyter": {"install": "image"}}, amiId="ami-0123456789abcdef0"))


def test_without_the_internet_pip_installs_and_registry_images_are_refused_naming_each_key():
    found = config_problems(with_services({"jupyter": {}, "tensorboard": {}, "containers": [container()]}, network=OFFLINE))
    keys = {key for key, _ in found}
    assert {"gpu-cloud:groups[0].services.jupyter.install", "gpu-cloud:groups[0].services.tensorboard.install",
            "gpu-cloud:groups[0].services.containers[0].image"} <= keys
    assert any("PyPI" in why for _, why in found) and any("this account's ECR" in why for _, why in found)


def test_without_the_internet_an_ecr_image_needs_both_ecr_endpoints_and_its_own_region():
    [(key, why)] = config_problems(with_services({"containers": [container(image=ECR_IMAGE)]}, network=OFFLINE))
    assert key == "gpu-cloud:network.interfaceEndpoints"
    assert "ecr.api (groups[0].services.containers: GetAuthorizationToken)" in why and "ecr.dkr" in why
    network = {**OFFLINE, "interfaceEndpoints": [*OFFLINE["interfaceEndpoints"], "ecr.api", "ecr.dkr"]}
    settings = settings_for(with_services({"containers": [container(image=ECR_IMAGE)]}, network=network))
    assert missing_interface_endpoints(settings.config) == {}
    elsewhere = ECR_IMAGE.replace("us-east-1", "eu-west-1")
    [(key, why)] = config_problems(with_services({"containers": [container(image=elsewhere)]}, network=network))
    assert key == "gpu-cloud:groups[0].services.containers[0].image" and "replicate it to us-east-1" in why


def test_a_jupyter_group_needs_the_ssm_endpoint_even_without_session_manager():
    network = {"egress": "endpointsOnly", "interfaceEndpoints": ["autoscaling", "logs", "monitoring", "ec2"]}
    values = with_services({"jupyter": {"install": "image"}}, network=network, amiId="ami-0123456789abcdef0")
    values["access"] = {"ssm": False}
    [(key, why)] = config_problems(values)
    assert key == "gpu-cloud:network.interfaceEndpoints"
    assert "ssm (groups[0].services.jupyter: GetParameterHistory, PutParameter)" in why


def test_the_s3_gateway_endpoint_lets_ecr_layers_through():
    from gpucloud.documents import s3_gateway_endpoint_policy

    policy = s3_gateway_endpoint_policy("aws", "123456789012", "us-east-1", ["demo-data"])
    [aws_owned] = [statement for statement in policy["Statement"] if statement["Sid"] == "AnyoneReadsAwsOwnedPackageBuckets"]
    assert "arn:aws:s3:::prod-us-east-1-starport-layer-bucket/*" in aws_owned["Resource"]
