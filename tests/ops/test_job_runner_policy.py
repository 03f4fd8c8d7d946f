"""The team's job-runner policy, read as AWS authorizes each call `gpucloud run`, `logs` and `stop`
make: the action on the resource ARN the service checks it against, with the request's condition
values. moto enforces no IAM, so these read the document itself."""

from __future__ import annotations

import fnmatch

from gpucloud.documents.jobs import job_runner_policy
from gpucloud.naming import job_log_group_name

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
