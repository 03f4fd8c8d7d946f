"""The parts the plan's access check is built from, on hand-made resources: the policies it gathers
(plan/access_documents.py), the `secretEnv` values and their stand-in key (plan/access_secrets.py),
and each placeholder's values and a template's fill (plan/access_templates.py). Each test kills
mutants of those modules (tests/mutation)."""

from __future__ import annotations

import json

import pytest

from gpucloud.naming import autoscaling_group_name, endpoint_logs_bucket_name
from gpucloud.plan.access_documents import AWS_MANAGED, collect_documents, plan_account
from gpucloud.plan.access_secrets import EXAMPLE_SECRET_SUFFIX, SECRET_KEY_ID, secret_key_policies, secret_values
from gpucloud.plan.access_templates import (
    BUCKET_OBJECT,
    as_group_member,
    fill,
    group_ids,
    group_values,
    placeholder_values,
    stack_features,
)
from gpucloud.policy.resource_types import (
    AUTOSCALING_GROUP,
    IAM_ROLE,
    IAM_ROLE_POLICY,
    KMS_KEY,
    PROMETHEUS_WORKSPACE,
    ROLE_POLICY_ATTACHMENT,
    TOPIC,
    VPC_ENDPOINT,
)
from gpucloud.testing import AppliedResource
from support import minimal_config, settings_for

ACCOUNT = "123456789012"
NODE_ROLE = f"arn:aws:iam::{ACCOUNT}:role/demo-node"
ALLOW_ALL = {"Version": "2012-10-17", "Statement": [{"Sid": "All", "Effect": "Allow", "Action": "*", "Resource": "*"}]}


def resource(kind: str, logical: str, /, resource_id: str | None = None, **state) -> AppliedResource:
    return AppliedResource(urn=f"urn:pulumi:demo::gpu-cloud::{kind}::{logical}", type=kind, name=logical, custom=True,
                           id=resource_id, outputs=state)


def group(name: str, **more) -> dict:
    return {"name": name, "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 1, **more}


# plan/access_documents.py

def test_the_plan_s_account_is_its_roles_not_another_resource_s():
    topic = resource(TOPIC, "shared-alerts", arn="arn:aws:sns:us-east-1:999999999999:shared-alerts")
    role = resource(IAM_ROLE, "node-role", name="demo-node", arn=NODE_ROLE)

    assert plan_account([topic, role]) == ACCOUNT
    assert plan_account([topic]) is None


def test_a_role_s_identity_is_its_inline_policies_and_those_put_on_it_by_name_or_arn():
    """A role policy on a role outside the plan, named by its ARN, is that role's; one on a role the
    plan neither makes nor names by ARN is nobody's."""
    existing = f"arn:aws:iam::{ACCOUNT}:role/existing-team-role"
    resources = [
        resource(IAM_ROLE, "node-role", name="demo-node", arn=NODE_ROLE,
                 inlinePolicies=[{"name": "inline", "policy": json.dumps(ALLOW_ALL)}]),
        resource(IAM_ROLE_POLICY, "team-extra", role=existing, policy=json.dumps(ALLOW_ALL)),
        resource(IAM_ROLE_POLICY, "unknown-role", role="not-in-the-plan", policy=json.dumps(ALLOW_ALL)),
    ]

    documents = collect_documents(resources, "aws", ACCOUNT)

    assert {owner: [document["Id"] for document in held] for owner, held in documents.identity.items()} == {
        NODE_ROLE: ["node-role inline policy 'inline'"], existing: ["team-extra policy"]}


def test_an_aws_managed_policy_moto_does_not_know_is_left_out():
    resources = [resource(IAM_ROLE, "node-role", name="demo-node", arn=NODE_ROLE),
                 resource(ROLE_POLICY_ATTACHMENT, "ssm", role="demo-node",
                          policyArn="arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"),
                 resource(ROLE_POLICY_ATTACHMENT, "invented", role="demo-node", policyArn="arn:aws:iam::aws:policy/NoSuchPolicy")]

    documents = collect_documents(resources, "aws", ACCOUNT)

    assert [document["Id"] for document in documents.identity[NODE_ROLE]] == [f"{AWS_MANAGED} AmazonSSMManagedInstanceCore"]


def test_a_key_holds_its_own_policy_or_kms_s_default_one():
    own = {"Version": "2012-10-17", "Statement": [{"Sid": "OnlyTheNode", "Effect": "Allow",
                                                   "Principal": {"AWS": NODE_ROLE}, "Action": "kms:Decrypt", "Resource": "*"}]}
    keys = [resource(KMS_KEY, "project", arn=f"arn:aws:kms:us-east-1:{ACCOUNT}:key/project", policy=json.dumps(own)),
            resource(KMS_KEY, "bare", arn=f"arn:aws:kms:us-east-1:{ACCOUNT}:key/bare")]

    documents = collect_documents(keys, "aws", ACCOUNT)

    statements = {arn.rsplit("/", 1)[1]: [(s["Sid"], s["Principal"], s["Action"]) for s in document["Statement"]]
                  for arn, document in documents.resource}
    assert statements == {"project": [("OnlyTheNode", {"AWS": NODE_ROLE}, "kms:Decrypt")],
                          "bare": [("Enable IAM User Permissions", {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, "kms:*")]}


def test_an_endpoint_policy_is_kept_under_its_whole_service_name():
    endpoints = [resource(VPC_ENDPOINT, "ecr-api", serviceName="com.amazonaws.us-east-1.ecr.api", policy=json.dumps(ALLOW_ALL)),
                 resource(VPC_ENDPOINT, "s3", serviceName="com.amazonaws.us-east-1.s3", policy=json.dumps(ALLOW_ALL)),
                 resource(VPC_ENDPOINT, "logs", serviceName="com.amazonaws.us-east-1.logs", policy=" ")]

    assert sorted(collect_documents(endpoints, "aws", ACCOUNT).endpoints) == ["ecr.api", "s3"]


# plan/access_secrets.py

def secret_env_config(*references: str):
    containers = [{"name": "app", "image": "vllm/vllm-openai:v0.6.3", "port": 8000,
                   "secretEnv": {f"VALUE_{index}": reference for index, reference in enumerate(references)}}]
    return settings_for(minimal_config(groups=[group("servers", services={"containers": containers})])).config


STAND_IN_KEY = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/{SECRET_KEY_ID}"


@pytest.mark.parametrize("references", [("ssm:/team/hf-token",), ("secretsmanager:team/wandb",)], ids=["parameter", "secret"])
def test_a_parameter_or_a_secret_alone_is_decrypted_with_the_stand_in_key(references):
    config = secret_env_config(*references)

    assert secret_values(config, "aws", "us-east-1", ACCOUNT)["secretKeyArn"] == [STAND_IN_KEY]
    [(key, policy)] = secret_key_policies(config, "aws", "us-east-1", ACCOUNT)
    assert key == STAND_IN_KEY and policy["Statement"][0]["Principal"] == {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}


def test_without_secret_env_there_is_no_stand_in_key():
    config = settings_for(minimal_config()).config

    assert secret_values(config, "aws", "us-east-1", ACCOUNT)["secretKeyArn"] == []
    assert secret_key_policies(config, "aws", "us-east-1", ACCOUNT) == []


def test_a_secret_named_by_arn_keeps_it_and_one_named_by_name_gets_an_example_suffix():
    given = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:team/given-AbCdEf"
    config = secret_env_config(f"secretsmanager:{given}", "secretsmanager:team/wandb", "ssm:/team/hf-token")

    values = secret_values(config, "aws", "us-east-1", ACCOUNT)

    assert values["secretArn"] == [given, f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:team/wandb-{EXAMPLE_SECRET_SUFFIX}"]
    assert values["secretParameter"] == ["team/hf-token"]


# plan/access_templates.py

def test_every_stack_s_deployer_starts_the_job_supervisor_and_only_a_block_to_buy_is_bought():
    offering = {"offering": {"instanceType": "p5.48xlarge", "count": 1, "durationHours": 24,
                             "startAfter": "2027-02-20", "endBefore": "2027-03-10"}}
    groups = [group("held", instanceTypes=["p5.48xlarge"], spotPercent=0,
                    capacity={"capacityBlock": {"reservationId": "cr-0123456789abcdef0"}}),
              group("bought", instanceTypes=["p5.48xlarge"], spotPercent=0, capacity={"capacityBlock": offering})]

    features = stack_features(settings_for(minimal_config(groups=groups)))

    assert features["jobSupervisor"] == ("deployer", ["held", "bought"])
    assert features["capacityBuy"] == ("person:deployer", ["bought"])


def asg(settings, name: str, uuid: str) -> AppliedResource:
    return resource(AUTOSCALING_GROUP, name, arn=f"arn:aws:autoscaling:us-east-1:{ACCOUNT}:autoScalingGroup:{uuid}:"
                                                 f"autoScalingGroupName/{autoscaling_group_name(settings.name_base, name)}")


def test_placeholders_take_the_agent_bundle_the_workspace_and_the_first_group_s_id():
    settings = settings_for(minimal_config(monitoring={"prometheus": {"enabled": True}},
                                           groups=[group("train"), group("eval")]))
    resources = [
        resource(BUCKET_OBJECT, "job-document", bucket="demo-jobs", key="jobs/run.json"),
        resource(BUCKET_OBJECT, "agent-bundle", bucket="demo-artifacts", key="agent/bundle-0a1b.zip"),
        resource(PROMETHEUS_WORKSPACE, "metrics", resource_id="ws-0123"),
        resource(KMS_KEY, "project", resource_id="key-0123", arn=f"arn:aws:kms:us-east-1:{ACCOUNT}:key/key-0123"),
        asg(settings, "train", "f0000000-0000-4000-8000-000000000000"),
        asg(settings, "eval", "e0000000-0000-4000-8000-000000000000"),
    ]

    values = placeholder_values(settings, resources, ACCOUNT)

    assert values["artifactsBucket"] == ["demo-artifacts"] and values["agentBundleKey"] == ["agent/bundle-0a1b.zip"]
    assert values["workspaceId"] == ["ws-0123"]
    assert values["autoScalingGroupId"] == ["e0000000-0000-4000-8000-000000000000"]


def test_a_group_s_values_are_its_own_group_s_and_endpoint_s():
    serving = {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.6.3", "port": 8000}]}
    settings = settings_for(minimal_config(groups=[group("train"), group("serve", services=serving,
                                                                        endpoint={"port": 8000, "allowedCidrs": ["10.0.0.0/8"]})]))
    ids = group_ids([asg(settings, "train", "a0000000-0000-4000-8000-000000000000"),
                     asg(settings, "serve", "b0000000-0000-4000-8000-000000000000")])

    train, serve = (group_values(settings, name, ids, ACCOUNT) for name in ("train", "serve"))

    assert train["autoScalingGroupId"] == ["a0000000-0000-4000-8000-000000000000"]
    assert serve["autoScalingGroupId"] == ["b0000000-0000-4000-8000-000000000000"]
    assert "endpointLogsBucket" not in train
    assert serve["endpointLogsBucket"] == [endpoint_logs_bucket_name(settings.name_base, "serve", ACCOUNT)]
    assert "autoScalingGroupId" not in group_values(settings, "other-group", ids, ACCOUNT)


def test_a_group_member_s_call_on_a_node_reads_the_group_tag_too():
    on_node = {"resource": f"arn:aws:ec2:us-east-1:{ACCOUNT}:instance/i-0123456789abcdef0",
               "context": {"ssm:resourceTag/gpu-cloud:stack": "demo", "aws:ResourceTag/gpu-cloud:stack": "demo"}}
    on_group = {"resource": "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:id:autoScalingGroupName/g",
                "context": {"autoscaling:ResourceTag/gpu-cloud:stack": "demo"}}

    assert as_group_member(on_node, "anna")["context"] == {**on_node["context"], "ssm:resourceTag/GpuGroup": "anna",
                                                           "aws:ResourceTag/GpuGroup": "anna"}
    assert as_group_member(on_group, "anna") == {**on_group, "group": "anna"}


def test_placeholders_inside_a_list_are_filled():
    template = {"action": "kms:CreateGrant", "resource": "${keyArn}",
                "context": {"kms:EncryptionContextKeys": ["aws:ebs:id"], "kms:GranteePrincipal": ["${role}"]}, "endpoint": None}

    [filled], unknown = fill(template, {"keyArn": ["k"], "role": ["r"]})

    assert unknown == set()
    assert filled == {"action": "kms:CreateGrant", "resource": "k", "endpoint": None,
                      "context": {"kms:EncryptionContextKeys": ["aws:ebs:id"], "kms:GranteePrincipal": ["r"]}}
