"""`gpucloud backend bootstrap` end to end on moto: the bucket and key it leaves behind, idempotence,
and the buckets it must refuse to take over."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from moto import mock_aws

from gpucloud import cli
from gpucloud.backend import (
    DEFAULT_KEY_ALIAS,
    AwsCallError,
    BackendError,
    bootstrap_backend,
    format_instructions,
    tls_only_statement,
    validate_stack_name,
)

BUCKET = "acme-gpu-cloud-state"
REGION = "us-east-1"
ACCOUNT_ID = "123456789012"
OTHER_ACCOUNT_ID = "111111111111"
PURPOSE_TAG = {"Key": "gpu-cloud:purpose", "Value": "pulumi-state"}


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

    assert s3.get_bucket_tagging(Bucket=BUCKET)["TagSet"] == [PURPOSE_TAG]
    assert kms.list_resource_tags(KeyId=key["KeyId"])["Tags"] == [
        {"TagKey": "gpu-cloud:purpose", "TagValue": "pulumi-state"}
    ]

    assert result.created == [
        f"KMS key {result.key_arn} (symmetric, tagged gpu-cloud:purpose=pulumi-state)",
        f"KMS alias {DEFAULT_KEY_ALIAS} -> {result.key_arn}",
        f"automatic rotation on KMS key {result.key_arn}",
        f"S3 bucket {BUCKET} in {REGION}",
        f"tag gpu-cloud:purpose=pulumi-state on bucket {BUCKET}",
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


def test_default_alias_is_outside_the_project_key_namespace():
    assert DEFAULT_KEY_ALIAS == "alias/gpu-cloud-state/pulumi"
    assert not DEFAULT_KEY_ALIAS.startswith("alias/gpu-cloud/")


def test_tagged_key_behind_existing_alias_is_reused_and_its_rotation_turned_on(session):
    kms = session.client("kms")
    existing = kms.create_key(
        KeySpec="SYMMETRIC_DEFAULT",
        KeyUsage="ENCRYPT_DECRYPT",
        Tags=[{"TagKey": "gpu-cloud:purpose", "TagValue": "pulumi-state"}],
    )["KeyMetadata"]
    kms.create_alias(AliasName=DEFAULT_KEY_ALIAS, TargetKeyId=existing["KeyId"])

    result = bootstrap_backend(session, BUCKET, REGION)

    assert result.key_arn == existing["Arn"]
    assert [key["KeyId"] for key in kms.list_keys()["Keys"]] == [existing["KeyId"]]
    assert kms.get_key_rotation_status(KeyId=existing["KeyId"])["KeyRotationEnabled"] is True
    assert f"automatic rotation on KMS key {existing['Arn']}" in result.created
    assert not any(change.startswith("KMS key") or change.startswith("KMS alias") for change in result.created)


@pytest.mark.parametrize(
    "tags",
    [[], [{"TagKey": "gpu-cloud:purpose", "TagValue": "project-key"}], [{"TagKey": "Project", "TagValue": "x"}]],
)
def test_key_behind_existing_alias_without_the_purpose_tag_is_refused(session, tags):
    kms = session.client("kms")
    someone_elses = kms.create_key(KeySpec="SYMMETRIC_DEFAULT", KeyUsage="ENCRYPT_DECRYPT", Tags=tags)["KeyMetadata"]
    kms.create_alias(AliasName=DEFAULT_KEY_ALIAS, TargetKeyId=someone_elses["KeyId"])

    with pytest.raises(BackendError) as refusal:
        bootstrap_backend(session, BUCKET, REGION)

    assert str(refusal.value) == (
        f"KMS alias {DEFAULT_KEY_ALIAS} points at {someone_elses['Arn']}, which lacks the tag "
        "gpu-cloud:purpose=pulumi-state that this command puts on the key it creates; pass another --key-alias, "
        "or tag that key if it is meant to be the state key"
    )
    assert kms.get_key_rotation_status(KeyId=someone_elses["KeyId"])["KeyRotationEnabled"] is False
    assert error_code(lambda: session.client("s3").head_bucket(Bucket=BUCKET)) == "404"


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
        f"bucket '{BUCKET}' exists without versioning and without the gpu-cloud:purpose=pulumi-state tag of a "
        "bucket this command created; Pulumi state needs versioning to recover from a bad update; "
        "enable it yourself or pick a new name"
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
        "  pulumi stack init dev --secrets-provider 'awskms://alias/gpu-cloud-state/pulumi?region=eu-west-1'"
        in instructions
    )
    assert (
        "  pulumi stack init prod --secrets-provider 'awskms://alias/gpu-cloud-state/pulumi?region=eu-west-1'"
        in instructions
    )
    note = "\n".join(instructions)
    assert "secretsprovider:" in note and "encryptedkey:" in note


def test_instructions_without_stacks_show_a_placeholder_stack_line(session):
    result = bootstrap_backend(session, BUCKET, REGION)

    assert (
        "  pulumi stack init <stack> --secrets-provider 'awskms://alias/gpu-cloud-state/pulumi?region=us-east-1'"
        in format_instructions(result, []).splitlines()
    )


def test_stack_name_that_would_break_the_shell_line_is_refused(session):
    result = bootstrap_backend(session, BUCKET, REGION)

    with pytest.raises(BackendError, match="stack name"):
        result.stack_init_command("dev; rm -rf ~")


class NoCallsSession:
    """Stands in for boto3.Session and fails the test if any client is asked for."""

    def __init__(self, **kwargs):
        pass

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
        (BUCKET, REGION, "alias/gpu-cloud/pulumi-state", "each project's own key"),
        (BUCKET, REGION, "alias/state key", "alias/name"),
        (BUCKET, REGION, "alias/" + "k" * 251, "at most 256"),
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
    assert "pulumi stack init notebooks --secrets-provider 'awskms://alias/gpu-cloud-state/pulumi?region=us-east-1'" in first
    assert main(["backend", "bootstrap", "--bucket", "gpu-cloud-state-cli", "--region", "us-east-1", "--stacks", "notebooks"]) == 0
    assert "nothing changed" in capsys.readouterr().out


def fail_operation(session: boto3.Session, service: str, operation: str, error: BaseException) -> None:
    """Make one API operation raise `error` on every client the session creates; moto serves the rest."""

    def raise_error(**kwargs):
        raise error

    session.events.register(f"before-call.{service}.{operation}", raise_error)


def access_denied(operation: str) -> ClientError:
    return ClientError(
        {"Error": {"Code": "AccessDenied", "Message": f"User: arn:aws:iam::{ACCOUNT_ID}:user/ops is not authorized"}},
        operation,
    )


def test_first_run_stopped_before_versioning_is_finished_by_the_next(aws_credentials):
    with mock_aws():
        interrupted = boto3.Session(region_name=REGION)
        fail_operation(interrupted, "s3", "PutBucketVersioning", KeyboardInterrupt())
        with pytest.raises(KeyboardInterrupt):
            bootstrap_backend(interrupted, BUCKET, REGION)
        s3 = boto3.Session(region_name=REGION).client("s3")
        assert "Status" not in s3.get_bucket_versioning(Bucket=BUCKET)

        result = bootstrap_backend(boto3.Session(region_name=REGION), BUCKET, REGION)

        assert s3.get_bucket_versioning(Bucket=BUCKET)["Status"] == "Enabled"
        assert f"versioning on bucket {BUCKET}" in result.created
        assert not any(change.startswith(("S3 bucket", "KMS key")) for change in result.created)
        assert bootstrap_backend(boto3.Session(region_name=REGION), BUCKET, REGION).created == []


def test_access_denied_midway_names_the_step_and_a_rerun_finishes(aws_credentials):
    with mock_aws():
        denied = boto3.Session(region_name=REGION)
        fail_operation(denied, "s3", "PutBucketPolicy", access_denied("PutBucketPolicy"))
        with pytest.raises(AwsCallError) as failure:
            bootstrap_backend(denied, BUCKET, REGION)
        assert str(failure.value) == (
            f"could not set the TLS-only policy on bucket {BUCKET}: PutBucketPolicy failed with AccessDenied: "
            f"User: arn:aws:iam::{ACCOUNT_ID}:user/ops is not authorized; "
            "fix that and run again, it picks up where it stopped"
        )

        result = bootstrap_backend(boto3.Session(region_name=REGION), BUCKET, REGION)

        assert result.created == [
            f"bucket policy statement DenyInsecureTransport (TLS only) on bucket {BUCKET}",
            "lifecycle rule pulumi-state-retention (noncurrent versions expire after 90 days, "
            f"incomplete uploads aborted after 7) on bucket {BUCKET}",
        ]


def test_tls_only_policy_names_the_bucket_in_the_accounts_partition(aws_credentials):
    region = "cn-north-1"
    with mock_aws():
        session = boto3.Session(region_name=region)

        result = bootstrap_backend(session, BUCKET, region)

        [statement] = json.loads(session.client("s3", region_name=region).get_bucket_policy(Bucket=BUCKET)["Policy"])[
            "Statement"
        ]
        assert sorted(statement["Resource"]) == [f"arn:aws-cn:s3:::{BUCKET}", f"arn:aws-cn:s3:::{BUCKET}/*"]
        assert result.key_arn.startswith("arn:aws-cn:kms:cn-north-1:")
        assert bootstrap_backend(session, BUCKET, region).created == []


@pytest.mark.parametrize("partition", ["aws", "aws-cn", "aws-us-gov"])
def test_tls_only_statement_uses_the_given_partition(partition):
    assert tls_only_statement(BUCKET, partition)["Resource"] == [
        f"arn:{partition}:s3:::{BUCKET}",
        f"arn:{partition}:s3:::{BUCKET}/*",
    ]


class StubbedSession:
    """Stands in for boto3.Session: its s3, kms and sts clients answer only what the test queued on their Stubber.

    moto ignores ExpectedBucketOwner and always lets ListBuckets through, so the answers real AWS gives
    there are stubbed.
    """

    def __init__(self):
        real = boto3.Session(region_name=REGION)
        self.clients = {name: real.client(name, region_name=REGION) for name in ("s3", "kms", "sts")}
        self.stubs = {name: Stubber(client) for name, client in self.clients.items()}
        for stub in self.stubs.values():
            stub.activate()
        self.stubs["sts"].add_response(
            "get_caller_identity",
            {"Account": ACCOUNT_ID, "Arn": f"arn:aws:iam::{ACCOUNT_ID}:user/ops", "UserId": "AIDAEXAMPLE"},
            {},
        )

    def client(self, name, region_name=None):
        return self.clients[name]

    def assert_every_answer_used(self):
        for stub in self.stubs.values():
            stub.assert_no_pending_responses()


@pytest.fixture
def stubbed(aws_credentials):
    return StubbedSession()


def test_bucket_aws_says_belongs_to_another_account_is_refused_without_touching_kms(stubbed):
    stubbed.stubs["s3"].add_client_error(
        "head_bucket",
        service_error_code="403",
        service_message="Forbidden",
        http_status_code=403,
        expected_params={"Bucket": BUCKET, "ExpectedBucketOwner": ACCOUNT_ID},
    )

    with pytest.raises(BackendError) as refusal:
        bootstrap_backend(stubbed, BUCKET, REGION)

    assert type(refusal.value) is BackendError
    assert f"'{BUCKET}' already exists and is not this account's" in str(refusal.value)
    stubbed.assert_every_answer_used()


def test_without_list_buckets_permission_an_owned_bucket_is_judged_by_expected_bucket_owner(stubbed):
    s3, kms = stubbed.stubs["s3"], stubbed.stubs["kms"]
    owner = {"Bucket": BUCKET, "ExpectedBucketOwner": ACCOUNT_ID}
    key_id = "1234abcd-12ab-34cd-56ef-1234567890ab"
    key_arn = f"arn:aws:kms:{REGION}:{ACCOUNT_ID}:key/{key_id}"
    s3.add_response("head_bucket", {"BucketRegion": REGION}, owner)
    s3.add_client_error(
        "list_buckets", service_error_code="AccessDenied", http_status_code=403, expected_params={"Prefix": BUCKET}
    )
    s3.add_response("get_bucket_versioning", {"Status": "Enabled"}, owner)
    kms.add_response(
        "describe_key",
        {
            "KeyMetadata": {
                "KeyId": key_id,
                "Arn": key_arn,
                "KeySpec": "SYMMETRIC_DEFAULT",
                "KeyUsage": "ENCRYPT_DECRYPT",
                "KeyState": "Enabled",
            }
        },
        {"KeyId": DEFAULT_KEY_ALIAS},
    )
    kms.add_response(
        "list_resource_tags",
        {"Tags": [{"TagKey": "gpu-cloud:purpose", "TagValue": "pulumi-state"}], "Truncated": False},
        {"KeyId": key_id},
    )
    kms.add_response("get_key_rotation_status", {"KeyRotationEnabled": True}, {"KeyId": key_id})
    s3.add_response("get_bucket_versioning", {"Status": "Enabled"}, {"Bucket": BUCKET})
    s3.add_response(
        "get_bucket_encryption",
        {
            "ServerSideEncryptionConfiguration": {
                "Rules": [
                    {
                        "ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": key_arn},
                        "BucketKeyEnabled": True,
                    }
                ]
            }
        },
        {"Bucket": BUCKET},
    )
    s3.add_response(
        "get_public_access_block",
        {
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "IgnorePublicAcls": True,
                "BlockPublicPolicy": True,
                "RestrictPublicBuckets": True,
            }
        },
        {"Bucket": BUCKET},
    )
    policy = {"Version": "2012-10-17", "Statement": [tls_only_statement(BUCKET, "aws")]}
    s3.add_response("get_bucket_policy", {"Policy": json.dumps(policy)}, {"Bucket": BUCKET})
    s3.add_response(
        "get_bucket_lifecycle_configuration",
        {
            "Rules": [
                {
                    "ID": "pulumi-state-retention",
                    "Filter": {"Prefix": ""},
                    "Status": "Enabled",
                    "NoncurrentVersionExpiration": {"NoncurrentDays": 90},
                    "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7},
                }
            ]
        },
        {"Bucket": BUCKET},
    )

    result = bootstrap_backend(stubbed, BUCKET, REGION)

    assert result.created == []
    assert result.key_arn == key_arn
    stubbed.assert_every_answer_used()


@pytest.mark.parametrize(
    "stack", ["dev", "vision-train", "v1.2_rc", "organization/dev", "organization/gpu-cloud/dev", "s" * 100]
)
def test_stack_names_pulumi_accepts_on_a_diy_backend_pass(stack):
    validate_stack_name(stack)


@pytest.mark.parametrize(
    ("stack", "complaint"),
    [
        ("dev; rm -rf ~", "not valid: use at most 100 letters"),
        ("my stack", "not valid: use at most 100 letters"),
        ("", "not valid: use at most 100 letters"),
        ("s" * 101, "not valid: use at most 100 letters"),
        ("organization//dev", "not valid: use at most 100 letters"),
        ("organization/gpu-cloud/dev/extra", "not valid: use at most 100 letters"),
        ("acme/dev", "organization must be 'organization', as in 'organization/dev'"),
        ("acme/gpu-cloud/dev", "as in 'organization/gpu-cloud/dev'"),
    ],
)
def test_stack_names_pulumi_refuses_are_refused(stack, complaint):
    with pytest.raises(BackendError, match=complaint):
        validate_stack_name(stack)


def run_cli(*arguments: str) -> int:
    return cli.main(["backend", "bootstrap", "--bucket", BUCKET, "--region", REGION, *arguments])


@pytest.mark.parametrize(
    ("arguments", "complaint"),
    [
        (["--stacks", "dev", "dev; rm -rf ~"], "stack name 'dev; rm -rf ~' is not valid"),
        (["--key-alias", "alias/aws/s3"], "AWS reserves"),
        (["--key-alias", "gpu-cloud-state"], "it must look like 'alias/name'"),
        (["--key-alias", "alias/gpu-cloud/pulumi-state"], "each project's own key"),
    ],
)
def test_cli_refuses_bad_names_with_exit_2_before_any_aws_call(monkeypatch, capsys, arguments, complaint):
    monkeypatch.setattr(boto3, "Session", NoCallsSession)

    assert run_cli(*arguments) == cli.BACKEND_REFUSED == 2

    output = capsys.readouterr()
    assert output.out == ""
    assert output.err.startswith("error: ") and complaint in output.err
    assert output.err.count("\n") == 1


def test_cli_refuses_a_stack_file_whose_name_is_no_stack_name(monkeypatch, capsys, tmp_path):
    (tmp_path / "Pulumi.dev.yaml").write_text("config: {}\n")
    (tmp_path / "Pulumi.my stack.yaml").write_text("config: {}\n")
    monkeypatch.setattr(cli.backend, "STACKS_DIRECTORY", tmp_path)
    monkeypatch.setattr(boto3, "Session", NoCallsSession)

    assert run_cli() == 2

    error = capsys.readouterr().err
    assert error.startswith(f"error: {tmp_path / 'Pulumi.my stack.yaml'}: stack name 'my stack' is not valid")
    assert "rename the file, or name the stacks with --stacks" in error


def test_cli_key_alias_names_the_key_it_creates_and_the_secrets_provider(session, capsys):
    assert run_cli("--key-alias", "alias/team-a/pulumi-state", "--stacks", "dev") == 0

    assert session.client("kms").describe_key(KeyId="alias/team-a/pulumi-state")["KeyMetadata"]["Enabled"] is True
    assert "pulumi stack init dev --secrets-provider 'awskms://alias/team-a/pulumi-state?region=us-east-1'" in (
        capsys.readouterr().out
    )


def test_cli_help_shows_the_default_key_alias_and_the_exit_codes(capsys):
    with pytest.raises(SystemExit):
        cli.main(["backend", "bootstrap", "--help"])

    help_text = " ".join(capsys.readouterr().out.split())
    assert f"(default: {DEFAULT_KEY_ALIAS})" in help_text
    assert "exit codes: 0 done, 2 refused" in help_text and "3 an AWS call failed" in help_text


def test_cli_access_denied_on_create_key_is_one_line_with_exit_3_and_no_bucket(stubbed, monkeypatch, capsys):
    stubbed.stubs["s3"].add_client_error(
        "head_bucket", service_error_code="404", http_status_code=404,
        expected_params={"Bucket": BUCKET, "ExpectedBucketOwner": ACCOUNT_ID},
    )
    stubbed.stubs["kms"].add_client_error("describe_key", service_error_code="NotFoundException", http_status_code=400)
    stubbed.stubs["kms"].add_client_error(
        "create_key",
        service_error_code="AccessDeniedException",
        service_message=f"User: arn:aws:iam::{ACCOUNT_ID}:user/ops is not authorized to perform: kms:CreateKey",
        http_status_code=400,
    )
    monkeypatch.setattr(boto3, "Session", lambda **kwargs: stubbed)

    assert run_cli("--stacks", "dev") == cli.BACKEND_AWS_CALL_FAILED == 3

    output = capsys.readouterr()
    assert output.out == ""
    assert output.err == (
        f"error: could not set up KMS key {DEFAULT_KEY_ALIAS}: CreateKey failed with AccessDeniedException: "
        f"User: arn:aws:iam::{ACCOUNT_ID}:user/ops is not authorized to perform: kms:CreateKey; "
        "fix that and run again, it picks up where it stopped\n"
    )
    stubbed.assert_every_answer_used()


@pytest.fixture
def no_credentials(monkeypatch, tmp_path):
    """No credential source botocore could find; a request that got as far as sending fails the test."""
    for variable in (
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SECURITY_TOKEN", "AWS_SESSION_TOKEN", "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
    ):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    real_session = boto3.Session

    def guarded_session(**kwargs):
        session = real_session(**kwargs)
        session.events.register("before-send", lambda **_: pytest.fail("a request was sent"))
        return session

    monkeypatch.setattr(boto3, "Session", guarded_session)


def test_cli_without_credentials_says_so_in_one_line_with_exit_3(no_credentials, capsys):
    assert run_cli("--stacks", "dev") == 3

    output = capsys.readouterr()
    assert output.out == ""
    assert output.err == (
        "error: could not identify the AWS account: no AWS credentials found; set AWS_PROFILE (after "
        "`aws sso login` or `aws configure`) or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, then run again\n"
    )


def test_cli_with_an_unknown_profile_says_so_with_exit_3(no_credentials, monkeypatch, capsys):
    monkeypatch.setenv("AWS_PROFILE", "nonexistent")

    assert run_cli("--stacks", "dev") == 3

    assert capsys.readouterr().err == "error: AWS configuration: The config profile (nonexistent) could not be found\n"


def test_instructions_end_with_the_select_preview_and_up_lines(session):
    result = bootstrap_backend(session, BUCKET, REGION)

    assert format_instructions(result, ["dev", "prod"]).splitlines()[-3:] == [
        "  pulumi stack select dev",
        "  pulumi preview --policy-pack policies",
        "  pulumi up --policy-pack policies",
    ]
    assert "  pulumi stack select <stack>" in format_instructions(result, []).splitlines()
