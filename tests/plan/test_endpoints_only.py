"""A network with no NAT gateway (`egress: endpointsOnly`): every AWS service the nodes were
measured to call needs its endpoint, a missing one is refused naming the key, and a stack that
lists them all plans with no violation."""

from __future__ import annotations

import pytest

from gpucloud.config import ConfigError
from gpucloud.config.node_endpoints import needed_endpoints
from gpucloud.plan import plan_stack
from support import minimal_config, settings_for

IDLE = {"utilizationPercent": 5, "minutes": 60}
GROUPS = [
    {"name": "train", "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 2, "dataVolumeGiB": 200, "idleShutdown": IDLE},
    {"name": "notebook", "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 1, "persistentVolumeGiB": 100,
     "idleShutdown": IDLE},
]
EVERY_ENDPOINT = ["ec2", "autoscaling", "monitoring", "ssm", "ssmmessages", "ec2messages", "logs", "aps-workspaces"]


def endpoints_only(endpoints, **changes):
    return minimal_config(network={"egress": "endpointsOnly", "interfaceEndpoints": endpoints}, groups=GROUPS,
                          monitoring={"prometheus": {"enabled": True}}, **changes)


def test_without_the_ec2_endpoint_a_data_volume_group_is_refused_naming_the_key():
    with pytest.raises(ConfigError) as error:
        settings_for(endpoints_only([endpoint for endpoint in EVERY_ENDPOINT if endpoint != "ec2"]))

    [(key, why)] = error.value.problems
    assert key == "gpu-cloud:network.interfaceEndpoints"
    assert why.startswith("lacks ec2 (")
    assert "groups[0].dataVolumeGiB: DescribeInstances" in why
    assert "groups[1].persistentVolumeGiB: AttachVolume, DescribeVolumes" in why
    assert "the CloudWatch agent: DescribeTags" in why


def test_what_the_nodes_need_follows_the_features_the_stack_turns_on():
    plain = settings_for(minimal_config(access={"ssm": False}, data=None,
                                        groups=[{**GROUPS[0], "dataVolumeGiB": 0, "health": {"replace": False}}]))
    full = settings_for(endpoints_only(EVERY_ENDPOINT))

    assert sorted(needed_endpoints(plain.config)) == ["autoscaling", "ec2", "logs", "monitoring", "s3"]
    assert sorted(needed_endpoints(full.config)) == sorted([*EVERY_ENDPOINT, "s3"])
    assert needed_endpoints(plain.config)["logs"] == ["the CloudWatch agent: CreateLogStream, PutLogEvents"], (
        "without access.ssm no job runs, but every node's agent ships its boot-phase lines")


def test_job_output_needs_the_logs_endpoint_on_every_group_that_can_run_jobs():
    """`gpucloud run` asks Run Command for CloudWatch output; the SSM agent on the node puts it
    into the job log group through the `logs` endpoint, so without it no job output arrives."""
    with pytest.raises(ConfigError) as error:
        settings_for(endpoints_only([endpoint for endpoint in EVERY_ENDPOINT if endpoint != "logs"]))

    [(key, why)] = error.value.problems
    assert key == "gpu-cloud:network.interfaceEndpoints"
    assert why.startswith("lacks logs (")
    assert "groups[0] job output (access.ssm): CreateLogStream, DescribeLogGroups, PutLogEvents" in why
    assert "groups[1] job output (access.ssm)" in why


def test_an_endpoints_only_stack_with_every_endpoint_its_nodes_call_plans_with_no_violation():
    """One data-volume group (a second group and Prometheus would only lengthen the plan): the
    interface endpoints' security group rule carries the tags required-tags asks for."""
    network = {"egress": "endpointsOnly", "interfaceEndpoints": [e for e in EVERY_ENDPOINT if e != "aps-workspaces"]}
    plan = plan_stack(settings_for(minimal_config(network=network, groups=GROUPS[:1])))

    assert [vars(violation) for violation in plan.policy_violations] == []
    assert not plan.failed


def test_secret_env_needs_the_ssm_and_secretsmanager_endpoints_not_kms():
    """The node calls Parameter Store and Secrets Manager; each decrypts with KMS itself, for the
    caller (kms:ViaService), so no kms endpoint is needed in the VPC for it."""
    server = {"name": "vllm", "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/vllm:v0.6.3",
              "secretEnv": {"HF_TOKEN": "ssm:/team/hf-token", "WANDB_API_KEY": "secretsmanager:team/wandb"}}
    groups = [{**GROUPS[0], "services": {"containers": [server]}}]
    with pytest.raises(ConfigError) as error:
        settings_for({**endpoints_only([*EVERY_ENDPOINT, "ecr.api", "ecr.dkr"]), "groups": groups})

    [(key, why)] = error.value.problems
    assert key == "gpu-cloud:network.interfaceEndpoints"
    assert why.startswith("lacks secretsmanager (groups[0].services.containers[].secretEnv: GetSecretValue)")
    every = [*EVERY_ENDPOINT, "ecr.api", "ecr.dkr", "secretsmanager"]
    needed = needed_endpoints(settings_for({**endpoints_only(every), "groups": groups}).config)
    assert "groups[0].services.containers[].secretEnv: GetParameter" in needed["ssm"]
    assert "kms" not in needed
