"""`gpucloud plan`: the offline preview a reviewer reads, in text and in `pulumi preview --json` layout."""

from __future__ import annotations

import json
import os
import sys

import botocore
import pytest

from gpucloud.cli import main
from support import ROOT


@pytest.fixture(autouse=True)
def in_repository(monkeypatch):
    monkeypatch.chdir(ROOT)


def test_plan_prints_the_resource_tree_and_summary(capsys):
    assert main(["plan", "--stack", "notebooks", "--width", "300"]) == 0
    out = capsys.readouterr().out
    assert "Previewing update (notebooks) on the moto engine" in out
    assert "└─ gpu-cloud:index:ProjectEnvironment" in out
    assert "aws:ebs/volume:Volume" in out and "encrypted (project key); protected, retained on delete" in out
    assert "IMDSv2 required (hop 1)" in out
    assert "tcp 8888 from" not in out, "reached through Session Manager, which needs no inbound rule"
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


def test_unknown_region_exits_2_naming_the_key_before_any_resource(tmp_path, capsys):
    stack = tmp_path / "Pulumi.notebooks.yaml"
    stack.write_text((ROOT / "stacks" / "Pulumi.notebooks.yaml").read_text().replace(
        "aws:region: us-east-1", "aws:region: us-east-9"))
    assert main(["plan", "--config", str(stack)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"error: stack 'notebooks' ({stack}): aws:region: 'us-east-9' is not a region of any "
                            f"AWS partition in botocore {botocore.__version__}'s endpoint data "
                            "(the us-east regions: us-east-1, us-east-2)\n")


def write_program(folder, main_source: str, *, helper: str = "NAME = 'from-helper'\n"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "helper.py").write_text(helper)
    (folder / "__main__.py").write_text(main_source)
    return folder


TAGGED_KEY_PROGRAM = """\
import pulumi
import pulumi_aws as aws
from helper import NAME

config = pulumi.Config()
tags = {"Project": "p", "Owner": "o@example.com", "CostCenter": "cc"}
aws.kms.Key(NAME, enable_key_rotation=True, deletion_window_in_days=config.get_int("window") or 30, tags=tags)
pulumi.export("window", config.get_int("window"))
pulumi.export("team", pulumi.Config("team").get("owner"))
pulumi.export("subnets", config.get_object("subnets"))
pulumi.export("region", aws.config.region)
pulumi.export("notes", open("notes.txt").read().strip())
"""


def test_program_folder_imports_its_sibling_modules_and_reads_relative_files(tmp_path, capsys):
    folder = write_program(tmp_path / "team", TAGGED_KEY_PROGRAM)
    (folder / "notes.txt").write_text("read from the program's folder\n")
    path_before, cwd_before = list(sys.path), os.getcwd()
    assert main(["plan", "--program", str(folder), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert any(step["urn"].endswith("aws:kms/key:Key::from-helper") for step in document["steps"])
    assert document["outputs"]["notes"] == "read from the program's folder"
    assert (sys.path, os.getcwd()) == (path_before, cwd_before)
    assert "helper" not in sys.modules


def test_pulumi_yaml_main_and_stack_config_reach_the_program(tmp_path, capsys):
    project = tmp_path / "project"
    write_program(project / "src", TAGGED_KEY_PROGRAM)
    (project / "src" / "notes.txt").write_text("n\n")
    (project / "Pulumi.yaml").write_text("name: team\nruntime: python\nmain: src/\n")
    stack_file = project / "Pulumi.staging.yaml"
    stack_file.write_text(
        "config:\n  aws:region: eu-west-1\n  window: 7\n  owner: ml@example.com\n"
        "  subnets:\n    - subnet-1\n    - subnet-2\n"
    )
    assert main(["plan", "--program", str(project), "--config-file", str(stack_file), "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["outputs"] == {
        "window": 7,
        "team": "ml@example.com",
        "subnets": ["subnet-1", "subnet-2"],
        "region": "eu-west-1",
        "notes": "n",
    }
    assert document["steps"][0]["urn"] == "urn:pulumi:staging::team::pulumi:pulumi:Stack::team-staging"
    assert [v["policyName"] for v in document["policyViolations"]] == ["kms-rotation-and-deletion-window"]
    assert main(["plan", "--program", str(project), "--config-file", str(stack_file), "--stack-name", "qa", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["steps"][0]["urn"].startswith("urn:pulumi:qa::team::")


def test_secret_config_is_refused_offline(tmp_path, capsys):
    folder = write_program(tmp_path / "team", TAGGED_KEY_PROGRAM)
    stack_file = tmp_path / "Pulumi.prod.yaml"
    stack_file.write_text("config:\n  team:token:\n    secure: v1:abc\n")
    assert main(["plan", "--program", str(folder), "--config-file", str(stack_file)]) == 2
    assert capsys.readouterr().err == (
        f"error: {stack_file}: team:token is a secret, which the offline plan cannot decrypt; "
        "plan with a copy of the file that gives a placeholder value instead\n"
    )


def test_crashing_program_exits_2_with_one_line_naming_it(tmp_path, capsys):
    folder = write_program(tmp_path / "broken", "from helper import NAME\nraise ValueError(f'bad value {NAME}')\n")
    assert main(["plan", "--program", str(folder)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"error: program {folder} failed: ValueError: bad value from-helper (--debug shows the traceback)\n"
    )
    assert main(["plan", "--program", str(folder), "--debug"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):") and "__main__.py" in err
    assert err.endswith(f"error: program {folder} failed: ValueError: bad value from-helper\n")


def test_a_program_in_an_unknown_region_exits_2_naming_the_key(tmp_path, capsys):
    folder = write_program(tmp_path / "team", TAGGED_KEY_PROGRAM)
    stack_file = tmp_path / "Pulumi.prod.yaml"
    stack_file.write_text("config:\n  aws:region: us-east-9\n")
    assert main(["plan", "--program", str(folder), "--config-file", str(stack_file)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {stack_file}: aws:region: 'us-east-9' is not a region of any AWS partition")


def test_folder_without_an_entry_point_exits_2(tmp_path, capsys):
    assert main(["plan", "--program", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path} (no Pulumi.yaml): {tmp_path} has no __main__.py\n"


def test_a_bug_while_planning_a_stack_is_not_reported_as_bad_config(monkeypatch, capsys):
    from gpucloud import plan as planning

    def broken(*args, **kwargs):
        raise ValueError("user data is 17000 bytes compressed")

    monkeypatch.setattr(planning, "plan_stack", broken)
    assert main(["plan", "--stack", "notebooks"]) == 3
    assert capsys.readouterr().err == (
        "error: gpucloud plan failed: ValueError: user data is 17000 bytes compressed "
        "(a gpucloud bug, not a problem of the stack file; --debug shows the traceback)\n"
    )


def test_config_file_needs_a_program(capsys):
    assert main(["plan", "--stack", "notebooks", "--config-file", "x.yaml"]) == 2
    assert "go with --program" in capsys.readouterr().err
