"""Changes that can be applied: every example stack, and its group, changed the ways people change
them (a data prefix added, the endpoint's port changed, resized, the group renamed, moved to another
zone), each diff either applying in the order Pulumi runs it or failing with a finding that says
why and what to do.

Each plan is one engine run, made once per module and shared: a stack's base plan serves all its
changes (`Plans`), and is the test process's plan of the stack file (`support.plan_once`), which
other files plan too."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpucloud.config import load_stack_file
from gpucloud.plan.change_order import CREATE_FIRST, DELETE_FIRST, order_findings, replacement_order
from gpucloud.plan.diff import PlanDiff, ResourceChange, diff_plans, identifiers, references
from gpucloud.plan.diff_json import to_preview_json
from gpucloud.plan.preview import plan_stack
from gpucloud.testing import AppliedResource
from gpucloud.testing.facts import load_facts
from support import EXAMPLE_STACKS, STACKS, plan_once

WITH_FACTS = {"frontier-train": STACKS / "capacity-block-example", "team-vpc": STACKS / "own-vpc-example"}
ALL_STACKS = [*EXAMPLE_STACKS, *WITH_FACTS]

Edit = Callable[[dict[str, Any]], None]


def config(document: dict[str, Any]) -> dict[str, Any]:
    return document["config"]


def the_group(document: dict[str, Any]) -> dict[str, Any]:
    return config(document)["gpu-cloud:groups"][0]


class Plans:
    """Plans of the example stacks, each base and each named change planned once; a base is the
    stack file as it is, a change the file's document edited and written to `folder`."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.made: dict[tuple[str, str], Any] = {}

    def source(self, stack: str) -> Path:
        return WITH_FACTS.get(stack, STACKS) / f"Pulumi.{stack}.yaml"

    def document(self, stack: str) -> dict[str, Any]:
        return yaml.safe_load(self.source(stack).read_text())

    def facts(self, stack: str) -> Path | None:
        return WITH_FACTS[stack] / "facts" / f"{stack}.yaml" if stack in WITH_FACTS else None

    def plan(self, stack: str, label: str = "base", edit: Edit | None = None):
        if (stack, label) not in self.made:
            self.made[stack, label] = self.base(stack) if label == "base" else self.changed(stack, label, edit)
        return self.made[stack, label]

    def base(self, stack: str):
        return plan_once(self.source(stack), self.facts(stack)), load_stack_file(self.source(stack))

    def changed(self, stack: str, label: str, edit: Edit | None):
        document = self.document(stack)
        if edit is not None:
            edit(document)
        path = self.folder / label / f"Pulumi.{stack}.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(yaml.safe_dump(document))
        facts = load_facts(self.facts(stack)) if stack in WITH_FACTS else None
        return plan_stack(load_stack_file(path), None, facts), load_stack_file(path)

    def diff(self, stack: str, label: str, edit: Edit) -> PlanDiff:
        base, _ = self.plan(stack)
        current, settings = self.plan(stack, label, edit)
        return diff_plans(base, current, intended=tuple(settings.config.intended_replacements))


@pytest.fixture(scope="module")
def plans(tmp_path_factory) -> Plans:
    return Plans(tmp_path_factory.mktemp("changes"))


def failures(diff: PlanDiff) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for finding in diff.findings:
        if finding.severity == "failure":
            found.setdefault(finding.rule, []).append(finding.message)
    return found


def ops(diff: PlanDiff, fragment: str) -> dict[str, str]:
    return {change.name: change.op for change in diff.changes if fragment in change.name and change.op != "same"}


# The changes, per stack where they apply. Each names the failure rules its diff must raise (none:
# it applies as it is).

def append_read_prefix(document: dict[str, Any]) -> None:
    config(document)["gpu-cloud:data"]["readPrefixes"].append("datasets/extra/")


def insert_read_prefix(document: dict[str, Any]) -> None:
    config(document)["gpu-cloud:data"]["readPrefixes"].insert(0, "datasets/laion/")


def add_data_prefix(document: dict[str, Any]) -> None:
    config(document)["gpu-cloud:data"] = {"bucket": "team-vpc-data", "readPrefixes": ["datasets/"]}


def change_port(document: dict[str, Any]) -> None:
    group = the_group(document)
    group["endpoint"]["port"] = 8080
    for container in group["services"]["containers"]:
        container["port"] = 8080
        container["command"] = [("8080" if item == "8000" else item) for item in container["command"]]


def resize(document: dict[str, Any]) -> None:
    """More nodes (where neither a persistent volume nor a Capacity Block holds the group to its
    size), bigger root, persistent and Lustre volumes."""
    group = the_group(document)
    group["rootVolumeGiB"] = group.get("rootVolumeGiB", 100) + 50
    if group.get("persistentVolumeGiB"):
        group["persistentVolumeGiB"] += 100
    elif not group.get("capacity"):
        group["maxSize"] += 2
    lustre = config(document).get("gpu-cloud:storage", {}).get("lustre")
    if lustre:
        lustre["storageCapacityGiB"] += 2400


def shrink_persistent_volume(document: dict[str, Any]) -> None:
    the_group(document)["persistentVolumeGiB"] = 100


def shrink_lustre(document: dict[str, Any]) -> None:
    config(document)["gpu-cloud:storage"]["lustre"]["storageCapacityGiB"] = 1200


def rename_group(document: dict[str, Any]) -> None:
    the_group(document)["name"] += "2"


def add_zone(document: dict[str, Any]) -> None:
    config(document).setdefault("gpu-cloud:network", {})["zones"] = 3


def move_lustre_zone(document: dict[str, Any]) -> None:
    config(document)["gpu-cloud:storage"]["lustre"]["zone"] = "us-east-1b"


def narrow_subnets(document: dict[str, Any]) -> None:
    config(document)["gpu-cloud:network"]["subnetIds"] = ["subnet-0a1b2c3d4e5f60002"]


CHANGES: dict[str, dict[str, tuple[Edit, set[str]]]] = {
    "llm-infer": {
        "add a prefix": (append_read_prefix, set()),
        "change the port": (change_port, set()),
        "resize": (resize, set()),
        "rename the group": (rename_group, {"data-replaced"}),
        "add a zone": (add_zone, set()),
    },
    "notebooks": {
        "add a prefix": (append_read_prefix, set()),
        "resize": (resize, set()),
        "shrink the persistent volume": (shrink_persistent_volume, {"update-refused"}),
        "rename the group": (rename_group, {"data-replaced"}),
        "add a zone": (add_zone, set()),
    },
    "vision-train": {
        "add a prefix": (insert_read_prefix, set()),
        "resize": (resize, set()),
        "shrink the file system": (shrink_lustre, {"data-replaced"}),
        "rename the group": (rename_group, set()),
        "move the file system's zone": (move_lustre_zone, {"data-replaced"}),
    },
    "frontier-train": {
        "add a prefix": (append_read_prefix, set()),
        "resize": (resize, set()),
        "rename the group": (rename_group, set()),
        "add a zone": (add_zone, set()),
    },
    "team-vpc": {
        "add a prefix": (add_data_prefix, set()),
        "resize": (resize, set()),
        "rename the group": (rename_group, set()),
        "move to one subnet": (narrow_subnets, set()),
    },
}
CASES = [(stack, label) for stack in ALL_STACKS for label in CHANGES[stack]]


def test_every_example_stack_has_change_tests():
    assert set(CHANGES) == set(ALL_STACKS)
    assert all({"resize", "rename the group"} <= set(changes) for changes in CHANGES.values())


@pytest.mark.parametrize(("stack", "label"), CASES, ids=[f"{stack}: {label}" for stack, label in CASES])
def test_each_change_applies_in_order_or_fails_saying_why(plans, stack, label):
    edit, expected = CHANGES[stack][label]
    diff = plans.diff(stack, label.replace(" ", "-").replace("'", ""), edit)

    found = failures(diff)

    assert diff.changes and any(change.op != "same" for change in diff.changes)
    assert set(found) == expected, found
    current = plans.plan(stack, label.replace(" ", "-").replace("'", ""))[0]
    refused = [finding.message for finding in current.findings if finding.severity == "failure" and finding.source in ("program", "provider")]
    assert not refused and not [violation for violation in current.policy_violations if violation.mandatory], refused
    for rule, messages in found.items():
        for message in messages:
            assert "gpu-cloud:intendedReplacements" in message or "Fix:" in message or "cannot be applied" in message, (rule, message)


@pytest.mark.parametrize("stack", ALL_STACKS)
def test_a_stack_planned_again_on_a_fresh_account_is_no_change(plans, stack):
    """The base and the change run on fresh accounts whose ids differ: an unchanged stack file
    must compare as nothing to do (llm-infer's workspace id inside the user data once rolled every node)."""
    diff = plans.diff(stack, "unchanged", lambda document: None)

    assert ops(diff, "") == {} and diff.findings == []


def test_a_prefix_added_before_the_others_creates_one_association_and_leaves_the_others(plans):
    """Defect 10: named by list position, the inserted prefix moved every later association to
    another path, each replaced create-first onto a path its old self still held."""
    diff = plans.diff("vision-train", "add-a-prefix", insert_read_prefix)

    associations = {change.name: change.op for change in diff.changes if change.type.endswith("DataRepositoryAssociation")}

    assert sorted(op for op in associations.values()) == ["create", "same", "same", "same"], associations
    [created] = [name for name, op in associations.items() if op == "create"]
    assert created.startswith("vision-train-shared-fs-link-datasets-laion-")
    assert not order_findings(diff)


def change_of(name: str, type_: str, op: str, old: dict[str, Any] | None, new: dict[str, Any] | None, **options: Any) -> ResourceChange:
    resource = AppliedResource(urn=f"urn:pulumi:s::p::{type_}::{name}", type=type_, name=name, custom=True,
                               inputs=new or old or {}, **options)
    change = ResourceChange(op, resource.urn, type_, name, resource if old is not None else None,
                            resource if new is not None else None)
    change.old_inputs, change.new_inputs = old, new
    return change


ASSOCIATION = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"


def link(path: str) -> dict[str, Any]:
    return {"fileSystemId": "${fs.id}", "fileSystemPath": path, "dataRepositoryPath": f"s3://data{path}"}


def test_a_replacement_created_onto_a_path_another_association_still_holds_fails_naming_the_fix():
    """The general check behind defect 10: associations named by position, a prefix inserted first."""
    changes = [
        change_of("fs-link-0", ASSOCIATION, "replace", link("/laion/"), link("/imagenet/")),
        change_of("fs-link-1", ASSOCIATION, "replace", link("/imagenet/"), link("/coco/")),
        change_of("fs-link-2", ASSOCIATION, "create", None, link("/coco/")),
    ]
    changes[0].old_inputs, changes[0].new_inputs = link("/imagenet/"), link("/laion/")
    changes[1].old_inputs, changes[1].new_inputs = link("/coco/"), link("/imagenet/")
    diff = PlanDiff(base=None, current=None, changes=changes)  # type: ignore[arg-type]

    findings = order_findings(diff)

    assert [finding.urn.rsplit("::", 1)[1] for finding in findings] == ["fs-link-2", "fs-link-1"]
    assert all(finding.rule == "change-order-collision" and finding.severity == "failure" for finding in findings)
    assert 'fs-link-1, which is replaced only at the end of the update, still holds fileSystemPath "/coco/"' in findings[0].message
    assert "AWS refuses to create it" in findings[0].message and "name these resources by their content" in findings[0].message
    assert "create-first (Pulumi's default)" in findings[1].message


def test_a_nested_path_collides_and_another_file_system_does_not():
    nested = change_of("b", ASSOCIATION, "create", None, link("/data/sub/"))
    held = change_of("a", ASSOCIATION, "delete", link("/data/"), None)
    elsewhere = change_of("c", ASSOCIATION, "create", None, {**link("/data/"), "fileSystemId": "${other.id}"})
    diff = PlanDiff(base=None, current=None, changes=[nested, held, elsewhere])  # type: ignore[arg-type]

    assert [finding.urn.rsplit("::", 1)[1] for finding in order_findings(diff)] == ["b"]


TARGET_GROUP = "aws:lb/targetGroup:TargetGroup"
LISTENER = "aws:lb/listener:Listener"


def test_a_named_target_group_replaced_behind_a_listener_fails_and_the_option_makes_it_create_first():
    """The general check behind defect 11: the bridge deletes a target group with a given name
    first, and ELB refuses while the listener, only updated, still forwards to it."""
    group = {"name": "tg-a", "port": 8080, "vpcId": "${vpc.id}"}
    listener = {"defaultActions": [{"type": "forward", "targetGroupArn": "${tg.id}"}], "port": 80}
    fixed = change_of("tg", TARGET_GROUP, "replace", {**group, "port": 8000}, group)
    forwarding = change_of("listener", LISTENER, "update", listener, listener)

    [finding] = order_findings(PlanDiff(base=None, current=None, changes=[fixed, forwarding]))  # type: ignore[arg-type]

    assert replacement_order(fixed).order == DELETE_FIRST
    assert finding.rule == "change-order-in-use" and finding.urn == fixed.urn
    assert 'its name "tg-a" is given by the program' in finding.message
    assert "listener (aws:lb/listener:Listener) still uses it through defaultActions" in finding.message
    assert "ResourceInUse" in finding.message and "replaceOnChanges on listener's defaultActions" in finding.message
    same_name = change_of("tg", TARGET_GROUP, "replace", {**group, "port": 8000}, group, delete_before_replace=False)
    [collision] = order_findings(PlanDiff(base=None, current=None, changes=[same_name, forwarding]))  # type: ignore[arg-type]
    assert replacement_order(same_name).order == CREATE_FIRST
    assert collision.rule == "change-order-collision" and 'its old self still holds name "tg-a"' in collision.message


def test_changing_the_endpoint_port_replaces_the_target_group_first_and_switches_the_listener(plans):
    """Defect 11: the target group's name follows its port, and `deleteBeforeReplace: false` lets
    Pulumi create the new one before the listener leaves the old."""
    diff = plans.diff("llm-infer", "change-the-port", change_port)

    target_group = diff.named("llm-infer-servers-endpoint-tg")
    names = [item for item in target_group.changes if item.path == "name"]

    assert target_group.op == "replace" and replacement_order(target_group).order == CREATE_FIRST
    assert names and names[0].old != names[0].new
    assert diff.named("llm-infer-servers-endpoint-listener").op == "update"
    assert diff.named("llm-infer-servers-endpoint-attachment").op == "replace"
    assert not order_findings(diff)
    steps = [step["op"] for step in to_preview_json(diff)["steps"] if step["urn"] == target_group.urn]
    assert steps == ["create-replacement", "replace", "delete-replaced"]


def test_shrinking_a_persistent_volume_is_refused_and_growing_it_updates(plans):
    """Defect 12: EC2 ModifyVolume only grows a volume."""
    shrunk = plans.diff("notebooks", "shrink-the-persistent-volume", shrink_persistent_volume)
    grown = plans.diff("notebooks", "resize", resize)

    volume = shrunk.named("notebooks-workbench-persist-volume")
    [message] = failures(shrunk)["update-refused"]

    assert volume.op == "update" and [(item.path, item.old, item.new, item.refused) for item in volume.changes] == [("size", 200, 100, True)]
    assert message.startswith("notebooks-workbench-persist-volume (aws:ebs/volume:Volume): size 200 -> 100 cannot be applied: "
                              "EC2 ModifyVolume only grows a volume")
    assert "ModifyVolume Size" in message
    assert to_preview_json(shrunk)["steps"][0]["gpucloudRefused"] == ["size"]
    grown_volume = grown.named("notebooks-workbench-persist-volume")
    assert grown_volume.op == "update" and not grown_volume.refused and "update-refused" not in failures(grown)


def test_shrinking_the_lustre_file_system_replaces_it_and_its_associations(plans):
    """Defect 13: the provider's CustomizeDiff replaces a file system whose capacity shrinks: a
    certain replacement, decided from the values, failing as data lost."""
    shrunk = plans.diff("vision-train", "shrink-the-file-system", shrink_lustre)
    grown = plans.diff("vision-train", "resize", resize)

    lustre = shrunk.named("vision-train-shared-fs-lustre")
    [reason] = lustre.replace_reasons
    [message] = failures(shrunk)["data-replaced"]

    assert lustre.op == "replace" and (reason.path, reason.old, reason.new) == ("storageCapacity", 2400, 1200)
    assert "resourceLustreFileSystemStorageCapacityCustomizeDiff" in reason.reason
    assert not lustre.may_replace and "may-replace" not in {finding.rule for finding in shrunk.findings}
    assert message.startswith("vision-train-shared-fs-lustre (aws:fsx/lustreFileSystem:LustreFileSystem) is replaced: "
                              "storageCapacity 2400 -> 1200 forces it: CustomizeDiff forces a new file system")
    assert set(ops(shrunk, "-link-").values()) == {"replace"}
    grown_lustre = grown.named("vision-train-shared-fs-lustre")
    assert grown_lustre.op == "update" and not grown_lustre.may_replace and not grown_lustre.replace_reasons


def test_an_input_equal_to_an_identifier_number_is_not_a_reference(plans):
    """Defect 15: Grafana's dashboard id is 1, and every input equal to 1 read as a reference to it."""
    base, _ = plans.plan("llm-infer")
    diff = plans.diff("llm-infer", "resize", resize)

    group = diff.named("llm-infer-servers-nodes-asg")

    assert "1" not in references(base) and identifiers(base)["1"].endswith(".dashboardId}")
    assert group.old_inputs["minSize"] == 1 and group.old_inputs["desiredCapacity"] == 1
    assert [(item.path, item.old, item.new) for item in group.changes if item.path == "maxSize"] == [("maxSize", 8, 10)]
    dashboards = [change for change in diff.changes if change.type == "grafana:oss/dashboard:Dashboard"]
    assert dashboards and all(change.op == "same" for change in dashboards)


def test_the_orders_of_replacements_follow_the_option_then_the_name():
    named = change_of("x", "aws:iam/role:Role", "replace", {"name": "a", "path": "/"}, {"name": "a", "path": "/b/"})
    option = change_of("y", "aws:iam/role:Role", "replace", {"path": "/"}, {"path": "/b/"}, delete_before_replace=True)
    rule = change_of("z", "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "replace",
                     {"securityGroupId": "a"}, {"securityGroupId": "b"})

    assert replacement_order(named).order == DELETE_FIRST and "bridge" in replacement_order(named).source
    assert replacement_order(option).order == DELETE_FIRST and "option is true" in replacement_order(option).why
    assert replacement_order(rule).order == CREATE_FIRST


def test_the_engine_records_the_delete_before_replace_option(plans):
    base, _ = plans.plan("llm-infer")
    options = {resource.name: resource.delete_before_replace for resource in base.resources}

    assert options["llm-infer-servers-endpoint-tg"] is False
    assert options["llm-infer-servers-endpoint-listener"] is None


def test_every_unique_and_one_way_rule_names_a_type_with_provider_rules_and_its_source():
    from gpucloud.plan.change_rules import change_rules
    from gpucloud.testing.provider_rules import resource_rules

    document = change_rules()
    for rule in [*document["unique"], *document["oneWay"], *document["inUse"]]:
        assert resource_rules(rule["type"]) is not None, rule["type"]
        assert rule["source"], rule
    assert {rule["outcome"] for rule in document["unique"]} <= {"refused", "taken over"}
    assert {rule["outcome"] for rule in document["oneWay"]} <= {"refused", "replaces"}


LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"


@pytest.mark.parametrize(("type_", "inputs", "path", "old", "new", "expected"), [
    (LUSTRE, {"deploymentType": "PERSISTENT_2"}, "storageCapacity", 2400, 4800, "update"),
    (LUSTRE, {"deploymentType": "PERSISTENT_2"}, "storageCapacity", 4800, 2400, "replace"),
    (LUSTRE, {"deploymentType": "SCRATCH_1"}, "storageCapacity", 1200, 2400, "replace"),
    (LUSTRE, {}, "fileSystemTypeVersion", "2.12", "2.15", "update"),
    (LUSTRE, {}, "fileSystemTypeVersion", "2.15", "2.12", "replace"),
    (LUSTRE, {"metadataConfiguration": {"mode": "USER_PROVISIONED"}}, "metadataConfiguration.iops", 6000, 3000, "replace"),
    (LUSTRE, {"metadataConfiguration": {"mode": "AUTOMATIC"}}, "metadataConfiguration.iops", 6000, 3000, "update"),
    (LUSTRE, {}, "throughputCapacity", 4000, 2000, "refused"),
    (LUSTRE, {"deploymentType": "PERSISTENT_2"}, "storageCapacity", 2400, "(known after apply: x is replaced)", "may replace"),
    ("aws:ec2/vpcEndpoint:VpcEndpoint", {"vpcEndpointType": "Gateway"}, "privateDnsEnabled", False, True, "replace"),
    ("aws:ec2/vpcEndpoint:VpcEndpoint", {"vpcEndpointType": "Interface"}, "privateDnsEnabled", False, True, "update"),
    ("aws:s3/bucketVersioning:BucketVersioning", {}, "versioningConfiguration.status", "Enabled", "Disabled", "refused"),
    ("aws:s3/bucketVersioning:BucketVersioning", {}, "versioningConfiguration.status", "Enabled", "Suspended", "update"),
    ("aws:ebs/volume:Volume", {}, "size", 100, 200, "update"),
    ("aws:ebs/volume:Volume", {}, "size", 200, 100, "refused"),
])
def test_one_way_changes_are_decided_from_the_old_and_new_values(type_, inputs, path, old, new, expected):
    from gpucloud.plan.diff import classify, refusal

    resource = AppliedResource(urn=f"urn:pulumi:s::p::{type_}::x", type=type_, name="x", custom=True, inputs=inputs)
    forces, may, _ = classify(resource, path, old, new)
    refused = refusal(resource, path, old, new)

    found = "replace" if forces else "may replace" if may else "refused" if refused else "update"
    assert found == expected


def test_an_attachment_renamed_with_the_same_pair_is_detached_by_the_old_ones_delete():
    pair = {"autoscalingGroupName": "gpu-cloud-x-servers", "lbTargetGroupArn": "${tg.id}"}
    renamed = change_of("new-attachment", "aws:autoscaling/attachment:Attachment", "create", None, pair)
    old = change_of("old-attachment", "aws:autoscaling/attachment:Attachment", "delete", pair, None)

    [finding] = order_findings(PlanDiff(base=None, current=None, changes=[renamed, old]))  # type: ignore[arg-type]

    assert finding.rule == "change-order-collision" and finding.urn == renamed.urn
    assert "deleting the old one at the end of the update removes it" in finding.message


def test_a_security_group_replaced_delete_first_while_a_rule_of_another_group_admits_it_fails():
    group = change_of("lb-sg", "aws:ec2/securityGroup:SecurityGroup", "replace", {"name": "lb", "vpcId": "${vpc.id}", "description": "a"},
                      {"name": "lb", "vpcId": "${vpc.id}", "description": "b"})
    rule = {"securityGroupId": "${nodes-sg.id}", "referencedSecurityGroupId": "${lb-sg.id}", "fromPort": 8000}
    admitting = change_of("nodes-from-lb", "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "update", rule, rule)

    [finding] = order_findings(PlanDiff(base=None, current=None, changes=[group, admitting]))  # type: ignore[arg-type]

    assert finding.rule == "change-order-in-use" and "DependencyViolation" in finding.message
    assert "nodes-from-lb (aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule) still uses it through referencedSecurityGroupId" in finding.message
