"""The S3 state bucket: refused when it is not this account's or not fit for state, else created,
tagged, versioned, encrypted with the state key, closed to the public, TLS-only, and with its
lifecycle rule; each setting read first and written only where it differs."""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from gpucloud.backend.aws_steps import error_code, read_setting
from gpucloud.backend.documents import (
    INCOMPLETE_UPLOAD_DAYS,
    LIFECYCLE_RULE_ID,
    NONCURRENT_VERSION_DAYS,
    PUBLIC_ACCESS_BLOCKED,
    TLS_ONLY_STATEMENT_ID,
    lifecycle_rule_matches,
    normalized_statement,
    state_lifecycle_rule,
    statements_of,
    tls_only_statement,
    with_tls_only_statement,
)
from gpucloud.backend.names import PURPOSE_TAG_KEY, PURPOSE_TAG_VALUE, BackendError


def _owned_elsewhere(bucket: str) -> BackendError:
    return BackendError(
        f"bucket {bucket!r} already exists and is not this account's (or this account cannot reach it); "
        "S3 bucket names are global, so pick a new name with --bucket"
    )


def check_existing_bucket(s3: Any, bucket: str, region: str, account_id: str) -> bool:
    """Whether the bucket already exists and is ours to use; refuse it if it is not."""
    try:
        head = s3.head_bucket(Bucket=bucket, ExpectedBucketOwner=account_id)
    except ClientError as error:
        code = error_code(error)
        if code in ("404", "NoSuchBucket", "NotFound"):
            return False
        if code in ("403", "AccessDenied", "Forbidden"):
            raise _owned_elsewhere(bucket) from error
        raise
    if not _listed_in_account(s3, bucket):
        raise _owned_elsewhere(bucket)

    bucket_region = head.get("BucketRegion") or head["ResponseMetadata"]["HTTPHeaders"].get("x-amz-bucket-region")
    if bucket_region and bucket_region != region:
        raise BackendError(
            f"bucket {bucket!r} is in {bucket_region}, not {region}; "
            f"run again with --region {bucket_region}, or pick a new name"
        )
    versioning = s3.get_bucket_versioning(Bucket=bucket, ExpectedBucketOwner=account_id).get("Status")
    if versioning != "Enabled" and not _tagged_as_state_bucket(s3, bucket, account_id):
        raise BackendError(
            f"bucket {bucket!r} exists without versioning and without the {PURPOSE_TAG_KEY}={PURPOSE_TAG_VALUE} "
            "tag of a bucket this command created; Pulumi state needs versioning to recover from a bad update; "
            "enable it yourself or pick a new name"
        )
    return True


def _tagged_as_state_bucket(s3: Any, bucket: str, account_id: str) -> bool:
    """Whether a run of this command created the bucket (and may have stopped before versioning it)."""
    tagging = read_setting(lambda: s3.get_bucket_tagging(Bucket=bucket, ExpectedBucketOwner=account_id), "NoSuchTagSet")
    return {"Key": PURPOSE_TAG_KEY, "Value": PURPOSE_TAG_VALUE} in (tagging or {}).get("TagSet", [])


def _listed_in_account(s3: Any, bucket: str) -> bool:
    """Whether ListBuckets shows the bucket: only the owning account lists it.

    HeadBucket also succeeds on another account's bucket shared with us, and moto ignores
    ExpectedBucketOwner; the listing covers both. Without s3:ListAllMyBuckets we rely on
    ExpectedBucketOwner, which AWS enforces.
    """
    try:
        listed = s3.list_buckets(Prefix=bucket)["Buckets"]
    except ClientError as error:
        if error_code(error) == "AccessDenied":
            return True
        raise
    return any(entry["Name"] == bucket for entry in listed)


def create_tagged_bucket(s3: Any, bucket: str, region: str, created: list[str]) -> None:
    """Create the bucket and tag it at once, so a run stopped before the rest of the set-up can be finished."""
    arguments: dict[str, Any] = {"Bucket": bucket}
    # us-east-1 is the default location and AWS rejects it as an explicit LocationConstraint.
    if region != "us-east-1":
        arguments["CreateBucketConfiguration"] = {"LocationConstraint": region}
    try:
        s3.create_bucket(**arguments)
    except ClientError as error:
        code = error_code(error)
        if code == "BucketAlreadyExists":
            raise _owned_elsewhere(bucket) from error
        if code == "BucketAlreadyOwnedByYou":
            raise BackendError(
                f"bucket {bucket!r} appeared while bootstrapping (another run at the same time?); run again"
            ) from error
        raise
    created.append(f"S3 bucket {bucket} in {region}")
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": [{"Key": PURPOSE_TAG_KEY, "Value": PURPOSE_TAG_VALUE}]})
    created.append(f"tag {PURPOSE_TAG_KEY}={PURPOSE_TAG_VALUE} on bucket {bucket}")


def ensure_versioning(s3: Any, bucket: str, created: list[str]) -> None:
    if s3.get_bucket_versioning(Bucket=bucket).get("Status") == "Enabled":
        return
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    created.append(f"versioning on bucket {bucket}")


def ensure_default_encryption(s3: Any, bucket: str, key_arn: str, key_alias: str, created: list[str]) -> None:
    encryption = read_setting(
        lambda: s3.get_bucket_encryption(Bucket=bucket), "ServerSideEncryptionConfigurationNotFoundError"
    )
    rules = encryption["ServerSideEncryptionConfiguration"]["Rules"] if encryption else []
    current = [
        (
            rule.get("ApplyServerSideEncryptionByDefault", {}).get("SSEAlgorithm"),
            rule.get("ApplyServerSideEncryptionByDefault", {}).get("KMSMasterKeyID"),
            bool(rule.get("BucketKeyEnabled")),
        )
        for rule in rules
    ]
    if current == [("aws:kms", key_arn, True)]:
        return
    s3.put_bucket_encryption(
        Bucket=bucket,
        ServerSideEncryptionConfiguration={
            "Rules": [
                {
                    "ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": key_arn},
                    "BucketKeyEnabled": True,
                }
            ]
        },
    )
    created.append(f"default encryption SSE-KMS with {key_alias} (bucket key on) on bucket {bucket}")


def ensure_public_access_blocked(s3: Any, bucket: str, created: list[str]) -> None:
    block = read_setting(lambda: s3.get_public_access_block(Bucket=bucket), "NoSuchPublicAccessBlockConfiguration")
    current = block["PublicAccessBlockConfiguration"] if block else {}
    if all(current.get(setting) is True for setting in PUBLIC_ACCESS_BLOCKED):
        return
    s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration=dict(PUBLIC_ACCESS_BLOCKED))
    created.append(f"public access block (all four settings) on bucket {bucket}")


def ensure_tls_only_policy(s3: Any, bucket: str, partition: str, created: list[str]) -> None:
    policy = read_setting(lambda: s3.get_bucket_policy(Bucket=bucket), "NoSuchBucketPolicy")
    current_policy = json.loads(policy["Policy"]) if policy else None
    ours = [
        statement
        for statement in statements_of(current_policy or {})
        if statement.get("Sid") == TLS_ONLY_STATEMENT_ID
    ]
    wanted = tls_only_statement(bucket, partition)
    if len(ours) == 1 and normalized_statement(ours[0]) == normalized_statement(wanted):
        return
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps(with_tls_only_statement(bucket, partition, current_policy)))
    created.append(f"bucket policy statement {TLS_ONLY_STATEMENT_ID} (TLS only) on bucket {bucket}")


def ensure_lifecycle_rule(s3: Any, bucket: str, created: list[str]) -> None:
    lifecycle = read_setting(
        lambda: s3.get_bucket_lifecycle_configuration(Bucket=bucket), "NoSuchLifecycleConfiguration"
    )
    rules = lifecycle["Rules"] if lifecycle else []
    ours = [rule for rule in rules if rule.get("ID") == LIFECYCLE_RULE_ID]
    if len(ours) == 1 and lifecycle_rule_matches(ours[0]):
        return
    others = [rule for rule in rules if rule.get("ID") != LIFECYCLE_RULE_ID]
    # PutBucketLifecycleConfiguration replaces the whole set, so the other rules are sent back as they were.
    s3.put_bucket_lifecycle_configuration(
        Bucket=bucket, LifecycleConfiguration={"Rules": [*others, state_lifecycle_rule()]}
    )
    created.append(
        f"lifecycle rule {LIFECYCLE_RULE_ID} (noncurrent versions expire after {NONCURRENT_VERSION_DAYS} days, "
        f"incomplete uploads aborted after {INCOMPLETE_UPLOAD_DAYS}) on bucket {bucket}"
    )
