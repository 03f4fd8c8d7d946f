"""The access check in the plan: recorded calls filled with a stack's names, evaluated against the
plan's own policies; a denied call fails the plan naming actor, action, resource and what lacks it.
Runs on a hand-made calls file (tests/fixtures/access/calls.json), one plan for the module."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

import dataclasses
import json

from gpucloud.plan import access as plan_access
from gpucloud.plan.access import load_calls
from gpucloud.plan.access_documents import collect_documents
from gpucloud.plan.preview import plan_stack
from gpucloud.plan.view import render
from support import ROOT, minimal_config, settings_for

CALLS = ROOT / "tests" / "fixtures" / "access" / "calls.json"
DATA = "arn:aws:s3:::demo-data"


@pytest.fixture(scope="module")
def settings():
    return settings_for(minimal_config(data={"bucket": "demo-data", "readPrefixes": ["datasets/", "labels/"],
                                             "writePrefixes": ["runs/"]}, access={"jobRunnerPolicy": True}))


@pytest.fixture(scope="module")
def plan(settings):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plan_access, "ACCESS_CALLS_PATH", CALLS)
        return plan_stack(settings)


def test_a_denied_call_fails_the_plan_naming_actor_action_resource_and_what_lacks_it(plan):
    denied = [finding for finding in plan.findings if finding.rule == "access-denied"]

    assert plan.failed
    assert len(denied) == 2  # once per read prefix
    message = denied[0].message
    assert denied[0].severity == "failure" and denied[0].source == "access"
    assert message.startswith(f"node cannot s3:PutObject on {DATA}/datasets/overwritten.tar through the s3 endpoint: "
                              f"no statement allows s3:PutObject on {DATA}/datasets/overwritten.tar in ")
    assert "(feature checkpointToS3, tests/fixtures/access: hand-made, denied on purpose)" in message


def test_json_carries_the_access_object(plan):
    access = plan.to_preview_json()["access"]

    assert set(access) == {"calls", "actors", "denied", "unmeasured", "unusedGrants", "beyondStack", "unfilled"}
    # 2 reads (one per read prefix), 1 write, 2 denied writes, 1 launch hook, 1 alarm, 2 of the job
    # runner; the unused feature's call and the one the plan cannot fill are left out
    assert access["calls"] == 9 and access["actors"] == 3
    assert [(call["actor"], call["action"], call["resource"]) for call in access["denied"]] == [
        ("node", "s3:PutObject", f"{DATA}/datasets/overwritten.tar"),
        ("node", "s3:PutObject", f"{DATA}/labels/overwritten.tar"),
    ]
    assert access["denied"][0]["principal"] == "arn:aws:iam::123456789012:role/gpu-cloud-demo-node"
    unmeasured = {item["feature"]: item["actor"] for item in access["unmeasured"]}
    assert unmeasured["watch"] == "node" and unmeasured["budget"] == "service:budgets.amazonaws.com"
    assert {"bootstrap", "checkpointToS3", "monitoring.alarms", "drain"}.isdisjoint(unmeasured)
    assert access["unfilled"] == ["noSuchPlaceholder (drain)"]
    unused = {(hint["principal"].rsplit("/", 1)[-1], hint["action"]) for hint in access["unusedGrants"]}
    assert ("gpu-cloud-demo-node", "autoscaling:SetInstanceHealth") in unused
    assert not any(action in ("s3:GetObject", "s3:PutObject") for role, action in unused if role == "gpu-cloud-demo-node")


def test_the_plan_prints_one_access_line_and_names_the_unmeasured(plan):
    console = Console(file=io.StringIO(), width=200)
    render(plan, console)
    out = console.file.getvalue()

    unmeasured = len(plan.access["unmeasured"])
    assert f"Access: 9 calls of 3 actors checked, 2 denied, {unmeasured} unmeasured" in out
    assert "watch (node) is used by this stack, but no test measured its calls" in out
    assert "calls left unchecked, the plan has no value for: noSuchPlaceholder (drain)" in out
    assert "arn:aws:iam::123456789012:role/gpu-cloud-demo-node is granted " in out and "(least-privilege hint)" in out


def test_the_documents_come_from_the_plans_resources(plan):
    documents = collect_documents(plan.resources, "aws", "123456789012")

    node = documents.identity["arn:aws:iam::123456789012:role/gpu-cloud-demo-node"]
    assert any(statement["Sid"] == "ReadGrantedPrefixes" for document in node for statement in document["Statement"])
    owners = {pattern.split(":")[2] for pattern, _document in documents.resource}
    assert {"kms", "s3", "sns"} <= owners
    assert "s3" in documents.endpoints and documents.endpoints["s3"]["Id"].startswith("s3 endpoint policy")


def test_without_recorded_calls_the_plan_checks_no_access(settings, plan):
    assert plan_access.check_access(settings, plan.resources, None) == (None, [])
    assert load_calls(ROOT / "no-such-file.json") is None


def test_stack_features_name_each_actor_and_the_groups_a_feature_concerns(settings):
    features = plan_access.stack_features(settings)

    assert features["logs"][0] == "person:jobRunner"  # the command, not CloudWatch Logs' use of the key
    assert features["logGroups"][0] == "service:logs.amazonaws.com"
    assert features["checkpointToS3"] == ("node", ["workers"])
    assert {"groups", "agentBundle", "flowLogs"} <= set(features)  # every stack; flow logs of the network it creates
    assert "services.jupyter" not in features and "storage.lustre" not in features


def test_a_group_s_calls_name_its_own_auto_scaling_group(plan):
    """`${autoScalingGroupId}` is the id inside the group's ARN in the plan: a call naming it is checked, not dropped."""
    group_arn = next(r.state["arn"] for r in plan.resources if r.type == "aws:autoscaling/group:Group")
    unused = {hint["action"] for hint in plan.access["unusedGrants"]}

    assert group_arn.endswith(":autoScalingGroupName/gpu-cloud-demo-workers")
    assert "autoscaling:CompleteLifecycleAction" not in unused


def test_the_team_policy_allows_its_commands_on_this_stack_and_nothing_of_another(plan):
    team = [call for call in plan.access["denied"] if call["actor"] == "person:jobRunner"]

    assert team == [] and plan.access["beyondStack"] == []


def test_a_team_policy_that_reaches_beyond_the_stack_fails(settings, plan):
    """The job runner's policy widened to every bucket: another stack's job records become writable."""
    def widened(resource):
        if resource.type != "aws:iam/policy:Policy":
            return resource
        document = json.loads(resource.state["policy"])
        document["Statement"].append({"Sid": "Everywhere", "Effect": "Allow", "Action": "s3:PutObject", "Resource": "*"})
        return dataclasses.replace(resource, outputs={**resource.outputs, "policy": json.dumps(document)})

    access, findings = plan_access.check_access(settings, [widened(r) for r in plan.resources], load_calls(CALLS))

    reached = sorted(call["resource"] for call in access["beyondStack"])
    job = "jobs/workers-20261128120000-0a1b/job.json"
    assert reached == [f"arn:aws:s3:::demo-data/other-prefix/{job}", f"arn:aws:s3:::other-demo-data/runs/{job}"]
    beyond = [finding for finding in findings if finding.rule == "access-beyond-stack"]
    assert len(beyond) == 2 and all(finding.severity == "failure" for finding in beyond)
    assert ":Everywhere" in beyond[0].message


def test_a_call_made_as_another_principal_is_checked_as_that_principal(settings, plan):
    """FSx reaches the data bucket with its own role; the bucket is the user's, so the policy that
    counts is the one the stack asks its owner to add (the dataBucketPolicyForFileSystem output)."""
    role = "arn:aws:iam::123456789012:role/aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/AWSServiceRoleForFSxS3Access_fs-1"
    recorded = {"calls": [{"actor": "service:s3.data-source.lustre.fsx.amazonaws.com", "feature": "budget",  # any feature the stack uses
                           "measuredBy": "declared: hand-made", "action": "s3:GetObject", "principal": role,
                           "resource": "arn:${partition}:s3:::${dataBucket}/${readPrefix}${objectKey}", "context": {}, "endpoint": None}]}
    asked = {"Version": "2012-10-17", "Statement": [{"Sid": "FileSystemReads", "Effect": "Allow", "Principal": {"AWS": role},
                                                     "Action": "s3:GetObject", "Resource": f"{DATA}/datasets/*"}]}

    alone, _ = plan_access.check_access(settings, plan.resources, recorded)
    asked_for, _ = plan_access.check_access(settings, plan.resources, recorded,
                                            {"dataBucketPolicyForFileSystem": json.dumps(asked)})

    assert [(call["principal"], call["resource"]) for call in alone["denied"]] == [
        (role, f"{DATA}/datasets/example/object.bin"), (role, f"{DATA}/labels/example/object.bin")]
    assert [call["resource"] for call in asked_for["denied"]] == [f"{DATA}/labels/example/object.bin"]


def test_an_attached_aws_managed_policy_counts_for_access_but_is_not_the_stacks_to_narrow():
    from gpucloud.plan.access_report import unused_grants
    from gpucloud.policy.access import Call
    from gpucloud.testing import AppliedResource

    role = "arn:aws:iam::123456789012:role/demo-backup"
    resources = [
        AppliedResource(urn="urn:role", type="aws:iam/role:Role", name="backup-role", custom=True,
                        outputs={"name": "demo-backup", "arn": role}),
        AppliedResource(urn="urn:attachment", type="aws:iam/rolePolicyAttachment:RolePolicyAttachment", name="backup",
                        custom=True, inputs={"role": "demo-backup",
                                             "policyArn": "arn:aws:iam::aws:policy/service-role/AWSBackupServiceRolePolicyForBackup"}),
    ]
    own = {"Version": "2012-10-17", "Statement": [
        {"Sid": "NoDeletes", "Effect": "Deny", "Action": "ec2:DeleteSnapshot", "Resource": "*"},
        {"Sid": "Tags", "Effect": "Allow", "Action": ["ec2:CreateTags", "kms:DescribeKey"], "Resource": "*"}]}
    resources.append(AppliedResource(urn="urn:policy", type="aws:iam/rolePolicy:RolePolicy", name="backup-tags", custom=True,
                                     inputs={"role": "demo-backup", "policy": json.dumps(own)}))
    documents = collect_documents(resources, "aws", "123456789012")

    assert [document["Id"] for document in documents.identity[role]] == [
        "AWS managed policy AWSBackupServiceRolePolicyForBackup", "backup-tags policy"]
    hints = unused_grants(documents, [Call("service:backup.amazonaws.com", role, "kms:DescribeKey", "*", {}, None)])
    assert [(hint["sid"], hint["action"]) for hint in hints] == [("Tags", "ec2:CreateTags")]  # not the deny, not AWS's


def test_placeholders_take_the_stacks_own_names(settings, plan):
    values = plan_access.placeholder_values(settings, plan.resources, "123456789012")

    assert values["encryptedLogGroup"] == ["/gpu-cloud-vpc/demo/flow-logs", "/gpu-cloud/demo/jobs",
                                           "/gpu-cloud/demo/jobs-supervisor"]
    assert values["readPrefix"] == ["datasets/", "labels/"] and values["dataBucket"] == ["demo-data"]
    assert values["keyArn"][0].startswith("arn:aws:kms:us-east-1:123456789012:key/")
    assert values["elbLogWriter"] == ["arn:aws:iam::127311923021:root"]  # us-east-1's Elastic Load Balancing account


ENDPOINTS = ["ec2", "autoscaling", "monitoring", "ssm", "ssmmessages", "ec2messages", "logs"]


@pytest.fixture(scope="module")
def endpoints_only():
    """A network without NAT: every node call goes through an interface endpoint and its policy."""
    settings = settings_for(minimal_config(
        network={"egress": "endpointsOnly", "interfaceEndpoints": ENDPOINTS},
        groups=[{"name": "train", "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 2, "dataVolumeGiB": 200}]))
    return settings, plan_stack(settings)


def test_calls_through_the_interface_endpoints_pass_their_policies(endpoints_only):
    settings, plan = endpoints_only
    documents = collect_documents(plan.resources, "aws", "123456789012")

    assert set(ENDPOINTS) - {"ec2messages", "ssmmessages"} <= set(documents.endpoints)
    assert [call for call in plan.access["denied"] if call["endpoint"]] == [] and plan.access["calls"] > 0


def test_an_endpoint_policy_that_keeps_a_call_out_fails_the_plan(endpoints_only):
    settings, plan = endpoints_only

    def closed(resource):
        if resource.type != "aws:ec2/vpcEndpoint:VpcEndpoint" or not str(resource.state.get("serviceName")).endswith(".autoscaling"):
            return resource
        document = json.loads(resource.state["policy"])
        document["Statement"].append({"Sid": "NoLifecycle", "Effect": "Deny", "Principal": "*",
                                      "Action": "autoscaling:CompleteLifecycleAction", "Resource": "*"})
        return dataclasses.replace(resource, outputs={**resource.outputs, "policy": json.dumps(document)})

    access, _ = plan_access.check_access(settings, [closed(r) for r in plan.resources], load_calls())

    reasons = {(call["action"], call["endpoint"], call["reason"].split(":")[-1]) for call in access["denied"] if call["endpoint"]}
    assert reasons == {("autoscaling:CompleteLifecycleAction", "autoscaling", "NoLifecycle")}


def test_the_deployers_calls_carry_the_arn_the_plan_ran_as(settings, plan):
    """The artifacts bucket lets only the node roles and the deployer read objects (aws:PrincipalArn):
    the plan's own run is the deployer those policies name."""
    recorded = {"calls": [{"actor": "deployer", "feature": "agentBundle", "measuredBy": "tests/fixtures/access: hand-made",
                           "action": "s3:GetObject", "resource": "arn:${partition}:s3:::${artifactsBucket}/${agentBundleKey}",
                           "context": {}, "endpoint": None}]}

    unknown, _ = plan_access.check_access(settings, plan.resources, recorded)
    as_planned, _ = plan_access.check_access(settings, plan.resources, recorded, deployer=plan_deployer(plan))

    assert [call["reason"].split(":")[-1] for call in unknown["denied"]] == ["ObjectsReadableOnlyByNodeRolesAndDeployer"]
    assert as_planned["denied"] == [] and plan.access is not None


def plan_deployer(plan) -> str:
    """The reader of the artifacts bucket's policy that is not a role of the stack: the plan's caller."""
    policy = next(json.loads(r.state["policy"]) for r in plan.resources
                  if r.type == "aws:s3/bucketPolicy:BucketPolicy" and "ObjectsReadableOnly" in r.state["policy"])
    readers = next(s["Condition"]["ArnNotEquals"]["aws:PrincipalArn"] for s in policy["Statement"]
                   if s["Sid"] == "ObjectsReadableOnlyByNodeRolesAndDeployer")
    return next(arn for arn in readers if ":role/gpu-cloud-" not in arn)



def test_a_prometheus_workspace_of_the_account_fills_its_id():
    given = settings_for(minimal_config(monitoring={"prometheus": {"enabled": True, "workspaceId": "ws-0123abcd-4567-89ef-0123-456789abcdef"}}))

    assert plan_access.placeholder_values(given, [], "123456789012")["workspaceId"] == ["ws-0123abcd-4567-89ef-0123-456789abcdef"]
