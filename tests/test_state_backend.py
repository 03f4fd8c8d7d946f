"""`gpucloud backend bootstrap` end to end on moto: the bucket and key it leaves behind, idempotence,
and the buckets it must refuse to take over."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from gpucloud.state_backend import (
    DEFAULT_KEY_ALIAS,
    BackendError,
    bootstrap_backend,
    format_instructions,
)

BUCKET = "acme-gpu-cloud-state"
REGION = "us-east-1"
OTHER_ACCOUNT_ID = "111111111111"


@pytest.fixture
def aws_credentials(monkeypatch):
    """Fake credentials, so nothing can reach a real account."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SECURITY_TOKEN", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("MOTO_ACCOUNT_ID", raising=False)


@pytest.fixture
def session(aws_credentials):
    with mock_aws():
        yield boto3.Session(region_name=REGION)


def error_code(call) -> str:
    with pytest.raises(ClientError) as error:
        call()
    return error.value.response["Error"]["Code"]


def backend_settings(session: boto3.Session, bucket: str, region: str) -> dict:
    """Everything bootstrap configures, read back through boto3, for comparing runs."""
    s3 = session.client("s3", region_name=region)
    kms = session.client("kms", region_name=region)
    key_ids = [key["KeyId"] for key in kms.list_keys()["Keys"]]
    return {
        "location": s3.get_bucket_location(Bucket=bucket)["LocationConstraint"],
        "versioning": s3.get_bucket_versioning(Bucket=bucket).get("Status"),
        "encryption": s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"],
        "public_access": s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"],
        "policy": json.loads(s3.get_bucket_policy(Bucket=bucket)["Policy"]),
        "lifecycle": s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"],
        "keys": key_ids,
        "rotation": {key_id: kms.get_key_rotation_status(KeyId=key_id)["KeyRotationEnabled"] for key_id in key_ids},
        "aliases": sorted(
            (alias["AliasName"], alias.get("TargetKeyId"))
            for alias in kms.list_aliases()["Aliases"]
            if not alias["AliasName"].startswith("alias/aws/")
        ),
    }


def test_first_run_creates_versioned_tls_only_bucket_encrypted_with_a_rotating_key(session):
    result = bootstrap_backend(session, BUCKET, REGION)

    s3 = session.client("s3")
    kms = session.client("kms")
    [key] = kms.list_keys()["Keys"]
    assert result.key_arn == key["KeyArn"]
    assert result.key_alias == DEFAULT_KEY_ALIAS
    metadata = kms.describe_key(KeyId=DEFAULT_KEY_ALIAS)["KeyMetadata"]
    assert metadata["Arn"] == result.key_arn
    assert metadata["KeySpec"] == "SYMMETRIC_DEFAULT"
    assert kms.get_key_rotation_status(KeyId=key["KeyId"])["KeyRotationEnabled"] is True
    aliases = kms.list_aliases(KeyId=key["KeyId"])["Aliases"]
    assert [(alias["AliasName"], alias["TargetKeyId"]) for alias in aliases] == [(DEFAULT_KEY_ALIAS, key["KeyId"])]

    assert s3.get_bucket_versioning(Bucket=BUCKET)["Status"] == "Enabled"
    assert s3.get_bucket_encryption(Bucket=BUCKET)["ServerSideEncryptionConfiguration"]["Rules"] == [
        {
            "ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": result.key_arn},
            "BucketKeyEnabled": True,
        }
    ]
    assert s3.get_public_access_block(Bucket=BUCKET)["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "IgnorePublicAcls": True,
        "BlockPublicPolicy": True,
        "RestrictPublicBuckets": True,
    }
    [statement] = json.loads(s3.get_bucket_policy(Bucket=BUCKET)["Policy"])["Statement"]
    assert statement["Effect"] == "Deny"
    assert statement["Principal"] == "*"
    assert statement["Action"] == "s3:*"
    assert sorted(statement["Resource"]) == [f"arn:aws:s3:::{BUCKET}", f"arn:aws:s3:::{BUCKET}/*"]
    assert statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    [rule] = s3.get_bucket_lifecycle_configuration(Bucket=BUCKET)["Rules"]
    assert rule["Status"] == "Enabled"
    assert rule["NoncurrentVersionExpiration"] == {"NoncurrentDays": 90}
    assert rule["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 7}

    assert result.created == [
        f"KMS key {result.key_arn} (symmetric)",
        f"KMS alias {DEFAULT_KEY_ALIAS} -> {result.key_arn}",
        f"automatic rotation on KMS key {result.key_arn}",
        f"S3 bucket {BUCKET} in {REGION}",
        f"versioning on bucket {BUCKET}",
        f"default encryption SSE-KMS with {DEFAULT_KEY_ALIAS} (bucket key on) on bucket {BUCKET}",
        f"public access block (all four settings) on bucket {BUCKET}",
        f"bucket policy statement DenyInsecureTransport (TLS only) on bucket {BUCKET}",
        "lifecycle rule pulumi-state-retention (noncurrent versions expire after 90 days, "
        f"incomplete uploads aborted after 7) on bucket {BUCKET}",
    ]


def test_second_run_changes_nothing_and_reports_nothing(session):
    first = bootstrap_backend(session, BUCKET, REGION)
    before = backend_settings(session, BUCKET, REGION)

    second = bootstrap_backend(session, BUCKET, REGION)

    assert second.created == []
    assert second.key_arn == first.key_arn
    assert backend_settings(session, BUCKET, REGION) == before
    assert len(before["keys"]) == 1


def test_key_behind_existing_alias_is_reused_and_its_rotation_turned_on(session):
    kms = session.client("kms")
    existing = kms.create_key(KeySpec="SYMMETRIC_DEFAULT", KeyUsage="ENCRYPT_DECRYPT")["KeyMetadata"]
    kms.create_alias(AliasName=DEFAULT_KEY_ALIAS, TargetKeyId=existing["KeyId"])

    result = bootstrap_backend(session, BUCKET, REGION)

    assert result.key_arn == existing["Arn"]
    assert [key["KeyId"] for key in kms.list_keys()["Keys"]] == [existing["KeyId"]]
    assert kms.get_key_rotation_status(KeyId=existing["KeyId"])["KeyRotationEnabled"] is True
    assert f"automatic rotation on KMS key {existing['Arn']}" in result.created
    assert not any(change.startswith("KMS key") or change.startswith("KMS alias") for change in result.created)


def test_alias_on_an_asymmetric_key_is_refused(session):
    kms = session.client("kms")
    signing = kms.create_key(KeySpec="RSA_2048", KeyUsage="SIGN_VERIFY")["KeyMetadata"]
    kms.create_alias(AliasName=DEFAULT_KEY_ALIAS, TargetKeyId=signing["KeyId"])

    with pytest.raises(BackendError, match="symmetric"):
        bootstrap_backend(session, BUCKET, REGION)

    assert error_code(lambda: session.client("s3").head_bucket(Bucket=BUCKET)) == "404"


def test_bucket_owned_by_another_account_is_refused_without_creating_a_key(session, monkeypatch):
    # moto's documented multi-account switch: requests use MOTO_ACCOUNT_ID while it is set.
    monkeypatch.setenv("MOTO_ACCOUNT_ID", OTHER_ACCOUNT_ID)
    session.client("s3").create_bucket(Bucket=BUCKET)
    monkeypatch.delenv("MOTO_ACCOUNT_ID")

    with pytest.raises(BackendError, match=f"'{BUCKET}' already exists and is not this account's"):
        bootstrap_backend(session, BUCKET, REGION)

    assert session.client("kms").list_keys()["Keys"] == []


def test_bucket_without_versioning_is_refused_and_left_untouched(session):
    s3 = session.client("s3")
    s3.create_bucket(Bucket=BUCKET)

    with pytest.raises(BackendError) as refusal:
        bootstrap_backend(session, BUCKET, REGION)

    assert str(refusal.value) == (
        f"bucket '{BUCKET}' exists without versioning; Pulumi state needs versioning to recover from a bad "
        "update; enable it yourself or pick a new name"
    )
    assert "Status" not in s3.get_bucket_versioning(Bucket=BUCKET)
    no_encryption = "ServerSideEncryptionConfigurationNotFoundError"
    assert error_code(lambda: s3.get_bucket_encryption(Bucket=BUCKET)) == no_encryption
    assert error_code(lambda: s3.get_public_access_block(Bucket=BUCKET)) == "NoSuchPublicAccessBlockConfiguration"
    assert error_code(lambda: s3.get_bucket_policy(Bucket=BUCKET)) == "NoSuchBucketPolicy"
    assert error_code(lambda: s3.get_bucket_lifecycle_configuration(Bucket=BUCKET)) == "NoSuchLifecycleConfiguration"
    assert session.client("kms").list_keys()["Keys"] == []


def test_versioned_bucket_of_ours_is_adopted_keeping_its_other_policy_statements_and_rules(session):
    s3 = session.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    audit_statement = {
        "Sid": "AuditRead",
        "Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::123456789012:role/auditor"},
        "Action": "s3:GetObject",
        "Resource": f"arn:aws:s3:::{BUCKET}/*",
    }
    s3.put_bucket_policy(Bucket=BUCKET, Policy=json.dumps({"Version": "2012-10-17", "Statement": [audit_statement]}))
    logs_rule = {"ID": "expire-logs", "Filter": {"Prefix": "logs/"}, "Status": "Enabled", "Expiration": {"Days": 30}}
    s3.put_bucket_lifecycle_configuration(Bucket=BUCKET, LifecycleConfiguration={"Rules": [logs_rule]})

    result = bootstrap_backend(session, BUCKET, REGION)

    assert not any(change.startswith("S3 bucket") for change in result.created)
    statements = json.loads(s3.get_bucket_policy(Bucket=BUCKET)["Policy"])["Statement"]
    assert [statement["Sid"] for statement in statements] == ["AuditRead", "DenyInsecureTransport"]
    assert statements[0] == audit_statement
    rules = s3.get_bucket_lifecycle_configuration(Bucket=BUCKET)["Rules"]
    assert [rule["ID"] for rule in rules] == ["expire-logs", "pulumi-state-retention"]
    assert bootstrap_backend(session, BUCKET, REGION).created == []


def test_other_region_creates_bucket_with_location_constraint(session):
    region = "eu-west-1"

    result = bootstrap_backend(session, BUCKET, region)

    s3 = session.client("s3", region_name=region)
    assert s3.get_bucket_location(Bucket=BUCKET)["LocationConstraint"] == region
    assert result.key_arn.startswith(f"arn:aws:kms:{region}:")
    assert session.client("kms", region_name=region).describe_key(KeyId=DEFAULT_KEY_ALIAS)["KeyMetadata"]["Arn"] == (
        result.key_arn
    )
    assert bootstrap_backend(session, BUCKET, region).created == []


def test_bucket_of_ours_in_another_region_is_refused(session):
    session.client("s3", region_name="eu-west-1").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
    )

    with pytest.raises(BackendError, match="is in eu-west-1, not us-east-1; run again with --region eu-west-1"):
        bootstrap_backend(session, BUCKET, REGION)


def test_instructions_hold_the_exact_login_and_stack_init_lines(session):
    result = bootstrap_backend(session, BUCKET, "eu-west-1")

    instructions = format_instructions(result, ["dev", "prod"]).splitlines()

    assert result.login_command == f"pulumi login 's3://{BUCKET}?region=eu-west-1&awssdk=v2'"
    assert "  pulumi login 's3://acme-gpu-cloud-state?region=eu-west-1&awssdk=v2'" in instructions
    assert (
        "  pulumi stack init dev --secrets-provider 'awskms://alias/gpu-cloud/pulumi-state?region=eu-west-1'"
        in instructions
    )
    assert (
        "  pulumi stack init prod --secrets-provider 'awskms://alias/gpu-cloud/pulumi-state?region=eu-west-1'"
        in instructions
    )
    note = "\n".join(instructions)
    assert "secretsprovider:" in note and "encryptedkey:" in note


def test_instructions_without_stacks_show_a_placeholder_stack_line(session):
    result = bootstrap_backend(session, BUCKET, REGION)

    assert (
        "  pulumi stack init <stack> --secrets-provider 'awskms://alias/gpu-cloud/pulumi-state?region=us-east-1'"
        in format_instructions(result, []).splitlines()
    )


def test_stack_name_that_would_break_the_shell_line_is_refused(session):
    result = bootstrap_backend(session, BUCKET, REGION)

    with pytest.raises(BackendError, match="stack name"):
        result.stack_init_command("dev; rm -rf ~")


class NoCallsSession:
    """Stands in for boto3.Session and fails the test if any client is asked for."""

    def client(self, *args, **kwargs):
        raise AssertionError("validation must refuse before any AWS call")


@pytest.mark.parametrize(
    ("bucket", "region", "key_alias", "complaint"),
    [
        ("ab", REGION, DEFAULT_KEY_ALIAS, "3 to 63 characters"),
        ("Acme-State", REGION, DEFAULT_KEY_ALIAS, "lowercase"),
        ("acme_state", REGION, DEFAULT_KEY_ALIAS, "lowercase"),
        ("-acme-state", REGION, DEFAULT_KEY_ALIAS, "begin and end"),
        ("192.168.10.20", REGION, DEFAULT_KEY_ALIAS, "IP address"),
        ("acme..state", REGION, DEFAULT_KEY_ALIAS, "adjacent dots"),
        ("xn--acme-state", REGION, DEFAULT_KEY_ALIAS, "reserves the prefixes"),
        ("acme-state-s3alias", REGION, DEFAULT_KEY_ALIAS, "reserves the suffixes"),
        ("acme.state", REGION, DEFAULT_KEY_ALIAS, "TLS"),
        (BUCKET, "useast1", DEFAULT_KEY_ALIAS, "not an AWS region"),
        (BUCKET, "US-EAST-1", DEFAULT_KEY_ALIAS, "not an AWS region"),
        (BUCKET, REGION, "gpu-cloud/pulumi-state", "alias/name"),
        (BUCKET, REGION, "alias/aws/s3", "AWS reserves"),
    ],
)
def test_invalid_names_are_refused_before_any_aws_call(bucket, region, key_alias, complaint):
    with pytest.raises(BackendError, match=complaint):
        bootstrap_backend(NoCallsSession(), bucket, region, key_alias=key_alias)


def test_cli_bootstraps_then_reports_nothing_changed(session, capsys):
    from gpucloud.cli import main

    assert main(["backend", "bootstrap", "--bucket", "gpu-cloud-state-cli", "--region", "us-east-1", "--stacks", "notebooks"]) == 0
    first = capsys.readouterr().out
    assert "+ " in first
    assert "pulumi login 's3://gpu-cloud-state-cli?region=us-east-1&awssdk=v2'" in first
    assert "pulumi stack init notebooks --secrets-provider 'awskms://alias/gpu-cloud/pulumi-state?region=us-east-1'" in first
    assert main(["backend", "bootstrap", "--bucket", "gpu-cloud-state-cli", "--region", "us-east-1", "--stacks", "notebooks"]) == 0
    assert "nothing changed" in capsys.readouterr().out
