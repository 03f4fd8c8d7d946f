"""What every gpu-cloud bucket holds to: TLS only, and how long it keeps old versions and abandoned
uploads. The Pulumi state bucket (`gpucloud backend bootstrap`) and each stack's buckets share these,
so they cannot drift apart; the artifacts bucket's access logs have their own retention."""

from __future__ import annotations

from typing import Any

NONCURRENT_VERSION_DAYS = 90
"""Long enough to roll back a state file or an agent bundle, short enough not to keep every one."""
INCOMPLETE_UPLOAD_DAYS = 7
ACCESS_LOG_DAYS = 365
"""How long the server access logs of the artifacts bucket (its writes, reads and deletes) are kept."""


def tls_only_statement(bucket_arn: str, sid: str = "DenyWithoutTls") -> dict[str, Any]:
    """Deny every request to the bucket and its objects that does not arrive over TLS
    (`aws:SecureTransport` false: S3 user guide, "Security best practices for Amazon S3", enforce
    encryption of data in transit; read 2026-11-24)."""
    return {
        "Sid": sid,
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:*",
        "Resource": [bucket_arn, f"{bucket_arn}/*"],
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }


def versioned_bucket_rule(rule_id: str) -> dict[str, Any]:
    """A whole-bucket lifecycle rule, as S3's PutBucketLifecycleConfiguration takes it: noncurrent
    versions expire after NONCURRENT_VERSION_DAYS, incomplete multipart uploads are aborted after
    INCOMPLETE_UPLOAD_DAYS (S3 user guide, "Examples of S3 Lifecycle configurations", read 2026-11-25)."""
    return {
        "ID": rule_id,
        "Filter": {"Prefix": ""},
        "Status": "Enabled",
        "NoncurrentVersionExpiration": {"NoncurrentDays": NONCURRENT_VERSION_DAYS},
        "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": INCOMPLETE_UPLOAD_DAYS},
    }


def access_log_rule(rule_id: str) -> dict[str, Any]:
    """Access logs expire after ACCESS_LOG_DAYS; the log bucket is not versioned."""
    return {
        "ID": rule_id,
        "Filter": {"Prefix": ""},
        "Status": "Enabled",
        "Expiration": {"Days": ACCESS_LOG_DAYS},
        "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": INCOMPLETE_UPLOAD_DAYS},
    }
