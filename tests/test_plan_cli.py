"""`gpucloud plan`: the offline preview a reviewer reads, in text and in `pulumi preview --json` layout."""

from __future__ import annotations

import json

import pytest

from gpucloud.cli import main
from support import ROOT


@pytest.fixture(autouse=True)
def in_repository(monkeypatch):
    monkeypatch.chdir(ROOT)


def test_plan_prints_the_resource_tree_and_summary(capsys):
    assert main(["plan", "--stack", "notebooks", "--width", "250"]) == 0
    out = capsys.readouterr().out
    assert "Previewing update (notebooks) on the moto engine" in out
    assert "└─ gpu-cloud:index:ProjectEnvironment" in out
    assert "aws:ebs/volume:Volume" in out and "encrypted (project key); protected, retained on delete" in out
    assert "IMDSv2 required (hop 1)" in out
    assert "tcp 8888 from 203.0.113.0/24" in out
    assert "Resources:\n    + " in out and "to create" in out


def test_plan_json_has_the_preview_layout(capsys):
    assert main(["plan", "--stack", "llm-infer", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    steps = document["steps"]
    assert document["changeSummary"] == {"create": len(steps)}
    assert all(step["op"] == "create" and step["urn"].startswith("urn:pulumi:llm-infer::gpu-cloud::") for step in steps)
    groups = [step for step in steps if step["newState"]["type"] == "aws:autoscaling/group:Group"]
    assert len(groups) == 1
    state = groups[0]["newState"]
    assert state["inputs"]["maxSize"] == 8
    assert state["outputs"]["arn"].startswith("arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:")
    assert state["parent"].endswith("gpu-cloud:index:GpuInstanceGroup::llm-infer-servers-nodes")
    assert document["outputs"]["groups"]["servers"]["autoScalingGroupName"] == "gpu-cloud-llm-infer-servers"


def test_bad_config_exits_2_with_only_the_message_on_stderr(tmp_path, capsys):
    stack = tmp_path / "Pulumi.bad.yaml"
    stack.write_text(
        "config:\n  aws:region: us-east-1\n  gpu-cloud:project: bad\n  gpu-cloud:owner: a@example.com\n"
        "  gpu-cloud:costCenter: cc\n  gpu-cloud:access:\n    sshCidrs: [0.0.0.0/0]\n"
        "  gpu-cloud:groups:\n    - {name: gpus, instanceTypes: [g5.xlarge], maxSize: 1}\n"
    )
    assert main(["plan", "--config", str(stack)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"error: stack 'bad' ({stack}): gpu-cloud:access.sshCidrs[0]: 0.0.0.0/0 opens")


def test_config_error_found_through_aws_facts_also_exits_2(tmp_path, capsys):
    stack = tmp_path / "Pulumi.cpu.yaml"
    stack.write_text(
        "config:\n  aws:region: us-east-1\n  gpu-cloud:project: cpu\n  gpu-cloud:owner: a@example.com\n"
        "  gpu-cloud:costCenter: cc\n  gpu-cloud:budget: {monthlyUsd: 100}\n  gpu-cloud:groups:\n    - {name: cpus, instanceTypes: [m5.large], maxSize: 1}\n"
    )
    assert main(["plan", "--config", str(stack)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "gpu-cloud:groups[0].instanceTypes[0]: m5.large has no GPU" in captured.err
