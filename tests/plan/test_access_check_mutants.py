"""The plan's access check on hand-made resources and calls, without the engine: who each call is
checked as (a group's person as the holder of that group's notebook policy, the deployer with the
ARN the plan ran as), which of a person's calls on another group a policy still allows, and which
endpoint an S3 call passes. Each test kills mutants of plan/access.py (tests/mutation)."""

from __future__ import annotations

import json

import pytest

from gpucloud.documents.buckets import s3_gateway_endpoint_policy
from gpucloud.documents.notebooks import notebook_user_policy
from gpucloud.naming import autoscaling_group_name, instance_role_name, notebook_user_policy_name, role_arn
from gpucloud.plan import access as plan_access
from gpucloud.plan.access_templates import DEPLOYING_PERSON, NOTEBOOK_USER, notebook_user_id
from gpucloud.policy.access import DEPLOYER
from gpucloud.policy.resource_types import AUTOSCALING_GROUP, BUCKET_POLICY, IAM_POLICY, IAM_ROLE, VPC_ENDPOINT
from gpucloud.testing import AppliedResource
from support import minimal_config, settings_for

ACCOUNT = "123456789012"
PLAIN, ANNA, BEN = "plain", "anna", "ben"
HAND_MADE = "tests/plan/test_access_check_mutants.py: hand-made"


def resource(kind: str, logical: str, /, **state) -> AppliedResource:
    return AppliedResource(urn=f"urn:pulumi:demo::gpu-cloud::{kind}::{logical}", type=kind, name=logical, custom=True,
                           outputs=state)


def template(actor: str, feature: str, action: str, target: str, context: dict | None = None,
             endpoint: str | None = None, **more) -> dict:
    return {"actor": actor, "feature": feature, "measuredBy": HAND_MADE, "action": action, "resource": target,
            "context": context or {}, "endpoint": endpoint, **more}


FIND_NODES = template(NOTEBOOK_USER, "connect", "autoscaling:DescribeAutoScalingGroups", "*")
FORWARD = template(NOTEBOOK_USER, "connect", "ssm:StartSession", "arn:${partition}:ec2:${region}:${account}:instance/${instanceId}",
                   {"ssm:resourceTag/gpu-cloud:stack": "${nameBase}"})
RESUME = template(NOTEBOOK_USER, "connect", "ssm:ResumeSession", "arn:${partition}:ssm:${region}:${account}:session/${sessionId}",
                  {"aws:userid": "${userId}", "ssm:resourceTag/aws:ssmmessages:session-id": "${userId}"})
METRICS = template("node", "cloudWatchAgent", "cloudwatch:PutMetricData", "*", endpoint="monitoring")
PERSON_CALLS = [FIND_NODES, FORWARD, RESUME]


@pytest.fixture(scope="module")
def people():
    """Three groups: `plain` without a notebook policy, then anna's and ben's, each with its own."""
    def group(name: str, **more) -> dict:
        return {"name": name, "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 1, **more}

    jupyter = {"services": {"jupyter": {"userPolicy": True}}}
    return settings_for(minimal_config(access={"ssm": True}, groups=[group(PLAIN), group(ANNA, **jupyter), group(BEN, **jupyter)]))


def node_role(settings, *statements: dict) -> AppliedResource:
    name = instance_role_name(settings.name_base)
    inline = [{"name": "node", "policy": json.dumps({"Version": "2012-10-17", "Statement": list(statements)})}]
    return resource(IAM_ROLE, "node-role", name=name, arn=role_arn("aws", ACCOUNT, name), inlinePolicies=inline)


def notebook_policy(settings, group: str, drop: tuple[str, ...] = (), **replaced: dict) -> AppliedResource:
    """The group's notebook user policy as the stack makes it, less the statements `drop` names and
    with the statements `replaced` names changed."""
    base = settings.name_base
    document = notebook_user_policy(
        partition="aws", region=settings.region, account_id=ACCOUNT, name_base=base, group=group,
        autoscaling_group_name=autoscaling_group_name(base, group),
        token_parameter_arn=f"arn:aws:ssm:{settings.region}:{ACCOUNT}:parameter/gpu-cloud/{base}/{group}/jupyter-token",
        key_arn=f"arn:aws:kms:{settings.region}:{ACCOUNT}:key/project")
    document["Statement"] = [{**statement, **replaced.get(statement["Sid"], {})}
                             for statement in document["Statement"] if statement["Sid"] not in drop]
    name = notebook_user_policy_name(base, group)
    return resource(IAM_POLICY, f"{group}-notebook", name=name, arn=f"arn:aws:iam::{ACCOUNT}:policy/{name}",
                    policy=json.dumps(document))


def holder(settings, group: str) -> str:
    return f"arn:aws:iam::{ACCOUNT}:role/{notebook_user_policy_name(settings.name_base, group)}"


def notebook_stack(settings, anna: AppliedResource | None = None, ben: AppliedResource | None = None) -> list[AppliedResource]:
    groups = [resource(AUTOSCALING_GROUP, group, arn=f"arn:aws:autoscaling:us-east-1:{ACCOUNT}:autoScalingGroup:"
                                                      f"{index}a1b2c3d-0000-4000-8000-000000000000:autoScalingGroupName/"
                                                      f"{autoscaling_group_name(settings.name_base, group)}")
              for index, group in enumerate((PLAIN, ANNA, BEN))]
    allow_metrics = {"Sid": "Metrics", "Effect": "Allow", "Action": "cloudwatch:PutMetricData", "Resource": "*"}
    return [node_role(settings, allow_metrics), *groups, anna or notebook_policy(settings, ANNA),
            ben or notebook_policy(settings, BEN)]


def test_each_group_s_person_is_checked_as_the_holder_of_that_group_s_policy(people):
    """Ben's policy lacks port forwarding to his nodes: his forward is denied, as his policy's holder,
    naming his group; anna's is allowed by hers; `plain` has no policy, so its person is outside the plan."""
    ben = notebook_policy(people, BEN, drop=("PortForwardToGroupNodes",))
    recorded = {"calls": [*PERSON_CALLS, METRICS, {**dict(reversed(list(METRICS.items()))), "measuredBy": "another test"}]}

    access, _ = plan_access.check_access(people, notebook_stack(people, ben=ben), recorded)

    assert [(call["group"], call["principal"], call["action"], call["resource"]) for call in access["denied"]] == [
        (BEN, holder(people, BEN), "ssm:StartSession", f"arn:aws:ec2:us-east-1:{ACCOUNT}:instance/i-0123456789abcdef0")]
    # each person's three calls once per group; the node's call once, however many groups and
    # however its recording orders its keys
    assert access["calls"] == 3 * 3 + 1 and access["actors"] == 2


def test_a_group_s_policy_reaches_nothing_of_another_group(people):
    """The stack's own notebook policies: nothing of another group (the stack's, one it lacks) or of
    another stack is allowed, and what needs no resource (finding the groups) is not named."""
    access, findings = plan_access.check_access(people, notebook_stack(people), {"calls": PERSON_CALLS})

    assert access["denied"] == [] and access["beyondStack"] == []
    assert not [finding for finding in findings if finding.severity == "failure"]


def test_a_widened_policy_names_each_other_group_it_reaches(people):
    """Anna's policy without the group tag on nodes, and resuming any session she calls for herself
    (her aws:userid, not the session's): another group's nodes and sessions become hers."""
    anna = notebook_policy(people, ANNA, drop=("OwnSessionsOfAnIamUser",), PortForwardToGroupNodes={
        "Condition": {"StringEquals": {"ssm:resourceTag/gpu-cloud:stack": people.name_base}}}, OwnSessionsOfARole={
        "Condition": {"StringEquals": {"aws:userid": notebook_user_id(ANNA)}}})

    access, findings = plan_access.check_access(people, notebook_stack(people, anna=anna), {"calls": PERSON_CALLS})

    reached = {(call["group"], call["action"], call["principal"]) for call in access["beyondStack"]}
    assert reached == {(group, action, holder(people, ANNA)) for group in (PLAIN, BEN, "other-group")
                       for action in ("ssm:StartSession", "ssm:ResumeSession")}
    assert len(access["beyondStack"]) == len(reached)
    assert [finding.severity for finding in findings if finding.rule == "access-beyond-stack"] == ["failure"] * len(reached)


def test_the_principal_of_each_actor(people):
    holders = {f"arn:aws:iam::{ACCOUNT}:policy/{notebook_user_policy_name(people.name_base, ANNA)}": holder(people, ANNA)}

    def principal(actor: str, group: str | None = None) -> str:
        return plan_access.principal_of(actor, "aws", ACCOUNT, people, holders, group)

    assert principal(NOTEBOOK_USER, ANNA) == holder(people, ANNA)
    assert principal(NOTEBOOK_USER, PLAIN) == principal(NOTEBOOK_USER) == NOTEBOOK_USER
    assert principal("node", ANNA) == role_arn("aws", ACCOUNT, instance_role_name(people.name_base))
    assert principal("deployer") == DEPLOYER
    assert principal(DEPLOYING_PERSON) == DEPLOYING_PERSON  # whoever buys capacity is not the plan's run
    assert principal("person:jobRunner") == "person:jobRunner"  # no team policy in the plan
    assert principal("service:backup.amazonaws.com") == "backup.amazonaws.com"


ARTIFACTS = "demo-artifacts"
RAN_AS = f"arn:aws:iam::{ACCOUNT}:role/platform-deployer"


def test_the_deployer_s_calls_carry_the_arn_the_plan_ran_as_whatever_else_their_context_holds():
    """A bucket readable only by the node role and the deployer (aws:PrincipalArn): the deployer's
    read that carries another context key is still the plan's run."""
    settings = settings_for(minimal_config())
    node = node_role(settings)
    readers = {"Version": "2012-10-17", "Statement": [{
        "Sid": "OnlyNodeAndDeployer", "Effect": "Deny", "Principal": "*", "Action": "s3:GetObject",
        "Resource": f"arn:aws:s3:::{ARTIFACTS}/*",
        "Condition": {"ArnNotEquals": {"aws:PrincipalArn": [node.state["arn"], RAN_AS]}}}]}
    read = template("deployer", "agentBundle", "s3:GetObject", f"arn:${{partition}}:s3:::{ARTIFACTS}/agent/bundle.zip",
                    {"s3:signatureversion": "AWS4-HMAC-SHA256"})
    resources = [node, resource(BUCKET_POLICY, "artifacts-policy", bucket=ARTIFACTS, policy=json.dumps(readers))]

    as_planned, _ = plan_access.check_access(settings, resources, {"calls": [read]}, deployer=RAN_AS)
    unknown, _ = plan_access.check_access(settings, resources, {"calls": [read]})

    assert as_planned["denied"] == []
    assert [call["reason"].rsplit(":", 1)[-1] for call in unknown["denied"]] == ["OnlyNodeAndDeployer"]


def test_a_download_from_a_bucket_of_another_region_passes_no_gateway_endpoint():
    """Outside us-east-1 the mount-s3 download leaves through the NAT gateway: the S3 endpoint's
    policy, which admits only the stack's buckets, does not see it; the stack's own bucket's reads do."""
    settings = settings_for(minimal_config(storage={"s3Mount": {"install": "download"}}), stack="west", region="us-west-2")
    endpoint = s3_gateway_endpoint_policy("aws", ACCOUNT, "us-west-2", ["other-bucket"])
    download = template("node", "storage.s3Mount", "s3:GetObject", "arn:${partition}:s3:::mountpoint-s3-release/${objectKey}",
                        endpoint="s3", principal="anonymous")
    own = template("node", "storage.s3Mount", "s3:GetObject", "arn:${partition}:s3:::${dataBucket}/${readPrefix}${objectKey}",
                   endpoint="s3", principal="anonymous")
    resources = [node_role(settings), resource(VPC_ENDPOINT, "s3-endpoint", serviceName="com.amazonaws.us-west-2.s3",
                                               policy=json.dumps(endpoint))]

    access, _ = plan_access.check_access(settings, resources, {"calls": [download, own]})

    assert [(call["resource"], call["endpoint"]) for call in access["denied"]] == [
        ("arn:aws:s3:::demo-data/datasets/example/object.bin", "s3")]
    assert access["calls"] == 2
