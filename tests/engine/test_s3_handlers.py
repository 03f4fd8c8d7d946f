"""The engine's S3: buckets and objects land in moto, and what S3 refuses but moto accepts
(reserved or malformed bucket names, a policy on another bucket, too many object tags, a key that
does not exist) is refused here too."""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws
import pytest
from botocore.exceptions import ClientError
from hypothesis import given
from hypothesis import strategies as st

from gpucloud.naming import artifacts_bucket_name
from gpucloud.testing import BrokenReferenceError, run_program
from gpucloud.testing.handlers.s3 import bucket_name_problem

MISSING_KEY = "arn:aws:kms:us-east-1:123456789012:key/00000000-0000-0000-0000-000000000000"


@pytest.mark.parametrize(
    "name, problem",
    [
        ("ab", "3-63 characters"),
        ("Upper-Case", "3-63 characters"),
        ("ends-with-dash-", "3-63 characters"),
        ("two..periods", "two adjacent periods"),
        ("192.168.5.4", "IP address"),
        ("xn--punycode", "reserved"),
        ("sthree-bucket", "reserved"),
        ("data-s3alias", "reserved"),
        ("a" * 64, "3-63 characters"),
    ],
)
def test_bucket_names_s3_refuses_are_refused(account, name, problem):
    def program():
        aws.s3.Bucket("artifacts", bucket=name)

    with pytest.raises(ClientError, match="InvalidBucketName") as error:
        run_program(program, account)

    assert problem in str(error.value)
    assert account.client("s3").list_buckets()["Buckets"] == []


@given(base=st.from_regex(r"[a-z][a-z0-9_-]{0,39}", fullmatch=True), account_id=st.from_regex(r"[0-9]{12}", fullmatch=True))
def test_every_stack_gets_a_valid_artifacts_bucket_name(base, account_id):
    name = artifacts_bucket_name(base, account_id)

    assert bucket_name_problem(name) is None, name
    assert name.endswith(account_id)


def test_a_bucket_policy_naming_another_bucket_is_refused(account):
    def program():
        bucket = aws.s3.Bucket("artifacts", bucket="team-artifacts")
        aws.s3.BucketPolicy("policy", bucket=bucket.id, policy=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Deny", "Principal": "*", "Action": "s3:*",
                           "Resource": "arn:aws:s3:::someone-elses-bucket/*"}],
        }))

    with pytest.raises(ClientError, match="Policy has invalid resource: arn:aws:s3:::someone-elses-bucket/"):
        run_program(program, account)


def test_more_than_ten_object_tags_are_refused(account):
    def program():
        bucket = aws.s3.Bucket("artifacts", bucket="team-artifacts")
        aws.s3.BucketObjectv2("bundle", bucket=bucket.id, key="agent/x.zip", content="x",
                              tags={f"tag{number}": "v" for number in range(11)})

    with pytest.raises(ClientError, match="InvalidTag"):
        run_program(program, account)


@pytest.mark.parametrize("where", ["default encryption", "object"])
def test_sse_kms_with_a_key_that_does_not_exist_is_refused(account, where):
    def program():
        bucket = aws.s3.Bucket("artifacts", bucket="team-artifacts")
        if where == "object":
            aws.s3.BucketObjectv2("bundle", bucket=bucket.id, key="agent/x.zip", content="x",
                                  server_side_encryption="aws:kms", kms_key_id=MISSING_KEY)
        else:
            aws.s3.BucketServerSideEncryptionConfiguration("encryption", bucket=bucket.id, rules=[{
                "apply_server_side_encryption_by_default": {"sse_algorithm": "aws:kms", "kms_master_key_id": MISSING_KEY},
            }])

    with pytest.raises(BrokenReferenceError, match="does not exist"):
        run_program(program, account)


def test_an_object_lands_in_moto_with_its_encryption_tags_and_bytes(account):
    def program():
        key = aws.kms.Key("key")
        bucket = aws.s3.Bucket("artifacts", bucket="team-artifacts")
        bundle = aws.s3.BucketObjectv2(
            "bundle", bucket=bucket.id, key="agent/x.zip", content_base64="AAEC", content_type="application/zip",
            server_side_encryption="aws:kms", kms_key_id=key.arn, tags={"Owner": "ml@example.com", "sha256": "ab"},
        )
        pulumi.export("keyArn", key.arn)
        pulumi.export("versionId", bundle.version_id)

    deployment = run_program(program, account)

    s3 = account.client("s3")
    answer = s3.get_object(Bucket="team-artifacts", Key="agent/x.zip")
    assert answer["Body"].read() == b"\x00\x01\x02" and answer["ContentType"] == "application/zip"
    assert answer["SSEKMSKeyId"] == deployment.outputs["keyArn"]
    tags = s3.get_object_tagging(Bucket="team-artifacts", Key="agent/x.zip")["TagSet"]
    assert {tag["Key"]: tag["Value"] for tag in tags} == {"Owner": "ml@example.com", "sha256": "ab"}


def test_session_context_resolves_an_assumed_role_to_its_role(account):
    iam = account.client("iam")
    role = iam.create_role(RoleName="deployer", Path="/ci/", AssumeRolePolicyDocument="{}")["Role"]

    def program():
        context = aws.iam.get_session_context_output(
            arn=f"arn:aws:sts::{account.account_id}:assumed-role/deployer/github-actions-42")
        pulumi.export("issuer", context.issuer_arn)
        pulumi.export("session", context.session_name)

    deployment = run_program(program, account)

    assert deployment.outputs == {"issuer": role["Arn"], "session": "github-actions-42"}
    assert role["Arn"].endswith(":role/ci/deployer")
