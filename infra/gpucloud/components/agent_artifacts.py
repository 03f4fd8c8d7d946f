"""AgentArtifacts: the stack's artifacts bucket and the node agent bundle in it."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from gpucloud.documents import artifacts_bucket_policy
from gpucloud.userdata.bundle import AgentBundle


@dataclass(frozen=True)
class AgentArtifactsArgs:
    bucket_name: str
    kms_key_arn: pulumi.Input[str]
    reader_role_arns: Sequence[pulumi.Input[str]]
    """The node roles: besides whoever runs `pulumi up`, the only principals that may read objects."""
    bundle: AgentBundle
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
            aws.s3.BucketPublicAccessBlock(
                f"{name}-public-access-block", bucket=self.bucket.id, block_public_acls=True,
                block_public_policy=True, ignore_public_acls=True, restrict_public_buckets=True, opts=under_bucket,
            ),
            aws.s3.BucketOwnershipControls(
                f"{name}-ownership", bucket=self.bucket.id, rule={"object_ownership": "BucketOwnerEnforced"},
                opts=under_bucket,
            ),
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
        deployer = aws.iam.get_session_context_output(arn=aws.get_caller_identity_output().arn)
        self.policy = aws.s3.BucketPolicy(
            f"{name}-policy",
            bucket=self.bucket.id,
            policy=pulumi.Output.all(self.bucket.arn, deployer.issuer_arn, *args.reader_role_arns).apply(
                lambda values: json.dumps(artifacts_bucket_policy(values[0], readers=[*values[2:], values[1]]))
            ),
            opts=pulumi.ResourceOptions(parent=self.bucket, depends_on=settings),
        )
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
