"""The team's job-runner policy, read as AWS authorizes each call `gpucloud run`, `logs` and `stop`
make: the action on the resource ARN the service checks it against, with the request's condition
values. moto enforces no IAM, so these read the document itself."""

from __future__ import annotations

import fnmatch
import functools
import importlib.util
import json
from pathlib import Path

from gpucloud.documents.jobs import job_runner_policy
from gpucloud.naming import STACK_TAG, job_log_group_name
from support import ROOT

ACCOUNT = "123456789012"
REGION = "us-east-1"
LOG_GROUP = job_log_group_name("vision-train")
LOG_GROUP_ARN = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{LOG_GROUP}"
BUCKET = "example-vision-data"
JOBS = "runs/vision-train/jobs/"

POLICY = job_runner_policy(
    partition="aws", region=REGION, account_id=ACCOUNT, name_base="vision-train",
    document_name="gpu-cloud-vision-train-run", log_group_name=LOG_GROUP,
    group_names=["gpu-cloud-vision-train-trainers"], key_arn=f"arn:aws:kms:{REGION}:{ACCOUNT}:key/k",
    bucket=BUCKET, jobs_prefix=JOBS,
)

LOG_READS = {
    # CloudWatch Logs authorizes these two on the log group in its `:*` form (the form
    # DescribeLogGroups returns), GetLogEvents on the stream: CloudWatch Logs user guide, "Overview
    # of managing access permissions to your CloudWatch Logs resources"; Service Authorization
    # Reference for CloudWatch Logs (log-group* / log-stream*); aws/aws-cli#3578; read 2026-11-28.
    "logs:DescribeLogStreams": f"{LOG_GROUP_ARN}:*",
    "logs:FilterLogEvents": f"{LOG_GROUP_ARN}:*",
    "logs:GetLogEvents": f"{LOG_GROUP_ARN}:log-stream:0b7c-cmd/i-0abc/launch/stdout",
}


def _listed(value) -> list:
    return value if isinstance(value, list) else [value]


def _matches(pattern: str, value: str) -> bool:
    """IAM's ARN and StringLike matching: `*` any run of characters, `?` one, case-sensitive."""
    return fnmatch.fnmatchcase(value, pattern.replace("[", "[[]"))


def _condition_holds(condition: dict, context: dict[str, str]) -> bool:
    for operator, tests in condition.items():
        for key, wanted in tests.items():
            if key not in context:
                return False
            if operator == "StringEquals" and context[key] not in _listed(wanted):
                return False
            if operator == "StringLike" and not any(_matches(item, context[key]) for item in _listed(wanted)):
                return False
    return True


def allows(action: str, resource: str, context: dict[str, str] | None = None) -> bool:
    return any(
        statement["Effect"] == "Allow"
        and action in _listed(statement["Action"])
        and any(_matches(pattern, resource) for pattern in _listed(statement["Resource"]))
        and _condition_holds(statement.get("Condition", {}), context or {})
        for statement in POLICY["Statement"]
    )


def test_the_log_reads_gpucloud_logs_makes_are_allowed_on_the_arns_cloudwatch_logs_checks():
    assert {action: allows(action, arn) for action, arn in LOG_READS.items()} == dict.fromkeys(LOG_READS, True)


def test_the_log_reads_reach_no_other_log_group():
    for other in ("/gpu-cloud/vision-train/jobs-archive", "/gpu-cloud/vision/jobs", "/gpu-cloud/vision-train/node"):
        arn = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{other}"
        assert not allows("logs:FilterLogEvents", f"{arn}:*"), other
        assert not allows("logs:GetLogEvents", f"{arn}:log-stream:x"), other


def test_a_missing_job_record_can_be_told_from_a_denied_one_and_listing_stays_in_the_jobs_prefix():
    bucket = f"arn:aws:s3:::{BUCKET}"
    record = f"{JOBS}trainers-20261125190000-ab12/job.json"

    # S3 answers a missing key with 404 only to a caller allowed s3:ListBucket, with the key as s3:prefix.
    assert allows("s3:GetObject", f"{bucket}/{record}")
    assert allows("s3:ListBucket", bucket, {"s3:prefix": record})
    assert not allows("s3:ListBucket", bucket, {"s3:prefix": "runs/vision-train/models/"})
    assert not allows("s3:ListBucket", bucket, {"s3:prefix": ""})
    assert not allows("s3:ListBucket", bucket)


@functools.cache
def iam_privileges() -> dict[str, dict]:
    """`prefix:Action` -> its entry in parliament's copy of the Service Authorization Reference."""
    path = Path(importlib.util.find_spec("parliament").origin).parent / "iam_definition.json"
    return {f"{service['prefix']}:{privilege['privilege']}": privilege
            for service in json.loads(path.read_text()) for privilege in service["privileges"]}


def condition_keys(action: str) -> set[str]:
    return {key for resource in iam_privileges()[action]["resource_types"] for key in resource["condition_keys"]}


def test_what_the_policy_allows_on_every_resource_is_what_iam_cannot_scope_and_the_guide_says_so():
    unscoped = sorted(action for statement in POLICY["Statement"] if statement["Resource"] == "*"
                      for action in _listed(statement["Action"]))
    guide = (ROOT / "docs/guides/training-jobs.md").read_text()
    exposed = guide[guide.index("### What it exposes"):guide.index("### Protect the tag")]

    assert all(not resource["resource_type"] for action in unscoped
               for resource in iam_privileges()[action]["resource_types"]), "no action on * that IAM could scope"
    for action in ("ssm:ListCommands", "ssm:ListCommandInvocations", "ssm:GetCommandInvocation", "ssm:CancelCommand"):
        assert action in unscoped and action.split(":")[1] in exposed, action
    assert "free of secrets" in exposed and f"/gpu-cloud/<stack>/jobs" in exposed


def test_the_guide_s_scp_keeps_the_stack_tag_to_deployers_with_keys_each_action_supports():
    guide = (ROOT / "docs/guides/training-jobs.md").read_text()
    section = guide[guide.index("### Protect the tag"):]
    scp = json.loads(section[section.index("```json") + len("```json"):section.index("```", section.index("```json") + 7)])
    denies = {statement["Sid"]: statement for statement in scp["Statement"] if statement["Effect"] == "Deny"}

    tagging = denies["OnlyDeployersSetTheStackTag"]
    assert tagging["Condition"]["ForAnyValue:StringEquals"]["aws:TagKeys"] == [STACK_TAG]
    untagging = denies["OnlyDeployersUntagStackResources"]
    assert untagging["Condition"]["Null"] == {f"aws:ResourceTag/{STACK_TAG}": "false"}
    for statement in (tagging, untagging):
        key = next(iter(next(iter(statement["Condition"].values()))))
        wanted = "aws:TagKeys" if key == "aws:TagKeys" else "aws:ResourceTag/${TagKey}"
        assert all(wanted in condition_keys(action) for action in statement["Action"]), statement["Sid"]
    for action in ("ec2:CreateTags", "ec2:DeleteTags", "autoscaling:CreateOrUpdateTags", "autoscaling:DeleteTags",
                   "ssm:AddTagsToResource", "ssm:RemoveTagsFromResource"):
        assert any(action in statement["Action"] for statement in denies.values()), action
    assert all(statement["Condition"]["ArnNotLike"]["aws:PrincipalArn"] for statement in denies.values())
