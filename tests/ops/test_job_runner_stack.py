"""What a deployed stack gives `gpucloud run`, checked on the engine with boto3: the job document
with every parameter held to a pattern and passed as an environment variable, the job log group
under the project key, the team's managed policy, the node role's look-up of the log group, and
node-to-node traffic (rendezvous and NCCL) only within a multi-node group."""

from __future__ import annotations

import json

import pytest

from gpucloud.config import load_stack_file
from gpucloud.documents.jobs import JOB_PARAMETERS
from gpucloud.testing import moto_account
from support import STACKS, deploy

SETTINGS = load_stack_file(STACKS / "Pulumi.vision-train.yaml")


@pytest.fixture(scope="module")
def stack():
    with moto_account("us-east-1") as account:
        deploy(SETTINGS, account)
        yield account


def test_the_job_document_takes_only_patterned_parameters_as_environment_variables(stack):
    ssm = stack.client("ssm")
    document = ssm.get_document(Name="gpu-cloud-vision-train-run")
    content = json.loads(document["Content"])

    assert document["DocumentType"] == "Command" and content["schemaVersion"] == "2.2"
    assert set(content["parameters"]) == set(JOB_PARAMETERS)
    assert all(parameter["interpolationType"] == "ENV_VAR" and parameter["allowedPattern"]
               for parameter in content["parameters"].values())
    [step] = content["mainSteps"]
    assert step["action"] == "aws:runShellScript" and "{{" not in json.dumps(step), "no value is pasted into the script"
    tags = {tag["Key"]: tag["Value"] for tag in ssm.list_tags_for_resource(
        ResourceType="Document", ResourceId="gpu-cloud-vision-train-run")["TagList"]}
    assert tags["gpu-cloud:stack"] == "vision-train", "the team policy's SendCommand condition reads this tag"


def test_job_output_goes_to_a_log_group_under_the_project_key(stack):
    [group] = [item for item in stack.client("logs").describe_log_groups(logGroupNamePrefix="/gpu-cloud/vision-train/jobs")[
        "logGroups"] if item["logGroupName"] == "/gpu-cloud/vision-train/jobs"]
    key = stack.client("kms").describe_key(KeyId="alias/gpu-cloud/vision-train")["KeyMetadata"]["Arn"]

    assert group["kmsKeyId"] == key and group["retentionInDays"] == 90
    [supervisor] = stack.client("logs").describe_log_groups(logGroupNamePrefix="/gpu-cloud/vision-train/jobs-supervisor")[
        "logGroups"]
    assert supervisor["kmsKeyId"] == key, "the job supervisor's log group is under the project key too"


def test_the_team_policy_sends_the_document_only_to_the_stack_s_instances(stack):
    iam = stack.client("iam")
    [policy] = [item for item in iam.list_policies(Scope="Local")["Policies"]
                if item["PolicyName"] == "gpu-cloud-vision-train-job-runner"]
    document = iam.get_policy_version(PolicyArn=policy["Arn"], VersionId=policy["DefaultVersionId"])["PolicyVersion"]["Document"]
    document = json.loads(document) if isinstance(document, str) else document
    statements = {statement["Sid"]: statement for statement in document["Statement"]}

    send = statements["SendJobDocumentToStackInstances"]
    assert send["Action"] == "ssm:SendCommand" and send["Resource"] == [
        f"arn:aws:ssm:us-east-1:{stack.account_id}:document/gpu-cloud-vision-train-run",
        f"arn:aws:ec2:us-east-1:{stack.account_id}:instance/*"]
    assert send["Condition"] == {"StringEquals": {"ssm:resourceTag/gpu-cloud:stack": "vision-train"}}
    assert statements["ScaleStackGroups"]["Condition"] == {
        "StringEquals": {"autoscaling:ResourceTag/gpu-cloud:stack": "vision-train"}}
    assert statements["JobRecordsUnderWritePrefix"]["Resource"] == "arn:aws:s3:::example-vision-data/runs/vision-train/jobs/*"
    assert [sid for sid, statement in statements.items() if "ssm:SendCommand" in json.dumps(statement["Action"])] == [
        "SendJobDocumentToStackInstances"]


def test_nodes_look_up_the_log_group_and_reach_each_other_only_within_the_group(stack):
    iam = stack.client("iam")
    policies = [json.loads(json.dumps(iam.get_role_policy(RoleName="gpu-cloud-vision-train-node", PolicyName=name)["PolicyDocument"]))
                for name in iam.list_role_policies(RoleName="gpu-cloud-vision-train-node")["PolicyNames"]]
    assert "logs:DescribeLogGroups" in json.dumps(policies)

    ec2 = stack.client("ec2")
    [group] = [item for item in ec2.describe_security_groups()["SecurityGroups"]
               if item.get("Description", "").endswith("vision-train/trainers: GPU nodes")]
    rules = ec2.describe_security_group_rules(Filters=[{"Name": "group-id", "Values": [group["GroupId"]]}])["SecurityGroupRules"]
    [file_servers] = [item["GroupId"] for item in ec2.describe_security_groups()["SecurityGroups"]
                      if "Lustre" in item.get("Description", "")]
    inbound = [(rule["IpProtocol"], rule["FromPort"], rule["ToPort"], rule.get("ReferencedGroupInfo", {}).get("GroupId"))
               for rule in rules if not rule["IsEgress"]]
    assert sorted(inbound, key=str) == sorted([
        ("-1", -1, -1, group["GroupId"]), ("tcp", 988, 988, file_servers), ("tcp", 1018, 1023, file_servers),
    ], key=str), "MASTER_PORT and NCCL's ports from the group's own members, Lustre from the file servers, nothing else"
