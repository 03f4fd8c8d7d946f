"""How a replacement reaches what refers to it (`plan/diff.py` `_cascade`), and what a replaced
property is not, on hand-made plans: each test kills a mutant the diff's other tests let live
(tests/mutation/README.md)."""

from __future__ import annotations

import json
from typing import Any

from gpucloud.plan.diff import diff_plans
from gpucloud.plan.model import Plan
from gpucloud.testing import AppliedResource

SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
VOLUME = "aws:ebs/volume:Volume"


def applied(name: str, type_: str, inputs: dict[str, Any], *, id: str | None = None, **options: Any) -> AppliedResource:
    return AppliedResource(urn=f"urn:pulumi:s::p::{type_}::{name}", type=type_, name=name, custom=True, id=id,
                           inputs=inputs, outputs={}, **options)


def plan(*resources: AppliedResource) -> Plan:
    return Plan(project="p", stack="s", region="us-east-1", resources=list(resources), outputs={})


def group(name: str, id: str, suffix: str = "") -> AppliedResource:
    return applied(name, SECURITY_GROUP, {"name": name + suffix, "description": name, "vpcId": "vpc-0123456789abcdef0"}, id=id)


def template(group_id: str, instance_type: str) -> AppliedResource:
    return applied("lt", TEMPLATE, {"imageId": "ami-0123456789abcdef0", "instanceType": instance_type,
                                    "vpcSecurityGroupIds": ["sg-0fffffffffffffff9", group_id]}, id="lt-0123456789abcdef0")


def test_a_reference_in_a_list_after_a_changed_property_is_carried_too():
    """The template's instance type changes (a path already known), then a list names the replaced group."""
    base = plan(group("nodes", "sg-0aaaaaaaaaaaaaaa1"), template("sg-0aaaaaaaaaaaaaaa1", "g5.xlarge"))
    current = plan(group("nodes", "sg-0bbbbbbbbbbbbbbb2", "-2"), template("sg-0bbbbbbbbbbbbbbb2", "g5.2xlarge"))

    change = diff_plans(base, current).named("lt")

    assert [(item.path, item.new) for item in change.changes] == [
        ("instanceType", "g5.2xlarge"), ("vpcSecurityGroupIds[1]", "(known after apply: nodes is replaced)")]


def test_a_resource_created_first_does_not_end_the_search_for_those_that_refer_to_a_replacement():
    base = plan(group("nodes", "sg-0aaaaaaaaaaaaaaa1"), template("sg-0aaaaaaaaaaaaaaa1", "g5.xlarge"))
    current = plan(group("web", "sg-0ccccccccccccccc3"), group("nodes", "sg-0bbbbbbbbbbbbbbb2", "-2"),
                   template("sg-0bbbbbbbbbbbbbbb2", "g5.xlarge"))

    diff = diff_plans(base, current)

    assert [(change.name, change.op) for change in diff.changes] == [("web", "create"), ("nodes", "replace"), ("lt", "update")]


def test_a_value_that_names_two_replaced_resources_names_the_first_of_them():
    ids = {"alpha": ("sg-0aaaaaaaaaaaaaaa1", "sg-0aaaaaaaaaaaaaaa2"), "mike": ("sg-0bbbbbbbbbbbbbbb1", "sg-0bbbbbbbbbbbbbbb2"),
           "zulu": ("sg-0ccccccccccccccc1", "sg-0ccccccccccccccc2")}

    def side(index: int, suffix: str) -> Plan:
        document = json.dumps({"Resource": [f"arn:aws:ec2:us-east-1:111122223333:security-group/{ids[name][index]}"
                                            for name in ("zulu", "mike")]})
        return plan(*(group(name, pair[index], suffix) for name, pair in ids.items()),
                    applied("policy", ROLE_POLICY, {"name": "nodes", "role": "node-role", "policy": document}))

    change = diff_plans(side(0, ""), side(1, "-2")).named("policy")

    assert [(item.path, item.new) for item in change.changes] == [("policy", "(known after apply: mike is replaced)")]


def test_a_one_way_property_of_a_replaced_resource_is_no_refused_update():
    """A volume replaced on its size (replaceOnChanges) is a new volume of the new size: the
    shrink AWS refuses in place does not apply."""
    replacing = {"replace_on_changes": ("size",)}
    base = plan(applied("home", VOLUME, {"availabilityZone": "us-east-1a", "size": 200, "type": "gp3"},
                        id="vol-0aaaaaaaaaaaaaaa1", **replacing))
    current = plan(applied("home", VOLUME, {"availabilityZone": "us-east-1a", "size": 100, "type": "gp3"},
                           id="vol-0bbbbbbbbbbbbbbb2", **replacing))

    diff = diff_plans(base, current)

    assert diff.named("home").op == "replace" and diff.named("home").refused == []
    assert [finding.rule for finding in diff.findings] == ["data-replaced"]
