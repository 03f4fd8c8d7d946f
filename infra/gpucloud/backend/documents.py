"""The bucket settings the state backend wants, as plain documents: TLS-only policy, lifecycle rule,
public access block, and how to compare them with what AWS echoes back."""

from __future__ import annotations

from typing import Any

from gpucloud.bucket_rules import INCOMPLETE_UPLOAD_DAYS, NONCURRENT_VERSION_DAYS, versioned_bucket_rule
from gpucloud.bucket_rules import tls_only_statement as bucket_tls_only_statement

TLS_ONLY_STATEMENT_ID = "DenyInsecureTransport"
LIFECYCLE_RULE_ID = "pulumi-state-retention"

PUBLIC_ACCESS_BLOCKED = {
    "BlockPublicAcls": True,
    "IgnorePublicAcls": True,
    "BlockPublicPolicy": True,
    "RestrictPublicBuckets": True,
}

def tls_only_statement(bucket: str, partition: str) -> dict[str, Any]:
    """Deny every request to the bucket and its objects that does not arrive over TLS.

    `partition` is the ARN partition of the account: aws, aws-cn or aws-us-gov.
    """
    return bucket_tls_only_statement(f"arn:{partition}:s3:::{bucket}", TLS_ONLY_STATEMENT_ID)


def with_tls_only_statement(bucket: str, partition: str, existing_policy: dict[str, Any] | None) -> dict[str, Any]:
    """The bucket policy with our TLS-only statement in place of any older copy; other statements stay."""
    existing_policy = existing_policy or {}
    others = [
        statement
        for statement in statements_of(existing_policy)
        if statement.get("Sid") != TLS_ONLY_STATEMENT_ID
    ]
    extra_keys = {key: value for key, value in existing_policy.items() if key not in ("Version", "Statement")}
    return {
        "Version": "2012-10-17",
        **extra_keys,
        "Statement": [*others, tls_only_statement(bucket, partition)],
    }


def state_lifecycle_rule() -> dict[str, Any]:
    """Keep old state versions long enough to roll back, then let them go; clean up abandoned uploads
    (the rule every versioned gpu-cloud bucket keeps, `gpucloud.bucket_rules`)."""
    return versioned_bucket_rule(LIFECYCLE_RULE_ID)


def lifecycle_rule_matches(rule: dict[str, Any]) -> bool:
    """Compare on meaning: AWS may echo a whole-bucket filter as `{}` or `{"Prefix": ""}`."""
    whole_bucket = rule.get("Filter", {}) in ({}, {"Prefix": ""}) and rule.get("Prefix", "") == ""
    return (
        whole_bucket
        and rule.get("Status") == "Enabled"
        and rule.get("NoncurrentVersionExpiration", {}).get("NoncurrentDays") == NONCURRENT_VERSION_DAYS
        and rule.get("AbortIncompleteMultipartUpload", {}).get("DaysAfterInitiation") == INCOMPLETE_UPLOAD_DAYS
    )


def statements_of(policy: dict[str, Any]) -> list[dict[str, Any]]:
    statements = policy.get("Statement", [])
    return [statements] if isinstance(statements, dict) else list(statements)


def normalized_statement(statement: dict[str, Any]) -> dict[str, Any]:
    """A statement with single values and lists made comparable, since AWS may echo either form."""

    def as_sorted_list(value: Any) -> list[Any]:
        return sorted(value) if isinstance(value, list) else [value]

    principal = statement.get("Principal")
    return {
        "Effect": statement.get("Effect"),
        "Principal": "*" if principal == {"AWS": "*"} else principal,
        "Action": as_sorted_list(statement.get("Action")),
        "Resource": as_sorted_list(statement.get("Resource")),
        "Condition": statement.get("Condition"),
    }
