"""Bootstrap a DIY Pulumi state backend: a versioned, TLS-only, KMS-encrypted S3 bucket and a KMS key
for Pulumi's `awskms://` secrets provider.

Every setting is read first and written only where it differs, so a second run changes nothing and
reports nothing. An existing bucket that belongs to someone else, or that lacks versioning, is refused
rather than adopted: Pulumi state must be recoverable, and we do not reconfigure a bucket others use.
The bucket and key a run creates carry the tag `gpu-cloud:purpose=pulumi-state`: a run that stopped
half-way is finished by the next one, and a key behind the alias that lacks the tag is refused.

One key serves the bucket's default encryption and the secrets provider: whoever runs Pulumi needs
both (reading state decrypts the objects, reading config decrypts the secrets), so two keys would
double the key policies to keep in step without separating any access.

URL forms (Pulumi docs):
- login: "Using a DIY Backend", AWS S3 section:
  `pulumi login 's3://<bucket-name>?region=us-east-1&awssdk=v2&profile=<profile-name>'`
- secrets provider: `pulumi stack init` reference:
  `pulumi stack init --secrets-provider="awskms://alias/ExampleAlias?region=us-east-1"`

One module, about 400 lines, on purpose: it is one read-compare-write sequence over one bucket and
one key, each `_ensure_*` step reading what the step before left; the names it refuses and the
documents it writes live in `names` and `documents`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

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
from gpucloud.backend.names import (
    DEFAULT_KEY_ALIAS,
    PURPOSE_TAG_KEY,
    PURPOSE_TAG_VALUE,
    AwsCallError,
    BackendError,
    validate_bucket_name,
    validate_key_alias,
    validate_region,
    validate_stack_name,
)

if TYPE_CHECKING:
    import boto3

@dataclass(frozen=True)
class BootstrapResult:
    """Where the state and the secrets key live, what this run changed, and the commands that use them."""

    bucket: str
    region: str
    key_arn: str
    key_alias: str
    created: list[str] = field(default_factory=list)

    @property
    def backend_url(self) -> str:
        """The DIY backend URL; `awssdk=v2` makes the CLI honour `region` (Pulumi CLI v3.33.1+)."""
        return f"s3://{self.bucket}?region={self.region}&awssdk=v2"

    @property
    def secrets_provider(self) -> str:
        return f"awskms://{self.key_alias}?region={self.region}"

    @property
    def login_command(self) -> str:
        # Quoted because the shell would otherwise split the URL at `&`.
        return f"pulumi login '{self.backend_url}'"

    def stack_init_command(self, stack: str) -> str:
        """The `pulumi stack init` line that makes the stack encrypt its secrets with the backend's key."""
        validate_stack_name(stack)
        return f"pulumi stack init {stack} --secrets-provider '{self.secrets_provider}'"


def bootstrap_backend(
    session: boto3.Session, bucket: str, region: str, *, key_alias: str = DEFAULT_KEY_ALIAS
) -> BootstrapResult:
    """Create (or confirm) the state bucket and secrets key; refuse a bucket we must not take over.

    Names are checked before any AWS call, and the bucket before the key is touched, so a refusal
    leaves no orphan key behind. A failed AWS call raises AwsCallError naming the step; running again
    after fixing its cause picks up where this run stopped.
    """
    validate_bucket_name(bucket)
    validate_region(region)
    validate_key_alias(key_alias)

    s3 = session.client("s3", region_name=region)
    kms = session.client("kms", region_name=region)
    with _aws_step("identify the AWS account"):
        identity = session.client("sts", region_name=region).get_caller_identity()
    account_id = identity["Account"]
    partition = identity["Arn"].split(":")[1]

    created: list[str] = []
    with _aws_step(f"check bucket {bucket}"):
        bucket_exists = _check_existing_bucket(s3, bucket, region, account_id)
    with _aws_step(f"set up KMS key {key_alias}"):
        key_arn = _ensure_key(kms, key_alias, created)
    if not bucket_exists:
        with _aws_step(f"create bucket {bucket}"):
            _create_tagged_bucket(s3, bucket, region, created)
    with _aws_step(f"enable versioning on bucket {bucket}"):
        _ensure_versioning(s3, bucket, created)
    with _aws_step(f"set default encryption on bucket {bucket}"):
        _ensure_default_encryption(s3, bucket, key_arn, key_alias, created)
    with _aws_step(f"block public access to bucket {bucket}"):
        _ensure_public_access_blocked(s3, bucket, created)
    with _aws_step(f"set the TLS-only policy on bucket {bucket}"):
        _ensure_tls_only_policy(s3, bucket, partition, created)
    with _aws_step(f"set the lifecycle rule on bucket {bucket}"):
        _ensure_lifecycle_rule(s3, bucket, created)
    return BootstrapResult(bucket=bucket, region=region, key_arn=key_arn, key_alias=key_alias, created=created)


def deploy_lines(stack: str) -> list[str]:
    """What a newcomer runs after `stack init`: select the stack, preview it with the policy pack, deploy it."""
    return [f"pulumi stack select {stack}", "pulumi preview --policy-pack policies", "pulumi up --policy-pack policies"]


def format_instructions(result: BootstrapResult, stacks: list[str]) -> str:
    """The lines to print after a bootstrap: how to log in, and how to create each stack."""
    if stacks:
        init_lines = [f"  {result.stack_init_command(stack)}" for stack in stacks]
    else:
        init_lines = [f"  pulumi stack init <stack> --secrets-provider '{result.secrets_provider}'"]
    return "\n".join(
        [
            f"Pulumi state backend: s3://{result.bucket} ({result.region}), secrets key {result.key_alias}",
            "",
            "Log in to the backend:",
            f"  {result.login_command}",
            "",
            "Create each stack with the KMS secrets provider:",
            *init_lines,
            "",
            "`pulumi stack init` writes `secretsprovider:` and `encryptedkey:` into Pulumi.<stack>.yaml;",
            "commit those lines with the stack file, they are how the stack finds and unwraps its secrets key.",
            "",
            "Then preview and deploy a stack, with the review gate's policy pack:",
            *(f"  {line}" for line in deploy_lines(stacks[0] if stacks else "<stack>")),
        ]
    )


def _error_code(error: ClientError) -> str:
    return error.response.get("Error", {}).get("Code", "")


@contextmanager
def _aws_step(step: str) -> Iterator[None]:
    """Turn a failed AWS call inside `step` into one line: the step, the API operation, AWS's code and message."""
    try:
        yield
    except NoCredentialsError as error:
        raise AwsCallError(
            f"could not {step}: no AWS credentials found; set AWS_PROFILE (after `aws sso login` or "
            "`aws configure`) or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, then run again"
        ) from error
    except ClientError as error:
        details = error.response.get("Error", {})
        message = " ".join(str(details.get("Message") or "no message").split())
        raise AwsCallError(
            f"could not {step}: {error.operation_name} failed with {details.get('Code', 'an unknown error')}: "
            f"{message}; fix that and run again, it picks up where it stopped"
        ) from error
    except BotoCoreError as error:
        raise AwsCallError(f"could not {step}: {' '.join(str(error).split())}; fix that and run again") from error


def _owned_elsewhere(bucket: str) -> BackendError:
    return BackendError(
        f"bucket {bucket!r} already exists and is not this account's (or this account cannot reach it); "
        "S3 bucket names are global, so pick a new name with --bucket"
    )


def _check_existing_bucket(s3: Any, bucket: str, region: str, account_id: str) -> bool:
    """Whether the bucket already exists and is ours to use; refuse it if it is not."""
    try:
        head = s3.head_bucket(Bucket=bucket, ExpectedBucketOwner=account_id)
    except ClientError as error:
        code = _error_code(error)
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
    try:
        tags = s3.get_bucket_tagging(Bucket=bucket, ExpectedBucketOwner=account_id)["TagSet"]
    except ClientError as error:
        if _error_code(error) != "NoSuchTagSet":
            raise
        return False
    return {"Key": PURPOSE_TAG_KEY, "Value": PURPOSE_TAG_VALUE} in tags


def _listed_in_account(s3: Any, bucket: str) -> bool:
    """Whether ListBuckets shows the bucket: only the owning account lists it.

    HeadBucket also succeeds on another account's bucket shared with us, and moto ignores
    ExpectedBucketOwner; the listing covers both. Without s3:ListAllMyBuckets we rely on
    ExpectedBucketOwner, which AWS enforces.
    """
    try:
        listed = s3.list_buckets(Prefix=bucket)["Buckets"]
    except ClientError as error:
        if _error_code(error) == "AccessDenied":
            return True
        raise
    return any(entry["Name"] == bucket for entry in listed)


def _create_tagged_bucket(s3: Any, bucket: str, region: str, created: list[str]) -> None:
    """Create the bucket and tag it at once, so a run stopped before the rest of the set-up can be finished."""
    arguments: dict[str, Any] = {"Bucket": bucket}
    # us-east-1 is the default location and AWS rejects it as an explicit LocationConstraint.
    if region != "us-east-1":
        arguments["CreateBucketConfiguration"] = {"LocationConstraint": region}
    try:
        s3.create_bucket(**arguments)
    except ClientError as error:
        code = _error_code(error)
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


def _ensure_versioning(s3: Any, bucket: str, created: list[str]) -> None:
    if s3.get_bucket_versioning(Bucket=bucket).get("Status") == "Enabled":
        return
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    created.append(f"versioning on bucket {bucket}")


def _ensure_key(kms: Any, key_alias: str, created: list[str]) -> str:
    """The ARN of the symmetric key behind the alias, creating both if needed; rotation always on."""
    try:
        metadata = kms.describe_key(KeyId=key_alias)["KeyMetadata"]
    except ClientError as error:
        if _error_code(error) != "NotFoundException":
            raise
        metadata = None

    if metadata is None:
        metadata = kms.create_key(
            Description="gpu-cloud Pulumi state backend: state bucket encryption and the awskms secrets provider",
            KeySpec="SYMMETRIC_DEFAULT",
            KeyUsage="ENCRYPT_DECRYPT",
            Tags=[{"TagKey": PURPOSE_TAG_KEY, "TagValue": PURPOSE_TAG_VALUE}],
        )["KeyMetadata"]
        created.append(f"KMS key {metadata['Arn']} (symmetric, tagged {PURPOSE_TAG_KEY}={PURPOSE_TAG_VALUE})")
        kms.create_alias(AliasName=key_alias, TargetKeyId=metadata["KeyId"])
        created.append(f"KMS alias {key_alias} -> {metadata['Arn']}")
    else:
        _refuse_unusable_key(metadata, key_alias)
        _refuse_key_not_created_here(kms, metadata, key_alias)

    if not kms.get_key_rotation_status(KeyId=metadata["KeyId"])["KeyRotationEnabled"]:
        kms.enable_key_rotation(KeyId=metadata["KeyId"])
        created.append(f"automatic rotation on KMS key {metadata['Arn']}")
    return metadata["Arn"]


def _refuse_unusable_key(metadata: dict[str, Any], key_alias: str) -> None:
    if metadata.get("KeySpec") != "SYMMETRIC_DEFAULT" or metadata.get("KeyUsage") != "ENCRYPT_DECRYPT":
        raise BackendError(
            f"KMS alias {key_alias} points at {metadata['Arn']}, a {metadata.get('KeySpec')} "
            f"{metadata.get('KeyUsage')} key; Pulumi's awskms provider needs a symmetric ENCRYPT_DECRYPT key: "
            "pass another --key-alias"
        )
    if metadata.get("KeyState") != "Enabled":
        raise BackendError(
            f"KMS alias {key_alias} points at {metadata['Arn']}, which is {metadata.get('KeyState')}; "
            "enable the key (or cancel its deletion) or pass another --key-alias"
        )


def _refuse_key_not_created_here(kms: Any, metadata: dict[str, Any], key_alias: str) -> None:
    """Refuse a key this command did not create: it may be a project's key, or one others rely on."""
    pages = kms.get_paginator("list_resource_tags").paginate(KeyId=metadata["KeyId"])
    tags = {tag["TagKey"]: tag["TagValue"] for page in pages for tag in page.get("Tags", [])}
    if tags.get(PURPOSE_TAG_KEY) != PURPOSE_TAG_VALUE:
        raise BackendError(
            f"KMS alias {key_alias} points at {metadata['Arn']}, which lacks the tag "
            f"{PURPOSE_TAG_KEY}={PURPOSE_TAG_VALUE} that this command puts on the key it creates; "
            "pass another --key-alias, or tag that key if it is meant to be the state key"
        )


def _ensure_default_encryption(s3: Any, bucket: str, key_arn: str, key_alias: str, created: list[str]) -> None:
    try:
        rules = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"]
    except ClientError as error:
        if _error_code(error) != "ServerSideEncryptionConfigurationNotFoundError":
            raise
        rules = []
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


def _ensure_public_access_blocked(s3: Any, bucket: str, created: list[str]) -> None:
    try:
        current = s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
    except ClientError as error:
        if _error_code(error) != "NoSuchPublicAccessBlockConfiguration":
            raise
        current = {}
    if all(current.get(setting) is True for setting in PUBLIC_ACCESS_BLOCKED):
        return
    s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration=dict(PUBLIC_ACCESS_BLOCKED))
    created.append(f"public access block (all four settings) on bucket {bucket}")


def _ensure_tls_only_policy(s3: Any, bucket: str, partition: str, created: list[str]) -> None:
    try:
        current_policy = json.loads(s3.get_bucket_policy(Bucket=bucket)["Policy"])
    except ClientError as error:
        if _error_code(error) != "NoSuchBucketPolicy":
            raise
        current_policy = None
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


def _ensure_lifecycle_rule(s3: Any, bucket: str, created: list[str]) -> None:
    try:
        rules = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
    except ClientError as error:
        if _error_code(error) != "NoSuchLifecycleConfiguration":
            raise
        rules = []
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


