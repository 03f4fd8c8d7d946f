"""Names the state backend takes: bucket, region, key alias and stack, checked against AWS's and
Pulumi's rules before any AWS call, so a bad name fails at once and says what to pick instead."""

from __future__ import annotations

import ipaddress
import re

DEFAULT_KEY_ALIAS = "alias/gpu-cloud-state/pulumi"
"""Outside `alias/gpu-cloud/`, where each project's own key lives (`alias/gpu-cloud/<project>`)."""
PROJECT_KEY_ALIAS_PREFIX = "alias/gpu-cloud/"
PURPOSE_TAG_KEY = "gpu-cloud:purpose"
PURPOSE_TAG_VALUE = "pulumi-state"
DIY_BACKEND_ORGANIZATION = "organization"
"""The only organization name a DIY backend accepts in `organization/project/stack`."""

_REGION_PATTERN = re.compile(r"[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-\d+")
_KEY_ALIAS_PATTERN = re.compile(r"alias/[A-Za-z0-9/_-]{1,250}")
_STACK_NAME_PART_PATTERN = re.compile(r"[A-Za-z0-9_.-]{1,100}")
_RESERVED_BUCKET_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
_RESERVED_BUCKET_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")


class BackendError(Exception):
    """The backend cannot be bootstrapped as asked; the message names the bucket or key and what to do."""


class AwsCallError(BackendError):
    """An AWS call failed (credentials, permissions, network); the message names the step and AWS's error."""


def validate_bucket_name(bucket: str) -> None:
    """S3's general-purpose bucket naming rules, plus no dots (see below)."""
    reason = _bucket_name_problem(bucket)
    if reason:
        raise BackendError(f"bucket name {bucket!r} is not usable: {reason}; pick another name")


def validate_region(region: str) -> None:
    if not _REGION_PATTERN.fullmatch(region):
        raise BackendError(f"region {region!r} is not an AWS region name such as us-east-1 or eu-west-1")


def validate_key_alias(key_alias: str) -> None:
    """KMS alias rules (`alias/` then letters, digits, '/', '_', '-'; 256 characters in all), outside the
    namespaces AWS and the project keys use."""
    if not _KEY_ALIAS_PATTERN.fullmatch(key_alias) or key_alias.startswith("alias/aws/"):
        raise BackendError(
            f"key alias {key_alias!r} is not usable: it must look like 'alias/name' "
            "(letters, digits, '/', '_', '-'; at most 256 characters) and not start with 'alias/aws/', "
            "which AWS reserves"
        )
    if key_alias.startswith(PROJECT_KEY_ALIAS_PREFIX):
        raise BackendError(
            f"key alias {key_alias!r} is not usable: {PROJECT_KEY_ALIAS_PREFIX}<project> is each project's own "
            f"key; pick an alias outside {PROJECT_KEY_ALIAS_PREFIX}, such as the default {DEFAULT_KEY_ALIAS}"
        )


def validate_stack_name(stack: str) -> None:
    """Pulumi's stack name rules on a DIY backend, so the printed `pulumi stack init` line works as pasted.

    `stack`, `organization/stack` or `organization/project/stack`; each part letters, digits, '-', '_'
    and '.', at most 100 characters (Pulumi docs, "Stacks"); a DIY backend accepts only the literal
    organization `organization` (pulumi/pulumi, pkg/backend/diy, ParseReference).
    """
    parts = stack.split("/")
    if len(parts) > 3 or not all(_STACK_NAME_PART_PATTERN.fullmatch(part) for part in parts):
        raise BackendError(
            f"stack name {stack!r} is not valid: use at most 100 letters, digits, '-', '_' and '.', "
            f"optionally prefixed by '{DIY_BACKEND_ORGANIZATION}/' or '{DIY_BACKEND_ORGANIZATION}/<project>/'"
        )
    if len(parts) > 1 and parts[0] != DIY_BACKEND_ORGANIZATION:
        raise BackendError(
            f"stack name {stack!r} is not valid on an S3 backend: its organization must be "
            f"'{DIY_BACKEND_ORGANIZATION}', as in '{DIY_BACKEND_ORGANIZATION}/{'/'.join(parts[1:])}'"
        )


def _bucket_name_problem(bucket: str) -> str | None:
    if not 3 <= len(bucket) <= 63:
        return "it must be 3 to 63 characters long"
    if not re.fullmatch(r"[a-z0-9.-]+", bucket):
        return "only lowercase letters, digits, '.' and '-' are allowed"
    if not (bucket[0].isalnum() and bucket[-1].isalnum()):
        return "it must begin and end with a letter or digit"
    if ".." in bucket:
        return "it must not contain two adjacent dots"
    if _looks_like_ip_address(bucket):
        return "it must not be formatted as an IP address"
    if bucket.startswith(_RESERVED_BUCKET_PREFIXES):
        return f"AWS reserves the prefixes {', '.join(_RESERVED_BUCKET_PREFIXES)}"
    if bucket.endswith(_RESERVED_BUCKET_SUFFIXES):
        return f"AWS reserves the suffixes {', '.join(_RESERVED_BUCKET_SUFFIXES)}"
    if "." in bucket:
        # Allowed by S3, but a dotted name fails the TLS certificate check on virtual-hosted URLs,
        # and this bucket accepts TLS only.
        return "dots break TLS certificate checks on virtual-hosted S3 URLs, and this bucket is TLS-only"
    return None


def _looks_like_ip_address(name: str) -> bool:
    try:
        ipaddress.IPv4Address(name)
    except ValueError:
        return False
    return True
