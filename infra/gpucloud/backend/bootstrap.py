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

The steps are `state_bucket` and `state_key`, each read-compare-write; what a run leaves behind is
`result`; the names it refuses and the documents it writes live in `names` and `documents`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpucloud.backend.aws_steps import aws_step
from gpucloud.backend.names import DEFAULT_KEY_ALIAS, validate_bucket_name, validate_key_alias, validate_region
from gpucloud.backend.result import BootstrapResult
from gpucloud.backend.state_bucket import (
    check_existing_bucket,
    create_tagged_bucket,
    ensure_default_encryption,
    ensure_lifecycle_rule,
    ensure_public_access_blocked,
    ensure_tls_only_policy,
    ensure_versioning,
)
from gpucloud.backend.state_key import ensure_key

if TYPE_CHECKING:
    import boto3


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
    with aws_step("identify the AWS account"):
        identity = session.client("sts", region_name=region).get_caller_identity()
    account_id = identity["Account"]
    partition = identity["Arn"].split(":")[1]

    created: list[str] = []
    with aws_step(f"check bucket {bucket}"):
        bucket_exists = check_existing_bucket(s3, bucket, region, account_id)
    with aws_step(f"set up KMS key {key_alias}"):
        key_arn = ensure_key(kms, key_alias, created)
    if not bucket_exists:
        with aws_step(f"create bucket {bucket}"):
            create_tagged_bucket(s3, bucket, region, created)
    with aws_step(f"enable versioning on bucket {bucket}"):
        ensure_versioning(s3, bucket, created)
    with aws_step(f"set default encryption on bucket {bucket}"):
        ensure_default_encryption(s3, bucket, key_arn, key_alias, created)
    with aws_step(f"block public access to bucket {bucket}"):
        ensure_public_access_blocked(s3, bucket, created)
    with aws_step(f"set the TLS-only policy on bucket {bucket}"):
        ensure_tls_only_policy(s3, bucket, partition, created)
    with aws_step(f"set the lifecycle rule on bucket {bucket}"):
        ensure_lifecycle_rule(s3, bucket, created)
    return BootstrapResult(bucket=bucket, region=region, key_arn=key_arn, key_alias=key_alias, created=created)
