"""What reaches the stack's buckets: the S3 gateway endpoint's policy, the artifacts bucket's policy
and its access-log bucket's."""

from __future__ import annotations

from collections.abc import Sequence

from gpucloud.bucket_rules import tls_only_statement
from gpucloud.documents.node import S3_READ_ACTIONS, S3_WRITE_ACTIONS
from gpucloud.documents.services import Document


NODE_S3_ACTIONS = sorted({"s3:ListBucket", *S3_READ_ACTIONS, *S3_WRITE_ACTIONS})
"""Every S3 action the node role holds (`s3_prefix_statements`, whose reads cover the agent bundle
fetch), built from the same lists so the endpoint policy cannot fall behind the role."""


def aws_owned_package_buckets(region: str) -> list[str]:
    """AWS's buckets a node downloads from, read anonymously, in the stack's region:
    - `amazoncloudwatch-agent-<region>`: the CloudWatch agent package the node installs when its
      image lacks the agent (gpucloud.userdata.scripts; CloudWatch user guide, "Download and install
      the CloudWatch agent using an Amazon S3 download link", read 2026-11-25);
    - `al2023-repos-<region>-de612dc2`: the Amazon Linux 2023 package repositories, which `dnf`
      reads for that install on an AL2023 image (the bucket AWS names for AL2023 repository access
      through an S3 gateway endpoint, read 2026-11-25);
    - `prod-<region>-starport-layer-bucket`: where ECR keeps image layers, which `docker pull` of a
      container service's private ECR image downloads through the S3 gateway endpoint (ECR user
      guide, "Amazon ECR interface VPC endpoints (AWS PrivateLink)": "Minimum Amazon S3 bucket
      permissions for Amazon ECR", read 2026-11-25).
    Session Manager needs no bucket; Ubuntu's apt mirrors are not on S3."""
    return [f"amazoncloudwatch-agent-{region}", f"al2023-repos-{region}-de612dc2", f"prod-{region}-starport-layer-bucket"]


MOUNTPOINT_RELEASE_BUCKET = "mountpoint-s3-release"
MOUNTPOINT_RELEASE_REGION = "us-east-1"
"""Where `storage.s3Mount.install: download` fetches mount-s3: Mountpoint's install guide
(awslabs/mountpoint-s3 doc/INSTALL.md, read 2026-11-28) gives only path-style URLs on the global
endpoint, https://s3.amazonaws.com/mountpoint-s3-release/latest/<arch>/mount-s3.<deb|rpm>; that
endpoint serves us-east-1, the bucket's region (S3 user guide, "Virtual hosting of buckets":
path-style requests to s3.amazonaws.com reach us-east-1 buckets; read 2026-11-28)."""


def mountpoint_release_buckets(partition: str, region: str) -> list[str]:
    """The buckets a node's mount-s3 download passes through the stack's S3 gateway endpoint: the
    release bucket in its own region, none elsewhere. A gateway endpoint carries only requests to
    buckets of its own region (VPC user guide, "Gateway endpoints for Amazon S3": no cross-Region
    requests; read 2026-11-28), so in another region the download leaves through the NAT gateway and
    the endpoint policy never sees it."""
    return [MOUNTPOINT_RELEASE_BUCKET] if partition == "aws" and region == MOUNTPOINT_RELEASE_REGION else []


def gateway_endpoint_reaches(partition: str, region: str, bucket: str) -> bool:
    """Whether a node's request to the bucket passes the stack's S3 gateway endpoint: every bucket
    the stack names is in its region (the plan refuses a data bucket of another), and so are AWS's package
    buckets (`aws_owned_package_buckets`), but Mountpoint's release bucket is in us-east-1 alone, which
    no gateway endpoint of another region carries (`mountpoint_release_buckets`)."""
    return bucket != MOUNTPOINT_RELEASE_BUCKET or bool(mountpoint_release_buckets(partition, region))


def s3_gateway_endpoint_policy(partition: str, account_id: str, region: str, buckets: Sequence[str],
                               package_buckets: Sequence[str] = ()) -> Document:
    """What may pass the stack's S3 gateway endpoint, instead of AWS's default full access (with
    which a node could write to any bucket of any account through it; with `egress: endpointsOnly`
    it is the nodes' only way to S3, and even with NAT, same-Region S3 traffic takes it).

    The node role's S3 actions, on the stack's own buckets (`buckets`: the artifacts bucket and
    `data.bucket`), for principals of this account only (`aws:PrincipalAccount`); and `s3:GetObject`
    on the AWS-owned package buckets (`aws_owned_package_buckets`, and `package_buckets`: AWS's
    buckets the stack's settings download from, such as `mountpoint_release_buckets`), for anyone,
    as their downloads are unsigned. An endpoint
    policy does not grant: IAM and bucket policies still decide (VPC user guide, "Control access
    to VPC endpoints using endpoint policies" and "Gateway endpoints for Amazon S3"; S3 user
    guide, "Controlling access from VPC endpoints with bucket policies"; read 2026-11-25)."""
    own = sorted(set(buckets))
    aws_owned = [*aws_owned_package_buckets(region), *package_buckets]
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AccountPrincipalsUseStackBuckets",
                "Effect": "Allow",
                "Principal": "*",
                "Action": NODE_S3_ACTIONS,
                "Resource": [arn for bucket in own for arn in (f"arn:{partition}:s3:::{bucket}", f"arn:{partition}:s3:::{bucket}/*")],
                "Condition": {"StringEquals": {"aws:PrincipalAccount": account_id}},
            },
            {
                "Sid": "AnyoneReadsAwsOwnedPackageBuckets",
                "Effect": "Allow",
                "Principal": "*",
                "Action": "s3:GetObject",
                "Resource": [f"arn:{partition}:s3:::{bucket}/*" for bucket in aws_owned],
            },
        ],
    }


def artifacts_bucket_policy(bucket_arn: str, readers: Sequence[str]) -> Document:
    """TLS only, and objects readable by the named principals only (the node roles and whoever
    runs `pulumi up`), whatever identity policies elsewhere in the account allow.

    `aws:SecureTransport` false denies plain HTTP (S3 user guide, "Security best practices for
    Amazon S3": enforce encryption of data in transit); `aws:PrincipalArn` is a role's ARN, not its
    session's, for assumed-role callers (IAM user guide, "AWS global condition context keys"). Both
    pages read 2026-11-24."""
    objects = f"{bucket_arn}/*"
    return {
        "Version": "2012-10-17",
        "Statement": [
            tls_only_statement(bucket_arn),
            {
                "Sid": "ObjectsReadableOnlyByNodeRolesAndDeployer",
                "Effect": "Deny",
                "Principal": "*",
                "Action": ["s3:GetObject", "s3:GetObjectVersion"],
                "Resource": objects,
                "Condition": {"ArnNotEquals": {"aws:PrincipalArn": sorted(set(readers))}},
            },
        ],
    }


def access_logs_bucket_policy(log_bucket_arn: str, source_bucket_arn: str, account_id: str, prefix: str) -> Document:
    """TLS only, and S3's log delivery may write under `prefix` for the one source bucket of this
    account: the bucket-policy grant that replaces the log-delivery ACL in buckets with ACLs
    disabled (S3 user guide, "Enabling Amazon S3 server access logging", permissions for the
    logging service principal `logging.s3.amazonaws.com`; read 2026-11-25)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            tls_only_statement(log_bucket_arn),
            {
                "Sid": "S3LogDeliveryWritesSourceBucketLogs",
                "Effect": "Allow",
                "Principal": {"Service": "logging.s3.amazonaws.com"},
                "Action": "s3:PutObject",
                "Resource": f"{log_bucket_arn}/{prefix}*",
                "Condition": {
                    "ArnLike": {"aws:SourceArn": source_bucket_arn},
                    "StringEquals": {"aws:SourceAccount": account_id},
                },
            },
        ],
    }
