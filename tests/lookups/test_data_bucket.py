"""The data bucket the stack names but does not create: looked up by the program (aws.s3.getBucket,
so a real preview stops on it), recorded by `account snapshot`, and said as not checked offline
without facts."""

from __future__ import annotations

import boto3
import pulumi_aws as aws
import pytest
from moto import mock_aws

from gpucloud.config import ConfigError, parse_stack_config
from gpucloud.plan import plan_stack
from gpucloud.plan.snapshot import _buckets
from gpucloud.testing import run_program
from gpucloud.testing.facts import AccountFacts, seed_account
from support import minimal_config

MISSING = "no-such-bucket-anywhere-123"


def settings(bucket: str = MISSING):
    values = minimal_config(data={"bucket": bucket, "readPrefixes": ["datasets/"]})
    return parse_stack_config(values, stack="demo", source="stacks/Pulumi.demo.yaml", region="us-east-1")


def facts(*buckets: dict) -> AccountFacts:
    return AccountFacts.model_validate({"serviceLinkedRoles": ["autoscaling.amazonaws.com"], "buckets": list(buckets)})


def bucket_problem(plan_facts: AccountFacts, bucket: str = MISSING) -> str:
    with pytest.raises(ConfigError) as error:
        plan_stack(settings(bucket), facts=plan_facts)
    [(key, reason)] = [problem for problem in error.value.problems if problem[0] == "gpu-cloud:data.bucket"]
    assert "\n" not in reason
    return reason


def test_the_data_source_fails_as_the_provider_does_when_facts_say_the_bucket_is_missing(account):
    seed_account(account, facts())
    with pytest.raises(Exception, match=rf"reading S3 Bucket \({MISSING}\): couldn't find resource"):
        run_program(lambda: aws.s3.get_bucket(bucket=MISSING), account)


def test_the_data_source_answers_a_bucket_from_moto_with_its_region(account):
    account.session.client("s3", region_name="eu-west-1").create_bucket(
        Bucket="team-data", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    found = {}
    run_program(lambda: found.update(region=aws.s3.get_bucket(bucket="team-data").bucket_region), account)
    assert found == {"region": "eu-west-1"}


def test_a_missing_bucket_stops_the_plan_naming_the_key():
    assert bucket_problem(facts()).startswith(f"bucket {MISSING} does not exist")


def test_a_bucket_in_another_region_stops_the_plan():
    reason = bucket_problem(facts({"name": "team-data", "region": "eu-west-1"}), "team-data")
    assert reason.startswith("bucket team-data is in eu-west-1, the stack in us-east-1")


def test_a_bucket_of_another_account_stops_the_plan():
    reason = bucket_problem(facts({"name": "team-data", "region": "us-east-1", "ownedByAccount": False}), "team-data")
    assert reason.startswith("bucket team-data belongs to another account")


def test_a_bucket_the_facts_hold_plans_without_a_bucket_line():
    held = facts({"name": "team-data", "region": "us-east-1", "encryption": "aws:kms"})
    plan = plan_stack(settings("team-data"), facts=held)
    assert not plan.failed
    assert not [f for f in plan.findings if "data bucket not checked" in f.message]


def test_without_facts_the_plan_says_the_bucket_was_not_checked_and_does_not_fail():
    plan = plan_stack(settings())
    [line] = [f for f in plan.findings if "data bucket not checked" in f.message]
    assert line.severity == "warning" and "\n" not in line.message and not plan.failed


def test_facts_without_buckets_leave_it_not_checked():
    plan = plan_stack(settings(), facts=AccountFacts.model_validate({"serviceLinkedRoles": []}))
    assert [f for f in plan.findings if "data bucket not checked" in f.message]


@pytest.fixture
def credentials(monkeypatch):
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)


def test_the_snapshot_records_region_and_encryption_and_leaves_a_missing_bucket_out(credentials):
    with mock_aws():
        s3 = boto3.client("s3", region_name="eu-west-1")
        s3.create_bucket(Bucket="team-data", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        s3.put_bucket_encryption(Bucket="team-data", ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms"}}]})
        account_id = boto3.client("sts").get_caller_identity()["Account"]
        found = _buckets(boto3.client("s3", region_name="us-east-1"), settings("team-data"), account_id)
        missing = _buckets(boto3.client("s3", region_name="us-east-1"), settings(), account_id)

    assert found == [{"name": "team-data", "region": "eu-west-1", "ownedByAccount": True, "encryption": "aws:kms"}]
    assert missing == []
    reason = bucket_problem(AccountFacts.model_validate({"serviceLinkedRoles": [], "buckets": found}), "team-data")
    assert "is in eu-west-1" in reason
