"""What a reviewer of a stack change is told, finding by finding, on hand-made changes (no engine):
data replaced or deleted and whether the stack file intends it, a group replaced with the nodes it
ends, a launch template change that rolls every node, an update AWS refuses, a wider grant, a
change that may replace, and an intended entry the change does not use."""

from __future__ import annotations

import json
from typing import Any

from gpucloud.plan.diff_findings import INTENDED_KEY, cause, diff_findings, nodes_of, shown
from gpucloud.plan.diff_model import PlanDiff, PropertyChange, ResourceChange
from gpucloud.plan.model import Plan
from gpucloud.testing import AppliedResource

VOLUME = "aws:ebs/volume:Volume"
GROUP = "aws:autoscaling/group:Group"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"


def resource(name: str, type_: str, inputs: dict[str, Any] | None = None, **options: Any) -> AppliedResource:
    return AppliedResource(urn=f"urn:pulumi:s::p::{type_}::{name}", type=type_, name=name, custom=True,
                           inputs=inputs or {}, **options)


def change(op: str, name: str, type_: str, *changes: PropertyChange, old: dict[str, Any] | None = None,
           new: dict[str, Any] | None = None, **options: Any) -> ResourceChange:
    before = resource(name, type_, old, **options) if op in ("update", "replace", "delete", "same") else None
    after = resource(name, type_, new) if op in ("update", "replace", "create", "same") else None
    return ResourceChange(op, f"urn:pulumi:s::p::{type_}::{name}", type_, name, before, after, list(changes))


def findings(*changes: ResourceChange, intended: tuple[str, ...] = ()) -> list[tuple[str, str, str]]:
    plan = Plan(project="p", stack="s", region="us-east-1", resources=[], outputs={})
    diff = PlanDiff(base=plan, current=plan, changes=list(changes))
    return [(finding.rule, finding.severity, finding.message) for finding in diff_findings(diff, intended)]


ZONE = PropertyChange("availabilityZone", "us-east-1a", "us-east-1b", True, "ForceNew on availabilityZone")
VOLUME_TEXT = "a persistent EBS volume: its data does not move to the new volume"


def test_a_replaced_volume_fails_and_names_the_key_that_would_let_it_through():
    assert findings(change("replace", "home", VOLUME, ZONE)) == [(
        "data-replaced", "failure",
        f'home ({VOLUME}) is replaced: availabilityZone "us-east-1a" -> "us-east-1b" forces it: ForceNew on '
        f"availabilityZone; it is {VOLUME_TEXT}. If that is intended, list home under {INTENDED_KEY} in the stack file")]


def test_an_intended_replacement_is_information_and_an_unused_intended_entry_a_warning():
    assert findings(change("replace", "home", VOLUME, ZONE), intended=("home", "scratch")) == [
        ("intended-replacement", "info",
         f'home ({VOLUME}) is replaced: availabilityZone "us-east-1a" -> "us-east-1b" forces it: ForceNew on '
         f"availabilityZone; it is {VOLUME_TEXT} (intended: listed under {INTENDED_KEY})"),
        ("intended-replacement-unused", "warning",
         f"{INTENDED_KEY} lists scratch, which this change neither replaces nor deletes: remove it, or it will let "
         "a later replacement through unreviewed")]


def test_a_resource_that_holds_no_data_is_replaced_without_a_finding():
    assert findings(change("replace", "web", "aws:ec2/securityGroup:SecurityGroup",
                           PropertyChange("vpcId", "vpc-1", "vpc-2", True, "ForceNew on vpcId"))) == []
    assert findings(change("update", "home", VOLUME, PropertyChange("size", 100, 200))) == []


def test_a_deleted_file_system_says_why_and_what_guards_it():
    [(rule, severity, message)] = findings(change("delete", "scratch", LUSTRE, protect=True, retain_on_delete=True))

    assert (rule, severity) == ("data-replaced", "failure")
    assert message.startswith(f"scratch ({LUSTRE}) is deleted: it is no longer in the program of the changed stack file "
                              "(a renamed or removed group or setting); it is a file system: its files do not move to "
                              "the new one; it is protected, so `pulumi up` stops until it is unprotected and it is "
                              "retained on delete, so the old one stays in the account outside the stack. ")


def test_each_guard_is_named_alone():
    [(_, _, protected)] = findings(change("delete", "a", VOLUME, protect=True))
    [(_, _, retained)] = findings(change("delete", "b", VOLUME, retain_on_delete=True))

    assert f"{VOLUME_TEXT}; it is protected, so `pulumi up` stops until it is unprotected. If" in protected
    assert f"{VOLUME_TEXT}; it is retained on delete, so the old one stays in the account outside the stack. If" in retained


def test_the_cause_names_the_first_reason_and_counts_the_others():
    size = PropertyChange("storageCapacity", 2400, 1200, True, "a Lustre shrink replaces")
    deployment = PropertyChange("deploymentType", "SCRATCH_2", "PERSISTENT_2", True, "ForceNew on deploymentType")

    assert cause(change("replace", "fs", LUSTRE, size, deployment)) == (
        "storageCapacity 2400 -> 1200 forces it: a Lustre shrink replaces (and 1 more)")
    assert cause(change("replace", "fs", LUSTRE, PropertyChange("tags.Name", "a", "b"), size)) == (
        "storageCapacity 2400 -> 1200 forces it: a Lustre shrink replaces")


def test_a_value_is_shown_in_one_line_of_at_most_a_hundred_characters():
    assert shown("(known after apply)") == "(known after apply)"
    assert shown("plain") == '"plain"' and shown({"b": 1, "a": None}) == '{"a": null, "b": 1}'
    assert shown("x" * 98) == '"' + "x" * 98 + '"'
    assert shown("x" * 99) == '"' + "x" * 96 + "..."


def test_the_nodes_of_a_group_are_its_desired_capacity_else_its_minimum():
    assert nodes_of({"desiredCapacity": 0, "minSize": 2}) == 0
    assert nodes_of({"desiredCapacity": 3, "minSize": 1}) == 3
    assert nodes_of({"minSize": 2}) == 2 and nodes_of({"minSize": None}) == 0 and nodes_of({}) == 0


def test_a_replaced_group_names_the_nodes_it_ends_and_the_group_created_in_its_place():
    replaced = change("replace", "train", GROUP, PropertyChange("name", "train-a", "train-b", True, "ForceNew on name"),
                      old={"desiredCapacity": 2, "minSize": 1})

    assert findings(change("create", "train-v2", GROUP), change("create", "other", GROUP), replaced,
                    change("create", "web", "aws:ec2/securityGroup:SecurityGroup")) == [(
        "group-replaced", "warning",
        'train is replaced: name "train-a" -> "train-b" forces it: ForceNew on name; its 2 running node(s) (desired '
        "capacity 2 in the base) are terminated; train-v2, other is created in its place and starts empty")]


def test_a_deleted_group_without_a_successor_says_only_what_it_ends():
    assert findings(change("delete", "train", GROUP, old={"minSize": 1})) == [(
        "group-replaced", "warning",
        "train is deleted: it is no longer in the program of the changed stack file (a renamed or removed group or "
        "setting); its 1 running node(s) (desired capacity 1 in the base) are terminated")]


ROLL = PropertyChange("launchTemplate.version", "3", "(new version of gpu-lt)")


def test_a_new_template_version_under_instance_refresh_rolls_every_node():
    group = change("update", "train", GROUP, ROLL, PropertyChange("mixedInstancesPolicy.version", "1", "(new version of a-lt)"),
                   new={"instanceRefresh": {"strategy": "Rolling"}, "desiredCapacity": 4, "maxSize": 6})

    assert findings(group) == [(
        "rolling-refresh", "warning",
        "train: a-lt, gpu-lt change(s), and the group's instance refresh replaces every node with the new version: "
        "4 node(s) at desired capacity 4, up to maxSize 6")]


def test_no_roll_without_instance_refresh_a_new_version_or_an_update():
    refresh = {"instanceRefresh": {"strategy": "Rolling"}, "minSize": 1}
    assert findings(change("update", "train", GROUP, ROLL, new={"minSize": 1})) == []
    assert findings(change("update", "train", GROUP, PropertyChange("launchTemplate.version", "3", "4"), new=refresh)) == []
    assert findings(change("update", "train", GROUP, PropertyChange("launchTemplate.id", "a", "(new version of x)"),
                           new=refresh)) == []
    assert findings(change("update", "train", GROUP, PropertyChange("launchTemplate.version", 3, 4), new=refresh)) == []
    assert [rule for rule, _, _ in findings(change("replace", "train", GROUP, ROLL, ZONE,
                                                   old={"minSize": 1}, new=refresh))] == ["group-replaced"]


def test_an_update_aws_refuses_fails_naming_the_property_and_why():
    shrink = PropertyChange("size", 200, 100, reason="EC2 ModifyVolume only grows a volume", refused=True)

    assert findings(change("update", "home", VOLUME, PropertyChange("tags.Owner", "a", "b"), shrink)) == [(
        "update-refused", "failure", f"home ({VOLUME}): size 200 -> 100 cannot be applied: EC2 ModifyVolume only grows a volume")]


def document(*actions: str) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Sid": "Data", "Effect": "Allow", "Action": list(actions), "Resource": "arn:aws:s3:::team/*"}]})


def test_a_wider_policy_document_is_a_warning_naming_each_statement_and_what_it_adds():
    wider = PropertyChange("policy", document("s3:GetObject"), document("s3:GetObject", "s3:PutObject"))

    assert findings(change("update", "node", ROLE_POLICY, PropertyChange("name", "node-a", "node-b"), wider)) == [(
        "grant-widened", "warning",
        f"node ({ROLE_POLICY}): policy grants more than the base: Data: actions s3:PutObject")]


def test_a_new_policy_document_is_widened_from_nothing_and_a_narrower_one_or_another_value_is_not():
    new = PropertyChange("policy", None, document("s3:GetObject"))
    narrower = PropertyChange("policy", document("s3:GetObject", "s3:PutObject"), document("s3:GetObject"))
    no_policy = PropertyChange("policy", document("s3:GetObject"), json.dumps({"widgets": []}))

    assert findings(change("update", "node", ROLE_POLICY, new)) == [(
        "grant-widened", "warning",
        f"node ({ROLE_POLICY}): policy grants more than the base: Data: actions s3:GetObject; resources arn:aws:s3:::team/*")]
    assert findings(change("update", "node", ROLE_POLICY, narrower, no_policy)) == []


def test_two_widened_statements_are_joined_in_one_warning_per_document():
    two = json.dumps({"Statement": [{"Sid": "A", "Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "*"},
                                    {"Sid": "B", "Effect": "Allow", "Action": "sns:Publish", "Resource": "*"}]})
    other = PropertyChange("assumeRolePolicy", None, document("sts:AssumeRole"))

    assert [message for _, _, message in findings(change("update", "node", ROLE_POLICY, PropertyChange("policy", "{}", two),
                                                         other))] == [
        f"node ({ROLE_POLICY}): policy grants more than the base: A: actions sqs:SendMessage; resources * | "
        "B: actions sns:Publish; resources *",
        f"node ({ROLE_POLICY}): assumeRolePolicy grants more than the base: Data: actions sts:AssumeRole; "
        "resources arn:aws:s3:::team/*"]


def test_a_change_that_may_replace_names_its_paths_and_the_first_reason():
    unknown = PropertyChange("storageCapacity", 2400, "(known after apply)", reason="behaviour not known", may_replace=True)
    other = PropertyChange("throughput", 1, 2, reason="second reason", may_replace=True)

    assert findings(change("update", "fs", LUSTRE, PropertyChange("tags.Name", "a", "b"), unknown, other)) == [(
        "may-replace", "warning",
        f"fs ({LUSTRE}) may be replaced: storageCapacity, throughput changes and behaviour not known")]


def test_findings_follow_the_changes_and_the_order_checks_and_unused_entries_come_last():
    shrink = PropertyChange("size", 200, 100, reason="only grows", refused=True)
    rules = [rule for rule, _, _ in findings(change("update", "home", VOLUME, shrink), change("delete", "old", VOLUME),
                                             intended=("gone",))]

    assert rules == ["update-refused", "data-replaced", "intended-replacement-unused"]
