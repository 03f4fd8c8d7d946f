"""AgentArtifacts: the stack's artifacts bucket and the node agent bundle in it."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from gpucloud.bucket_rules import access_log_rule, versioned_bucket_rule
from gpucloud.documents import access_logs_bucket_policy, artifacts_bucket_policy
from gpucloud.naming import ARTIFACTS_ACCESS_LOG_PREFIX
from gpucloud.userdata.bundle import AgentBundle


@dataclass(frozen=True)
class AgentArtifactsArgs:
    bucket_name: str
    kms_key_arn: pulumi.Input[str]
    reader_role_arns: Sequence[pulumi.Input[str]]
    """The node roles: besides whoever runs `pulumi up`, the only principals that may read objects."""
    bundle: AgentBundle
    log_bucket_name: str | None = None
    """Where S3 writes the bucket's server access logs (`gpucloud.naming.access_logs_bucket_name`);
    by default the bucket's name, cut to fit, with `-access-logs`."""
    account_id: pulumi.Input[str] | None = None
    """The account of both buckets (by default the caller's)."""
    partition: str = "aws"
    tags: Mapping[str, str] = field(default_factory=dict)


class AgentArtifacts(pulumi.ComponentResource):
    """A private bucket (SSE-KMS with the project key, versioning, public access blocked, bucket
    owner enforced, TLS only) holding the agent bundle under its content-addressed key.

    The bucket policy denies reads to every principal but the node roles and the identity running
    `pulumi up` (the provider reads back each object it writes); the node role's own policy allows
    only the bundle prefix. A new bundle is a new key: the launch templates pin its SHA-256, so the
    fleet rolls onto it through the instance refresh while the old object stays until the update
    ends.

    Every request to the bucket (writes, reads, deletes) is logged by S3 server access logging into
    a log bucket of its own, kept `ACCESS_LOG_DAYS`; noncurrent bundle versions expire and
    abandoned uploads are aborted, by the rule the state bucket keeps (`gpucloud.bucket_rules`).
    """

    bucket_name: pulumi.Output[str]
    bucket_arn: pulumi.Output[str]
    bundle_key: pulumi.Output[str]
    bundle_sha256: pulumi.Output[str]

    def __init__(self, name: str, args: AgentArtifactsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-cloud:index:AgentArtifacts", name, None, opts)
        self.args = args
        child = pulumi.ResourceOptions(parent=self)
        self.bucket = aws.s3.Bucket(
            f"{name}-bucket", bucket=args.bucket_name, force_destroy=True,
            tags={**args.tags, "Name": args.bucket_name}, opts=child,
        )
        under_bucket = pulumi.ResourceOptions(parent=self.bucket)
        settings = [
            *private_bucket(name, self.bucket.id, under_bucket),
            aws.s3.BucketVersioning(
                f"{name}-versioning", bucket=self.bucket.id, versioning_configuration={"status": "Enabled"},
                opts=under_bucket,
            ),
            aws.s3.BucketServerSideEncryptionConfiguration(
                f"{name}-encryption", bucket=self.bucket.id,
                rules=[{
                    "apply_server_side_encryption_by_default": {
                        "sse_algorithm": "aws:kms", "kms_master_key_id": args.kms_key_arn,
                    },
                    "bucket_key_enabled": True,
                }],
                opts=under_bucket,
            ),
        ]
        caller = aws.get_caller_identity_output()
        deployer = aws.iam.get_session_context_output(arn=caller.arn)
        self.policy = aws.s3.BucketPolicy(
            f"{name}-policy",
            bucket=self.bucket.id,
            policy=pulumi.Output.all(self.bucket.arn, deployer.issuer_arn, *args.reader_role_arns).apply(
                lambda values: json.dumps(artifacts_bucket_policy(values[0], readers=[*values[2:], values[1]]))
            ),
            opts=pulumi.ResourceOptions(parent=self.bucket, depends_on=settings),
        )
        self._access_logs(name, args, args.account_id or caller.account_id)
        lifecycle(f"{name}-retention", self.bucket.id, versioned_bucket_rule("gpu-cloud-artifacts-retention"),
                  pulumi.ResourceOptions(parent=self.bucket, depends_on=settings))
        self.bundle = aws.s3.BucketObjectv2(
            f"{name}-agent-bundle",
            bucket=self.bucket.id,
            key=args.bundle.key,
            content_base64=base64.b64encode(args.bundle.data).decode("ascii"),
            content_type="application/zip",
            server_side_encryption="aws:kms",
            kms_key_id=args.kms_key_arn,
            bucket_key_enabled=True,
            tags={**args.tags, "sha256": args.bundle.sha256},
            opts=pulumi.ResourceOptions(parent=self.bucket, depends_on=[*settings, self.policy]),
        )
        self.bucket_name = self.bucket.id
        self.bucket_arn = self.bucket.arn
        self.bundle_key = self.bundle.key
        self.bundle_sha256 = pulumi.Output.from_input(args.bundle.sha256)
        self.register_outputs(
            {
                "bucketName": self.bucket_name,
                "bucketArn": self.bucket_arn,
                "bundleKey": self.bundle_key,
                "bundleSha256": self.bundle_sha256,
            }
        )

    def _access_logs(self, name: str, args: AgentArtifactsArgs, account_id: pulumi.Input[str]) -> None:
        """The log bucket (SSE-S3: server access logs are not delivered to a bucket whose default
        encryption is SSE-KMS, S3 user guide, "Enabling Amazon S3 server access logging"), its
        retention, and the artifacts bucket's logging into it."""
        log_bucket_name = args.log_bucket_name or f"{args.bucket_name[:51].rstrip('-.')}-access-logs"
        logs = aws.s3.Bucket(
            f"{name}-access-logs", bucket=log_bucket_name, force_destroy=True,
            tags={**args.tags, "Name": log_bucket_name}, opts=pulumi.ResourceOptions(parent=self),
        )
        under_logs = pulumi.ResourceOptions(parent=logs)
        log_settings = [
            *private_bucket(f"{name}-access-logs", logs.id, under_logs),
            aws.s3.BucketServerSideEncryptionConfiguration(
                f"{name}-access-logs-encryption", bucket=logs.id,
                rules=[{"apply_server_side_encryption_by_default": {"sse_algorithm": "AES256"}}], opts=under_logs,
            ),
            lifecycle(f"{name}-access-logs-retention", logs.id, access_log_rule("gpu-cloud-access-logs"), under_logs),
        ]
        log_policy = aws.s3.BucketPolicy(
            f"{name}-access-logs-policy",
            bucket=logs.id,
            policy=pulumi.Output.all(logs.arn, self.bucket.arn, account_id).apply(
                lambda values: json.dumps(
                    access_logs_bucket_policy(values[0], values[1], values[2], ARTIFACTS_ACCESS_LOG_PREFIX)
                )
            ),
            opts=pulumi.ResourceOptions(parent=logs, depends_on=log_settings[:2]),
        )
        aws.s3.BucketLogging(
            f"{name}-logging", bucket=self.bucket.id, target_bucket=logs.id,
            target_prefix=ARTIFACTS_ACCESS_LOG_PREFIX,
            opts=pulumi.ResourceOptions(parent=self.bucket, depends_on=[*log_settings, log_policy]),
        )


def private_bucket(name: str, bucket: pulumi.Input[str], opts: pulumi.ResourceOptions) -> list[pulumi.Resource]:
    """Every public access block on, and the bucket owner owns every object (ACLs off)."""
    return [
        aws.s3.BucketPublicAccessBlock(
            f"{name}-public-access-block", bucket=bucket, block_public_acls=True,
            block_public_policy=True, ignore_public_acls=True, restrict_public_buckets=True, opts=opts,
        ),
        aws.s3.BucketOwnershipControls(
            f"{name}-ownership", bucket=bucket, rule={"object_ownership": "BucketOwnerEnforced"}, opts=opts,
        ),
    ]


def lifecycle(name: str, bucket: pulumi.Input[str], rule: dict, opts: pulumi.ResourceOptions) -> aws.s3.BucketLifecycleConfiguration:
    """One S3 lifecycle rule (in S3's API shape, as `gpucloud.bucket_rules` writes it) on a bucket."""
    expiration = {
        "noncurrent_version_expiration": (
            {"noncurrent_days": rule["NoncurrentVersionExpiration"]["NoncurrentDays"]}
            if "NoncurrentVersionExpiration" in rule else None
        ),
        "expiration": {"days": rule["Expiration"]["Days"]} if "Expiration" in rule else None,
    }
    return aws.s3.BucketLifecycleConfiguration(
        name,
        bucket=bucket,
        rules=[{
            "id": rule["ID"],
            "status": rule["Status"],
            "filter": {"prefix": rule["Filter"]["Prefix"]},
            "abort_incomplete_multipart_upload": {
                "days_after_initiation": rule["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"],
            },
            **{key: value for key, value in expiration.items() if value is not None},
        }],
        opts=opts,
    )
