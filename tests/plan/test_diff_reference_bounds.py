"""Which values of a plan `gpucloud plan --base` compares by reference: the bounds the example
stacks never reach. Each test kills a mutant of `plan/diff.py` they let live
(tests/mutation/README.md)."""

from __future__ import annotations

from gpucloud.plan.diff import _pattern, diff_plans, normalized, references
from gpucloud.plan.model import Plan
from gpucloud.testing import AppliedResource

ROLE = "aws:iam/role:Role"


PROFILE = "aws:iam/instanceProfile:InstanceProfile"


def role(name: str, id: str, **inputs: str) -> AppliedResource:
    return AppliedResource(urn=f"urn:pulumi:s::p::{ROLE}::{name}", type=ROLE, name=name, custom=True, id=id,
                           inputs=inputs, outputs={})


def plan(*resources: AppliedResource) -> Plan:
    return Plan(project="p", stack="s", region="us-east-1", outputs={}, resources=list(resources))


def test_an_id_of_six_characters_is_a_reference_and_a_shorter_one_is_not():
    """A resource's id counts whole (an IAM role's id is its name) from six characters: shorter
    values ("true", "tcp", "gp3") are too common to stand for one resource."""
    table = references(plan(role("six", "ml-run"), role("five", "ml-ru")))

    assert table.get("ml-run") == "${six.id}"
    assert "ml-ru" not in table


def test_a_name_that_is_a_replaced_role_s_id_is_known_only_after_apply_wherever_it_is_given():
    """An instance profile names its role by the role's id (its name) under `role`, a key no
    identifier pattern matches: the role's replacement still reaches it."""
    def profile() -> AppliedResource:
        return AppliedResource(urn=f"urn:pulumi:s::p::{PROFILE}::profile", type=PROFILE, name="profile", custom=True,
                               id="ml-node-profile", inputs={"role": "ml-node-role"}, outputs={})

    diff = diff_plans(plan(role("node", "ml-node-role", path="/"), profile()),
                      plan(role("node", "ml-node-role", path="/ml/"), profile()))

    assert diff.named("node").op == "replace"
    assert [(item.path, item.new) for item in diff.named("profile").changes] == [
        ("role", "(known after apply: node is replaced)")]


def test_an_identifier_that_looks_like_any_value_is_a_reference_under_an_identifier_key():
    """Grafana's dashboard id 1 stands for the dashboard under `dashboardId` (and says nothing
    under `minSize`), so moving to another dashboard is a change."""
    keyed = {"1": "${first.id}", "2": "${second.id}"}

    assert normalized({"dashboardId": 1, "minSize": 1}, {}, None, keyed) == {"dashboardId": "${first.id}", "minSize": 1}
    assert normalized({"dashboardId": 2}, {}, None, keyed) != normalized({"dashboardId": 1}, {}, None, keyed)


def test_an_id_inside_a_string_is_compared_by_reference():
    """A file system id in a mount command differs on two fresh accounts but is the same file system."""
    fs = "aws:fsx/lustreFileSystem:LustreFileSystem"
    document = "aws:ssm/document:Document"

    def account(file_system_id: str) -> Plan:
        return plan(
            AppliedResource(urn=f"urn:pulumi:s::p::{fs}::fs", type=fs, name="fs", custom=True, id=file_system_id,
                            inputs={"storageCapacity": 1200}, outputs={}),
            AppliedResource(urn=f"urn:pulumi:s::p::{document}::mount", type=document, name="mount", custom=True,
                            id="mount-doc", inputs={"content": f"mount -t lustre {file_system_id}.fsx:/data /data"},
                            outputs={}))

    diff = diff_plans(account("fs-0aaaaaaaaaaaaaaa1"), account("fs-0bbbbbbbbbbbbbbb2"))

    assert diff.named("mount").op == "same" and not diff.named("mount").changes


def test_an_arn_without_a_random_run_is_a_reference_inside_a_string():
    """A bucket's ARN holds neither an account id nor random hex: it is still the bucket's, inside a
    policy document too, so the bucket's replacement reaches the policy."""
    bucket = "aws:s3/bucket:Bucket"
    made = AppliedResource(urn=f"urn:pulumi:s::p::{bucket}::data", type=bucket, name="data", custom=True,
                           id="ml-data", inputs={}, outputs={"arn": "arn:aws:s3:::ml-data"})
    table = references(plan(made))

    assert table["arn:aws:s3:::ml-data"] == "${data.arn}"
    assert normalized({"policy": '{"Resource": "arn:aws:s3:::ml-data/*"}'}, table, _pattern(table)) == {
        "policy": '{"Resource": "${data.arn}/*"}'}


def test_an_arn_that_begins_another_does_not_take_its_place():
    """Two roles, one's ARN the start of the other's: the longer is matched whole, not read as the
    shorter followed by text."""
    table = {"arn:aws:iam::123456789012:role/ml": "${ml.arn}", "arn:aws:iam::123456789012:role/ml-node": "${node.arn}"}

    assert normalized({"policy": '{"Principal": "arn:aws:iam::123456789012:role/ml-node"}'}, table, _pattern(table)) == {
        "policy": '{"Principal": "${node.arn}"}'}
