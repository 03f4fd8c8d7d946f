"""The order rules of `plan/change_order.py` and `plan/change_rules.py` one at a time, on hand-made
changes: which resources a user-given name makes the bridge replace delete-first, which program's
deleteBeforeReplace counts, names AWS keeps unique whatever their case, and a one-way rule given
values it cannot compare. Each test kills a mutant the example stacks' change tests let live
(tests/mutation/README.md)."""

from __future__ import annotations

from typing import Any

from gpucloud.plan.change_order import CREATE_FIRST, DELETE_FIRST, order_findings, replacement_order
from gpucloud.plan.change_rules import one_way
from gpucloud.plan.diff import PlanDiff, ResourceChange
from gpucloud.testing import AppliedResource


def resource(name: str, type_: str, inputs: dict[str, Any], **options: Any) -> AppliedResource:
    return AppliedResource(urn=f"urn:pulumi:s::p::{type_}::{name}", type=type_, name=name, custom=True,
                           inputs=inputs, **options)


def replaced(old: AppliedResource, new: AppliedResource) -> ResourceChange:
    change = ResourceChange("replace", new.urn, new.type, new.name, old, new)
    change.old_inputs, change.new_inputs = old.inputs, new.inputs
    return change


def named(name: str, type_: str, op: str, inputs: dict[str, Any]) -> ResourceChange:
    made = resource(name, type_, inputs)
    change = ResourceChange(op, made.urn, type_, name, made if op == "delete" else None, None if op == "delete" else made)
    change.old_inputs, change.new_inputs = (inputs, None) if op == "delete" else (None, inputs)
    return change


def test_a_given_name_makes_only_an_sdkv2_aws_resource_delete_first():
    """The bridge's delete-first rule is about SDKv2 resources of pulumi-aws; a plugin-framework
    resource of pulumi-aws and another provider's resource keep Pulumi's default."""
    orders = {type_: replacement_order(replaced(resource("r", type_, {"name": "a"}), resource("r", type_, {"name": "b"}))).order
              for type_ in ("aws:cloudwatch/logGroup:LogGroup", "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
                            "grafana:index/dashboard:Dashboard")}

    assert orders == {"aws:cloudwatch/logGroup:LogGroup": DELETE_FIRST,
                      "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": CREATE_FIRST,
                      "grafana:index/dashboard:Dashboard": CREATE_FIRST}


def test_the_changed_program_s_delete_before_replace_decides_the_order():
    """Pulumi reads the resource options of the program being applied, not those of the base."""
    type_ = "aws:ebs/volume:Volume"
    added = replaced(resource("v", type_, {"size": 1}), resource("v", type_, {"size": 2}, delete_before_replace=True))
    dropped = replaced(resource("v", type_, {"size": 1}, delete_before_replace=True),
                       resource("v", type_, {"size": 2}, delete_before_replace=False))

    assert replacement_order(added).order == DELETE_FIRST
    assert "deleteBeforeReplace resource option is true" in replacement_order(added).why
    assert replacement_order(dropped).order == CREATE_FIRST


def test_an_iam_name_collides_whatever_its_case_and_a_parameter_name_only_as_written():
    """IAM role names are unique without regard to case (the rule's ignoreCase); SSM parameter
    names are case-sensitive."""
    role = "aws:iam/role:Role"
    parameter = "aws:ssm/parameter:Parameter"
    diff = PlanDiff(base=None, current=None, changes=[  # type: ignore[arg-type]
        named("new-role", role, "create", {"name": "Trainer"}),
        named("old-role", role, "delete", {"name": "trainer"}),
        named("new-parameter", parameter, "create", {"name": "/team/Token"}),
        named("old-parameter", parameter, "delete", {"name": "/team/token"}),
    ])

    assert [(finding.rule, finding.urn.rsplit("::", 1)[1]) for finding in order_findings(diff)] == [
        ("change-order-collision", "new-role")]


def test_a_resource_on_a_replaced_parent_holds_nothing_of_the_old_parent():
    """An association created on a file system that is itself replaced lands on the new file
    system: the old one's association at the same path is no collision."""
    association = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"
    link = {"fileSystemId": "${fs.id}", "fileSystemPath": "/data/", "dataRepositoryPath": "s3://bucket/data/"}
    lustre = "aws:fsx/lustreFileSystem:LustreFileSystem"
    diff = PlanDiff(base=None, current=None, changes=[  # type: ignore[arg-type]
        replaced(resource("fs", lustre, {"storageCapacity": 2400}), resource("fs", lustre, {"storageCapacity": 1200})),
        named("link-new", association, "create", link),
        named("link-old", association, "delete", link),
    ])

    assert order_findings(diff) == []


def test_a_resource_without_the_unique_value_does_not_stop_the_check_of_the_next():
    """Neither an arriving nor a leaving target group without a name ends the search for the one
    that holds the name."""
    target_group = "aws:lb/targetGroup:TargetGroup"
    diff = PlanDiff(base=None, current=None, changes=[  # type: ignore[arg-type]
        named("auto-named", target_group, "create", {"port": 80}),
        named("servers", target_group, "create", {"name": "tg-a", "port": 80}),
        named("old-auto-named", target_group, "delete", {"port": 8080}),
        named("old-servers", target_group, "delete", {"name": "tg-a", "port": 8080}),
    ])

    assert [finding.urn.rsplit("::", 1)[1] for finding in order_findings(diff)] == ["servers"]


def test_a_create_first_replacement_does_not_stop_the_check_of_a_delete_first_one():
    target_group = "aws:lb/targetGroup:TargetGroup"
    listener = {"defaultActions": [{"type": "forward", "targetGroupArn": "${named.id}"}], "port": 80}
    forwarding = named("listener", "aws:lb/listener:Listener", "update", listener)
    forwarding.old_inputs = listener
    diff = PlanDiff(base=None, current=None, changes=[  # type: ignore[arg-type]
        replaced(resource("auto", target_group, {"port": 80}), resource("auto", target_group, {"port": 81})),
        replaced(resource("named", target_group, {"name": "tg-a", "port": 80}),
                 resource("named", target_group, {"name": "tg-a", "port": 81})),
        forwarding,
    ])

    assert [(finding.rule, finding.urn.rsplit("::", 1)[1]) for finding in order_findings(diff)] == [
        ("change-order-in-use", "named")]


def test_a_one_way_rule_given_a_number_and_a_string_only_may_replace():
    """A shrink rule compares numbers; a value of another kind (a size written as a string) cannot
    tell the direction, so a replacing rule only may replace, and nothing raises."""
    lustre = "aws:fsx/lustreFileSystem:LustreFileSystem"

    outcome = one_way(lustre, "storageCapacity", 2400, "1200", {"deploymentType": "PERSISTENT_2"})

    assert outcome is not None and outcome.outcome == "may replace"
    assert one_way(lustre, "storageCapacity", "2400", 1200, {"deploymentType": "PERSISTENT_2"}).outcome == "may replace"
