"""`secretEnv` in the plan: the node's measured reads of a container's parameter and secret
(gpucloud/data/access_calls.json, feature containerSecrets) are filled with the stack's names and
allowed by the node role's grants; without those grants the same calls are denied, each named."""

from __future__ import annotations

import pytest

from gpucloud.components import node_services
from gpucloud.plan.preview import plan_stack
from support import minimal_config, settings_for

PARAMETER = "/team/hf-token"
SECRET = "team/wandb"
SERVER = {"name": "vllm", "image": "vllm/vllm-openai:v0.6.3", "port": 8000,
          "secretEnv": {"HF_TOKEN": f"ssm:{PARAMETER}", "WANDB_API_KEY": f"secretsmanager:{SECRET}"}}


def secret_env_stack():
    return settings_for(minimal_config(groups=[{"name": "servers", "instanceTypes": ["g5.xlarge"], "minSize": 0,
                                                "maxSize": 2, "services": {"containers": [SERVER]}}]))


def secret_calls(plan) -> list[tuple[str, str]]:
    return sorted((call["action"], call["resource"]) for call in plan.access["denied"])


def test_the_node_role_may_read_exactly_the_named_parameter_and_secret():
    plan = plan_stack(secret_env_stack())

    assert plan.access["denied"] == []
    assert "containerSecrets" not in {item["feature"] for item in plan.access["unmeasured"]}
    assert not plan.access.get("unfilled")
    assert any("secretEnv not checked (ssm:/team/hf-token, secretsmanager:team/wandb)"
               in finding.message for finding in plan.findings if finding.rule == "program-warning")


def test_without_the_grants_the_plan_names_each_read_it_denies():
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(node_services, "container_secret_statements", lambda *args, **kwargs: [])
        plan = plan_stack(secret_env_stack())

    denied = secret_calls(plan)
    assert ("ssm:GetParameter", "arn:aws:ssm:us-east-1:123456789012:parameter/team/hf-token") in denied
    assert ("secretsmanager:GetSecretValue",
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:team/wandb-EXAMPL") in denied
    assert [action for action, _resource in denied].count("kms:Decrypt") == 2
    assert plan.failed
