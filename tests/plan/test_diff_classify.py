"""How `gpucloud plan --base` classifies one property change (`plan/diff.py` `classify`): a change
that certainly replaces is not also "may replace", and `replaceOnChanges: ["*"]` replaces on any
change. Each test kills a mutant the diff's other tests let live (tests/mutation/README.md)."""

from __future__ import annotations

from typing import Any

from gpucloud.plan.diff import classify, diff_plans
from gpucloud.plan.model import Plan
from gpucloud.testing import AppliedResource

VOLUME = "aws:ebs/volume:Volume"


def volume(id: str, options: dict[str, Any] | None = None, **inputs: Any) -> AppliedResource:
    return AppliedResource(urn=f"urn:pulumi:s::p::{VOLUME}::home", type=VOLUME, name="home", custom=True, id=id,
                           inputs={"availabilityZone": "us-east-1a", "size": 100, "type": "gp3", **inputs},
                           outputs={}, **(options or {}))


def plan(resource: AppliedResource) -> Plan:
    return Plan(project="p", stack="s", region="us-east-1", resources=[resource], outputs={})


def test_any_change_replaces_a_resource_with_replace_on_changes_star():
    star = {"replace_on_changes": ("*",)}

    assert classify(volume("vol-1", star), "size", 100, 200) == (True, False, "replaceOnChanges resource option")
    assert diff_plans(plan(volume("vol-0aaaaaaaaaaaaaaa1", star)),
                      plan(volume("vol-0bbbbbbbbbbbbbbb2", star, size=200))).named("home").op == "replace"


def test_a_change_that_certainly_replaces_is_not_also_a_may_replace_warning():
    by_option = diff_plans(plan(volume("vol-0aaaaaaaaaaaaaaa1", {"replace_on_changes": ("size",)})),
                           plan(volume("vol-0bbbbbbbbbbbbbbb2", {"replace_on_changes": ("size",)}, size=200)))
    by_force_new = diff_plans(plan(volume("vol-0aaaaaaaaaaaaaaa1")),
                              plan(volume("vol-0bbbbbbbbbbbbbbb2", availabilityZone="us-east-1b")))

    for diff in (by_option, by_force_new):
        assert diff.named("home").op == "replace" and not diff.named("home").may_replace
        assert "may-replace" not in [finding.rule for finding in diff.findings]


def test_a_nested_property_of_replace_on_changes_replaces_on_its_change_only():
    nested = {"replace_on_changes": ("tags.Owner",)}
    tagged = volume("vol-1", nested, tags={"Owner": "ml", "Team": "a"})

    assert classify(tagged, "tags.Owner", "ml", "research")[0] is True
    assert classify(tagged, "tags.Team", "a", "b")[0] is False
    assert classify(volume("vol-1", {"replace_on_changes": ("size",)}), "tags.size", "a", "b")[0] is False


def test_a_lustre_shrink_replaces_without_a_may_replace_warning():
    lustre = "aws:fsx/lustreFileSystem:LustreFileSystem"

    def file_system(id: str, capacity: int) -> Plan:
        return Plan(project="p", stack="s", region="us-east-1", outputs={}, resources=[AppliedResource(
            urn=f"urn:pulumi:s::p::{lustre}::fs", type=lustre, name="fs", custom=True, id=id, outputs={},
            inputs={"deploymentType": "PERSISTENT_2", "storageCapacity": capacity})])

    diff = diff_plans(file_system("fs-0aaaaaaaaaaaaaaa1", 2400), file_system("fs-0bbbbbbbbbbbbbbb2", 1200))

    assert diff.named("fs").op == "replace" and not diff.named("fs").may_replace
    assert "may-replace" not in [finding.rule for finding in diff.findings]


def test_a_shrunk_volume_is_an_update_aws_refuses_and_a_grown_one_is_not():
    shrunk = diff_plans(plan(volume("vol-0aaaaaaaaaaaaaaa1", size=200)), plan(volume("vol-0bbbbbbbbbbbbbbb2", size=100)))
    grown = diff_plans(plan(volume("vol-0aaaaaaaaaaaaaaa1")), plan(volume("vol-0bbbbbbbbbbbbbbb2", size=200)))

    assert [(finding.rule, finding.severity) for finding in shrunk.findings] == [("update-refused", "failure")]
    assert shrunk.named("home").op == "update" and grown.findings == []


def test_a_new_launch_template_version_reaches_only_the_group_that_names_that_template():
    template, group = "aws:ec2/launchTemplate:LaunchTemplate", "aws:autoscaling/group:Group"

    def account(suffix: str, image: str) -> Plan:
        def made(name: str, type_: str, inputs: dict[str, Any], id: str) -> AppliedResource:
            return AppliedResource(urn=f"urn:pulumi:s::p::{type_}::{name}", type=type_, name=name, custom=True,
                                   id=id, inputs=inputs, outputs={})
        return Plan(project="p", stack="s", region="us-east-1", outputs={}, resources=[
            made("gpu", template, {"imageId": image}, f"lt-0{suffix}1"),
            made("cpu", template, {"imageId": "ami-cpu"}, f"lt-0{suffix}2"),
            made("gpu-group", group, {"maxSize": 2, "launchTemplate": {"id": f"lt-0{suffix}1", "version": "$Latest"}},
                 "gpu-group"),
            made("cpu-group", group, {"maxSize": 2, "launchTemplate": {"id": f"lt-0{suffix}2", "version": "$Latest"}},
                 "cpu-group")])

    diff = diff_plans(account("aaaaaaaaaaaaaaa", "ami-old"), account("bbbbbbbbbbbbbbb", "ami-new"))

    assert [item.path for item in diff.named("gpu-group").changes] == ["launchTemplate.version"]
    assert diff.named("cpu-group").op == "same"
