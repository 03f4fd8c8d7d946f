"""`gpucloud plan --base`: real changes to the example stacks, each planned against its base on the
engine, with the operation and the reason the provider would give.

Each module-scoped fixture is one engine run; the base of a stack is shared by its variants."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from gpucloud.cli import main
from gpucloud.config import ConfigError, load_stack_file
from gpucloud.plan.base import empty_plan
from gpucloud.plan.diff import PlanDiff, classify, diff_plans
from gpucloud.plan.diff_json import to_preview_json
from gpucloud.plan.diff_view import render_diff
from gpucloud.plan.preview import plan_stack
from gpucloud.testing import AppliedResource
from gpucloud.testing.facts import load_facts
from support import ROOT, plan_once

STACKS = ROOT / "stacks"
OTHER_IMAGE = "ami-785db401"
"""An Ubuntu x86_64 image of moto's catalog other than the one the Deep Learning AMI parameter names."""


def stack_document(name: str) -> dict[str, Any]:
    return yaml.safe_load((STACKS / name).read_text())


def settings_of(document: dict[str, Any], stack: str, folder: Path):
    path = folder / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump(document))
    return load_stack_file(path)


def group(document: dict[str, Any], index: int = 0) -> dict[str, Any]:
    return document["config"]["gpu-cloud:groups"][index]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("stacks")


@pytest.fixture(scope="module")
def notebooks_base():
    """The example as it is: the test process's plan of its file, which other files plan too."""
    return plan_once(STACKS / "Pulumi.notebooks.yaml")


def notebooks_change(folder, base, edit) -> PlanDiff:
    document = stack_document("Pulumi.notebooks.yaml")
    edit(document)
    current = settings_of(document, "notebooks", folder)
    return diff_plans(base, plan_stack(current), intended=tuple(current.config.intended_replacements))


@pytest.fixture(scope="module")
def renamed(folder, notebooks_base) -> PlanDiff:
    return notebooks_change(folder, notebooks_base, lambda document: group(document).update(name="bench"))


@pytest.fixture(scope="module")
def retagged(folder, notebooks_base) -> PlanDiff:
    return notebooks_change(folder, notebooks_base,
                            lambda document: document["config"].update({"gpu-cloud:costCenter": "cc-ml-platform"}))


@pytest.fixture(scope="module")
def new_image(folder, notebooks_base) -> PlanDiff:
    return notebooks_change(folder, notebooks_base, lambda document: group(document).update(amiId=OTHER_IMAGE))


def write_and_second_group(document: dict[str, Any]) -> None:
    """A new write prefix (the instance role's policy) and a second notebook group (its token
    parameter joins the key policy)."""
    document["config"]["gpu-cloud:data"]["writePrefixes"].append("models/")
    document["config"]["gpu-cloud:groups"].append(
        {"name": "bench", "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 1, "desiredCapacity": 0,
         "services": {"jupyter": {}}})


@pytest.fixture(scope="module")
def widened(folder, notebooks_base) -> PlanDiff:
    return notebooks_change(folder, notebooks_base, write_and_second_group)


TEAM_VPC = STACKS / "own-vpc-example"


def team_vpc_with_home_group() -> dict[str, Any]:
    """The own-VPC example, its batch group on demand and unscheduled, so the estimate prices it,
    plus a one-node group that keeps a persistent volume."""
    document = yaml.safe_load((TEAM_VPC / "Pulumi.team-vpc.yaml").read_text())
    group(document)["spotPercent"] = 0
    del group(document)["scaling"]  # its night schedule (maxSize 0, no morning) would price it at zero
    document["config"]["gpu-cloud:groups"].append(
        {"name": "home", "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 1, "desiredCapacity": 1,
         "persistentVolumeGiB": 200, "amiId": group(document)["amiId"]})
    return document


@pytest.fixture(scope="module")
def team_vpc_plans(folder):
    """The base, its subnets narrowed to us-east-1b, its batch group resized, and without the batch group."""
    facts = load_facts(TEAM_VPC / "facts" / "team-vpc.yaml")
    moved, resized, removed = team_vpc_with_home_group(), team_vpc_with_home_group(), team_vpc_with_home_group()
    moved["config"]["gpu-cloud:network"]["subnetIds"] = ["subnet-0a1b2c3d4e5f60002"]
    group(resized).update(minSize=1, maxSize=8)
    del removed["config"]["gpu-cloud:groups"][0]
    documents = {"base": team_vpc_with_home_group(), "moved": moved, "resized": resized, "removed": removed}
    return {key: plan_stack(settings_of(document, "team-vpc", folder), None, facts) for key, document in documents.items()}


def rules_of(diff: PlanDiff, rule: str) -> list[str]:
    return [finding.message for finding in diff.findings if finding.rule == rule]


def test_resizing_a_group_updates_it_in_place_and_prices_both_sides(team_vpc_plans):
    diff = diff_plans(team_vpc_plans["base"], team_vpc_plans["resized"])
    group_change = diff.named("team-vpc-batch-nodes-asg")
    assert group_change.op == "update", group_change
    assert [(item.path, item.old, item.new) for item in group_change.changes] == [("maxSize", 4, 8), ("minSize", 0, 1)]
    assert [(item.path, item.reason) for item in group_change.ignored] == [("desiredCapacity", "ignoreChanges")]
    assert diff.summary.get("replace", 0) == 0 and not diff.failed
    cost = diff.monthly_cost
    assert cost["difference"]["max"] == pytest.approx(cost["current"]["max"] - cost["base"]["max"])
    assert cost["difference"]["max"] > 0


def test_adding_a_group_creates_it_and_removing_it_deletes_it(team_vpc_plans):
    removed = diff_plans(team_vpc_plans["base"], team_vpc_plans["removed"])
    assert removed.named("team-vpc-batch-nodes-asg").op == "delete"
    assert {change.op for change in removed.changes if "-batch-" in change.name} == {"delete"}
    assert rules_of(removed, "group-replaced") == [
        "team-vpc-batch-nodes-asg is deleted: it is no longer in the program of the changed stack file (a renamed "
        "or removed group or setting); its 0 running node(s) (desired capacity 0 in the base) are terminated"]
    added = diff_plans(team_vpc_plans["removed"], team_vpc_plans["base"])
    assert {change.op for change in added.changes if "-batch-" in change.name} == {"create"}
    assert not rules_of(added, "group-replaced") and not added.failed


def test_moving_a_persistent_volume_to_another_zone_replaces_it_and_fails(team_vpc_plans):
    diff = diff_plans(team_vpc_plans["base"], team_vpc_plans["moved"])
    volume = diff.named("team-vpc-home-persist-volume")
    assert volume.op == "replace"
    reason = volume.replace_reasons[0]
    assert (reason.path, reason.old, reason.new) == ("availabilityZone", "us-east-1a", "us-east-1b")
    assert "ForceNew on availabilityZone" in reason.reason and "internal/service/ec2/ebs_volume.go" in reason.reason
    [violation] = rules_of(diff, "data-replaced")
    assert violation.startswith("team-vpc-home-persist-volume (aws:ebs/volume:Volume) is replaced: availabilityZone "
                                '"us-east-1a" -> "us-east-1b" forces it')
    assert "protected" in violation and "gpu-cloud:intendedReplacements" in violation
    assert diff.failed
    steps = [step for step in to_preview_json(diff)["steps"] if step["urn"] == volume.urn]
    assert [step["op"] for step in steps] == ["create-replacement", "replace", "delete-replaced"]
    step = steps[1]
    assert step["replaceReasons"] == ["availabilityZone"]
    assert step["detailedDiff"]["availabilityZone"]["kind"] == "update-replace"
    assert step["oldState"]["inputs"]["availabilityZone"] == "us-east-1a"


def test_an_intended_replacement_is_reported_not_failed_and_a_stale_one_is_warned(team_vpc_plans):
    diff = diff_plans(team_vpc_plans["base"], team_vpc_plans["moved"],
                      intended=("team-vpc-home-persist-volume", "team-vpc-key-key"))
    assert not rules_of(diff, "data-replaced") and not diff.failed
    assert len(rules_of(diff, "intended-replacement")) == 1
    assert rules_of(diff, "intended-replacement-unused")[0].startswith(
        "gpu-cloud:intendedReplacements lists team-vpc-key-key, which this change neither replaces nor deletes")


def test_renaming_a_group_replaces_its_nodes_and_its_volume(renamed):
    assert renamed.named("notebooks-workbench-nodes-asg").op == "delete"
    assert renamed.named("notebooks-bench-nodes-asg").op == "create"
    [warning] = rules_of(renamed, "group-replaced")
    assert "its 1 running node(s) (desired capacity 1 in the base) are terminated" in warning
    assert "notebooks-bench-nodes-asg is created in its place" in warning
    assert [message.split(" ")[0] for message in rules_of(renamed, "data-replaced")] == ["notebooks-workbench-persist-volume"]


def test_changing_only_tags_updates_without_replacing(retagged):
    assert retagged.summary.get("replace", 0) == 0 and not retagged.of("create") and not retagged.of("delete")
    key = retagged.named("notebooks-key-key")
    assert key.op == "update" and [(item.path, item.new) for item in key.changes] == [("tags.CostCenter", "cc-ml-platform")]
    assert not rules_of(retagged, "data-replaced") and not rules_of(retagged, "may-replace")


def test_a_new_image_updates_the_launch_template_and_rolls_every_node(new_image):
    template = new_image.named("notebooks-workbench-nodes-lt")
    assert template.op == "update"
    assert ("imageId", OTHER_IMAGE) in [(item.path, item.new) for item in template.changes]
    group_change = new_image.named("notebooks-workbench-nodes-asg")
    assert group_change.op == "update"
    assert any(item.path.endswith("launchTemplateSpecification.version") and "new version of notebooks-workbench-nodes-lt"
               in item.new for item in group_change.changes)
    [warning] = rules_of(new_image, "rolling-refresh")
    assert "instance refresh replaces every node" in warning and "1 node(s) at desired capacity 1" in warning
    assert new_image.named("notebooks-workbench-persist-volume").op == "same"


def test_a_changed_policy_is_shown_by_statement_and_a_wider_grant_is_a_warning(widened):
    out = io.StringIO()
    render_diff(widened, Console(file=out, width=240, color_system=None))
    text = out.getvalue()
    assert '"{\\"Version' not in text and "JSON document changed:" in text
    grants = {finding.message.split(" ")[0]: finding for finding in widened.findings if finding.rule == "grant-widened"}
    assert {finding.severity for finding in grants.values()} == {"warning"}
    key_grant, role_grant = grants["notebooks-key-key"].message, grants["notebooks-access-policy"].message
    assert "policy grants more than the base" in key_grant and "PARAMETER_ARN also allows ${notebooks-services-bench-jupyter-token.arn}" in key_grant
    assert "WriteGrantedPrefixes: resources arn:aws:s3:::example-research-data/models/*" in role_grant, role_grant
    assert "widens: resources arn:aws:s3:::example-research-data/models/*" in text
    [step] = [step for step in to_preview_json(widened)["steps"] if step["urn"].endswith("::notebooks-access-policy")]
    assert "    widens: resources arn:aws:s3:::example-research-data/models/*" in step["gpucloudDocumentChanges"]["policy"]


def resource(type_: str, **options: Any) -> AppliedResource:
    return AppliedResource(urn=f"urn:pulumi:s::p::{type_}::x", type=type_, name="x", custom=True, **options)


def test_a_property_of_a_type_without_provider_rules_may_replace():
    forces, may, why = classify(resource("aws:sagemaker/notebookInstance:NotebookInstance"), "instanceType")
    assert (forces, may) == (False, True) and "not known" in why


def test_force_new_covers_nested_paths_and_replace_on_changes():
    assert classify(resource("aws:ec2/vpcEndpoint:VpcEndpoint"), "dnsOptions.privateDnsPreference")[0]
    assert classify(resource("aws:ec2/vpcEndpoint:VpcEndpoint"), "dnsOptions")[0]
    assert classify(resource("aws:ebs/volume:Volume"), "size")[:2] == (False, False)
    assert classify(resource("aws:ebs/volume:Volume", replace_on_changes=("size",)), "size")[0]
    assert classify(resource("aws:ec2/vpcEndpoint:VpcEndpoint"), "privateDnsEnabled")[:2] == (False, True)


def test_a_lustre_change_the_provider_may_turn_into_a_replacement_is_reported_as_one():
    """Shrinking the storage, a lower Lustre version or fewer metadata IOPS replace the file system
    (the provider's CustomizeDiff), though none of them is ForceNew: the data would go with it."""
    lustre = resource("aws:fsx/lustreFileSystem:LustreFileSystem")
    for path in ("storageCapacity", "fileSystemTypeVersion", "metadataConfiguration.iops"):
        forces, may, why = classify(lustre, path)
        assert (forces, may) == (False, True) and "CustomizeDiff" in why, path
    assert classify(lustre, "perUnitStorageThroughput")[:2] == (False, False)


def test_intended_replacements_are_validated_in_the_stack_file(tmp_path):
    document = stack_document("Pulumi.notebooks.yaml")
    document["config"]["gpu-cloud:intendedReplacements"] = ["notebooks-key-key", "notebooks-key-key"]
    with pytest.raises(ConfigError) as error:
        settings_of(document, "notebooks", tmp_path)
    assert "gpu-cloud:intendedReplacements: lists notebooks-key-key more than once" in str(error.value)
    document["config"]["gpu-cloud:intendedReplacements"] = ["bad name"]
    with pytest.raises(ConfigError, match="gpu-cloud:intendedReplacements"):
        settings_of(document, "notebooks", tmp_path)


def test_a_stack_the_change_adds_is_all_creates(folder, notebooks_base):
    settings = settings_of(stack_document("Pulumi.notebooks.yaml"), "notebooks", folder)
    diff = diff_plans(empty_plan(settings), notebooks_base)
    assert {change.op for change in diff.changes} == {"create"} and diff.monthly_cost["base"]["desired"] == 0


def git(folder: Path, *arguments: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *arguments], cwd=folder,
                   capture_output=True, text=True, check=True)


def test_a_base_ref_git_does_not_know_exits_2(tmp_path, capsys):
    stack = tmp_path / "Pulumi.notebooks.yaml"
    stack.write_text((STACKS / "Pulumi.notebooks.yaml").read_text())
    git(tmp_path, "init", "-q")
    assert main(["plan", "--config", str(stack), "--base", "no-such-ref"]) == 2
    assert capsys.readouterr().err.startswith("error: --base no-such-ref: not a commit of the git repository holding")
    assert main(["plan", "--program", str(stack), "--base", "HEAD"]) == 2


def test_a_bad_base_names_the_ref_and_the_key(tmp_path, capsys):
    stack = tmp_path / "Pulumi.notebooks.yaml"
    document = stack_document("Pulumi.notebooks.yaml")
    document["config"]["gpu-cloud:budget"] = {"monthlyUsd": -1}
    stack.write_text(yaml.safe_dump(document))
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "bad budget")
    stack.write_text((STACKS / "Pulumi.notebooks.yaml").read_text())
    assert main(["plan", "--config", str(stack), "--base", "HEAD"]) == 2
    error = capsys.readouterr().err
    assert f"(HEAD:{stack}): gpu-cloud:budget.monthlyUsd" in error and "gpucloud-base-" not in error
