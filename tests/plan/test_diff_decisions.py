"""How `gpucloud plan --base` decides each resource's operation, on two hand-made plans instead of
two engine runs: create, delete, update or replace, the ids of two fresh accounts compared as
references, ignored properties, and a replacement or a new launch template version carried to what
refers to it. The engine-run changes of the example stacks are in test_plan_diff.py."""

from __future__ import annotations

from typing import Any

from gpucloud.plan.diff import diff_plans, identifiers, leaf_changes, references
from gpucloud.plan.model import Plan
from gpucloud.testing import AppliedResource

VOLUME = "aws:ebs/volume:Volume"
GROUP = "aws:autoscaling/group:Group"
TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"


def applied(name: str, type_: str, inputs: dict[str, Any], *, id: str | None = None,
            outputs: dict[str, Any] | None = None, custom: bool = True, **options: Any) -> AppliedResource:
    return AppliedResource(urn=f"urn:pulumi:s::p::{type_}::{name}", type=type_, name=name, custom=custom, id=id,
                           inputs=inputs, outputs=outputs or {}, **options)


def plan(*resources: AppliedResource) -> Plan:
    return Plan(project="p", stack="s", region="us-east-1", resources=list(resources), outputs={})


def volume(id: str, options: dict[str, Any] | None = None, **inputs: Any) -> AppliedResource:
    return applied("home", VOLUME, {"availabilityZone": "us-east-1a", "size": 100, "type": "gp3", **inputs},
                   id=id, outputs={"arn": f"arn:aws:ec2:us-east-1:111122223333:volume/{id}"}, **(options or {}))


def test_a_grown_volume_is_updated_in_place():
    diff = diff_plans(plan(volume("vol-0aaaaaaaaaaaaaaa1")), plan(volume("vol-0bbbbbbbbbbbbbbb2", size=200)))

    change = diff.named("home")
    assert change.op == "update" and [(item.path, item.old, item.new) for item in change.changes] == [("size", 100, 200)]
    assert not change.replace_reasons and diff.summary == {"update": 1}


def test_a_volume_moved_to_another_zone_is_replaced_and_fails_the_diff():
    diff = diff_plans(plan(volume("vol-0aaaaaaaaaaaaaaa1")),
                      plan(volume("vol-0bbbbbbbbbbbbbbb2", availabilityZone="us-east-1b")))

    change = diff.named("home")
    assert change.op == "replace"
    assert [item.path for item in change.replace_reasons] == ["availabilityZone"]
    assert "ForceNew on availabilityZone" in change.replace_reasons[0].reason
    assert diff.failed and [finding.rule for finding in diff.findings if finding.severity == "failure"] == ["data-replaced"]


def test_the_same_resource_on_two_fresh_accounts_is_the_same():
    diff = diff_plans(plan(volume("vol-0aaaaaaaaaaaaaaa1")), plan(volume("vol-0bbbbbbbbbbbbbbb2")))

    assert diff.named("home").op == "same" and not diff.failed and diff.summary == {"same": 1}


def test_a_resource_only_in_the_change_is_created_and_one_only_in_the_base_deleted():
    base = plan(volume("vol-0aaaaaaaaaaaaaaa1"))
    current = plan(applied("web", SECURITY_GROUP, {"name": "web", "description": "d", "vpcId": "vpc-1"}))

    diff = diff_plans(base, current)

    assert [(change.name, change.op) for change in diff.changes] == [("web", "create"), ("home", "delete")]
    assert [(finding.rule, finding.severity) for finding in diff.findings] == [("data-replaced", "failure")]


def test_an_ignored_property_is_listed_but_changes_nothing():
    ignoring = {"ignore_changes": ("tags",)}
    base = plan(volume("vol-0aaaaaaaaaaaaaaa1", ignoring, tags={"Owner": "ml"}))
    current = plan(volume("vol-0bbbbbbbbbbbbbbb2", ignoring, tags={"Owner": "research"}))

    change = diff_plans(base, current).named("home")

    assert change.op == "same" and [item.path for item in change.ignored] == ["tags.Owner"]


def test_replace_on_changes_replaces_what_the_provider_would_update():
    replacing = {"replace_on_changes": ("size",)}
    base = plan(volume("vol-0aaaaaaaaaaaaaaa1", replacing))
    current = plan(volume("vol-0bbbbbbbbbbbbbbb2", replacing, size=200))

    change = diff_plans(base, current).named("home")

    assert change.op == "replace" and change.replace_reasons[0].reason == "replaceOnChanges resource option"


def security_group(id: str, name: str) -> AppliedResource:
    return applied("nodes", SECURITY_GROUP, {"name": name, "description": "nodes", "vpcId": "vpc-0123456789abcdef0"},
                   id=id, outputs={"arn": f"arn:aws:ec2:us-east-1:111122223333:security-group/{id}"})


def node_policy(group_id: str) -> AppliedResource:
    document = f'{{"Resource": "arn:aws:ec2:us-east-1:111122223333:security-group/{group_id}"}}'
    return applied("policy", ROLE_POLICY, {"name": "nodes", "role": "node-role", "policy": document})


def test_a_replaced_resource_hands_its_new_ids_to_what_refers_to_it():
    base = plan(security_group("sg-0aaaaaaaaaaaaaaa1", "nodes"), node_policy("sg-0aaaaaaaaaaaaaaa1"))
    same = plan(security_group("sg-0bbbbbbbbbbbbbbb2", "nodes"), node_policy("sg-0bbbbbbbbbbbbbbb2"))
    renamed = plan(security_group("sg-0ccccccccccccccc3", "nodes-2"), node_policy("sg-0ccccccccccccccc3"))

    assert diff_plans(base, same).summary == {"same": 2}, "ids inside a document compare by reference"
    diff = diff_plans(base, renamed)
    assert diff.named("nodes").op == "replace"
    policy = diff.named("policy")
    assert policy.op == "update"
    assert [(item.path, item.new) for item in policy.changes] == [("policy", "(known after apply: nodes is replaced)")]


def template(id: str, image: str) -> AppliedResource:
    return applied("lt", TEMPLATE, {"imageId": image, "instanceType": "g5.xlarge"}, id=id)


def group(template_id: str, **inputs: Any) -> AppliedResource:
    return applied("workers", GROUP, {"maxSize": 2, "minSize": 0, "desiredCapacity": 1, "instanceRefresh": {"strategy": "Rolling"},
                                      "launchTemplate": {"id": template_id, "version": "1"}, **inputs})


def test_a_new_launch_template_version_updates_the_group_that_names_it_and_rolls_its_nodes():
    base = plan(template("lt-0aaaaaaaaaaaaaaa1", "ami-1"), group("lt-0aaaaaaaaaaaaaaa1"))
    current = plan(template("lt-0bbbbbbbbbbbbbbb2", "ami-2"), group("lt-0bbbbbbbbbbbbbbb2"))

    diff = diff_plans(base, current)

    assert diff.named("lt").op == "update"
    workers = diff.named("workers")
    assert workers.op == "update"
    assert [(item.path, item.new) for item in workers.changes] == [
        ("launchTemplate.version", "(known after apply: new version of lt)")]
    assert [finding.rule for finding in diff.findings] == ["rolling-refresh"]


def test_a_group_whose_template_is_unchanged_is_left_alone():
    base = plan(template("lt-0aaaaaaaaaaaaaaa1", "ami-1"), group("lt-0aaaaaaaaaaaaaaa1"))
    current = plan(template("lt-0bbbbbbbbbbbbbbb2", "ami-1"), group("lt-0bbbbbbbbbbbbbbb2", maxSize=3))

    diff = diff_plans(base, current)

    assert diff.named("lt").op == "same" and diff.named("workers").op == "update"
    assert [item.path for item in diff.named("workers").changes] == ["maxSize"]
    assert diff.findings == []


def test_changed_leaves_are_found_at_every_depth_and_empty_blocks_equal_none():
    old = {"a": {"b": 1, "c": [1, 2]}, "d": None, "e": [], "f": {"g": 1}}
    new = {"a": {"b": 2, "c": [1, 2, 3]}, "d": [], "e": None, "f": None, "h": "x"}

    assert list(leaf_changes(old, new)) == [
        ("a.b", 1, 2), ("a.c[2]", None, 3), ("f", {"g": 1}, None), ("h", None, "x")]
    assert list(leaf_changes([], [{"a": 1}])) == [("", [], [{"a": 1}])]
    assert list(leaf_changes([1, 2], [1])) == [("[1]", 2, None)]


def test_only_values_aws_hands_out_are_references():
    handed_out = applied("key", "aws:kms/key:Key", {}, id="0123abcd-aaaa-bbbb-cccc-0123456789ab", outputs={
        "arn": "arn:aws:kms:us-east-1:111122223333:key/0123abcd", "keyId": "0123abcd-aaaa-bbbb-cccc-0123456789ab",
        "accountId": "111122223333", "enabled": True, "description": "short", "keyUsage": "ENCRYPT_DECRYPT",
        "dashboardId": 1})
    role = applied("role", "aws:iam/role:Role", {}, id="gpu-cloud-node", outputs={"name": "gpu-cloud-node"})
    component = applied("env", "gpu-cloud:index:Environment", {}, id="abcdef0123456789", custom=False)

    table = references(plan(handed_out, role, component))

    assert table == {"0123abcd-aaaa-bbbb-cccc-0123456789ab": "${key.id}",
                     "arn:aws:kms:us-east-1:111122223333:key/0123abcd": "${key.arn}",
                     "gpu-cloud-node": "${role.id}"}
    assert identifiers(plan(handed_out)) == {"1": "${key.dashboardId}"}


def test_an_identifier_that_looks_like_any_value_is_a_reference_only_under_an_identifier_name():
    def dashboard(id_: int, panels: int) -> Plan:
        board = applied("board", "grafana:index/dashboard:Dashboard", {"title": "t"}, id="uid-abcdef0123",
                        outputs={"dashboardId": id_})
        alert = applied("alert", "grafana:index/rule:Rule", {"dashboardId": id_, "panels": panels})
        return plan(board, alert)

    diff = diff_plans(dashboard(1, 1), dashboard(7, 1))
    assert diff.named("alert").op == "same", "the dashboard's id, whatever the account handed out"
    diff = diff_plans(dashboard(1, 1), dashboard(1, 2))
    assert [(item.path, item.old, item.new) for item in diff.named("alert").changes] == [("panels", 1, 2)]


LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"


def test_a_one_way_rule_whose_new_value_is_not_known_yet_only_may_replace():
    from gpucloud.plan.change_rules import one_way

    scratch = {"deploymentType": "SCRATCH_1"}
    assert one_way(LUSTRE, "storageCapacity", 1200, 2400, scratch).outcome == "replaces"
    for unknown in ("(known after apply: fs is replaced)", "${fs.id}", None):
        assert one_way(LUSTRE, "storageCapacity", 1200, unknown, scratch).outcome == "may replace", unknown
        assert one_way(LUSTRE, "storageCapacity", unknown, 1200, scratch).outcome == "may replace", unknown


def test_without_values_only_a_replacing_one_way_rule_may_replace():
    from gpucloud.plan.change_rules import may_be_one_way

    assert may_be_one_way(LUSTRE, "storageCapacity").outcome == "may replace"
    assert may_be_one_way(LUSTRE, "throughputCapacity") is None, "a refusal needs the values"
    assert may_be_one_way(VOLUME, "size") is None
