"""Encryption rules: every EBS volume and launch-template device under a customer-managed key, the
fleet's logs and GPU readings too, and keys that rotate and cannot be deleted in a hurry."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gpucloud.policy.model import UNKNOWN, PolicyConfig, Report
from gpucloud.policy.resource_types import INSTANCE, KMS_KEY, LAUNCH_TEMPLATE, LOG_GROUP, PROMETHEUS_WORKSPACE, VOLUME
from gpucloud.policy.values import as_number, entry, is_true, mappings, peek, text

_AWS_MANAGED_ALIAS = re.compile(r"(^|:)alias/aws/")


# ---------------------------------------------------------------- ebs-encrypted-with-cmk

_CMK_FIX = "Fix: set encrypted to true and kmsKeyId to the project's customer-managed KMS key ARN."


def _cmk_problem(encrypted: Any, kms_key_id: Any) -> str | None:
    """What is wrong with one volume's encryption settings, if anything.

    An unknown kmsKeyId with encrypted true passes: only a key this stack is still creating
    is unknown during preview (the aws/ebs alias would be a known string), and `pulumi up`
    checks the resolved ARN.
    """
    if not is_true(encrypted):
        return "is not encrypted"
    if kms_key_id is UNKNOWN:
        return None
    key = text(kms_key_id)
    if key is None:
        return "is encrypted with the AWS-managed default key (no kmsKeyId)"
    if _AWS_MANAGED_ALIAS.search(key):
        return f"is encrypted with the AWS-managed key {key!r}"
    return None


def validate_ebs_encrypted_with_cmk(
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig | None = None
) -> None:
    if resource_type == VOLUME:
        problem = _cmk_problem(props.get("encrypted"), peek(props, "kmsKeyId"))
        if problem:
            report(f"EBS volume {problem}. {_CMK_FIX}")
    elif resource_type == LAUNCH_TEMPLATE:
        devices = mappings(props.get("blockDeviceMappings"))
        if not devices:
            report(
                "Launch template declares no blockDeviceMappings, so the root volume takes the AMI's "
                'encryption settings. Fix: map the AMI\'s root device with ebs.encrypted "true" and '
                "ebs.kmsKeyId set to the project's customer-managed KMS key ARN."
            )
        for device in devices:
            ebs = entry(device, "ebs")
            if not isinstance(ebs, Mapping):
                continue  # instance-store or suppressed (noDevice) mapping: no EBS volume
            problem = _cmk_problem(ebs.get("encrypted"), peek(ebs, "kmsKeyId"))
            if problem:
                report(f"Launch template block device {device.get('deviceName')!r} {problem}. {_CMK_FIX}")
    elif resource_type == INSTANCE:
        root = entry(props, "rootBlockDevice")
        if isinstance(root, Mapping):
            problem = _cmk_problem(root.get("encrypted"), peek(root, "kmsKeyId"))
            if problem:
                report(f"Instance root block device {problem}. {_CMK_FIX}")
        elif peek(props, "launchTemplate") is None:
            report(
                "Instance sets no rootBlockDevice, so the root volume takes the AMI's encryption "
                "settings. Fix: add rootBlockDevice with encrypted true and kmsKeyId set to the "
                "project's customer-managed KMS key ARN (or launch it from a compliant launch template)."
            )
        for device in mappings(props.get("ebsBlockDevices")):
            problem = _cmk_problem(device.get("encrypted"), peek(device, "kmsKeyId"))
            if problem:
                report(f"Instance EBS block device {device.get('deviceName')!r} {problem}. {_CMK_FIX}")


# ---------------------------------------------------------------- monitoring-data-encrypted-with-cmk

_MONITORING_KEY_FIELDS = {LOG_GROUP: ("kmsKeyId", "CloudWatch log group"), PROMETHEUS_WORKSPACE: ("kmsKeyArn", "Prometheus workspace")}


def validate_monitoring_data_encrypted_with_cmk(
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig | None = None
) -> None:
    """Log groups (flow logs, AMP's rule and alert errors) and Prometheus workspaces (every GPU
    reading, with instance ids and GPU UUIDs) under the project key. A workspace never changes key
    (AMP user guide, "Encryption at rest", read 2026-11-25): an unencrypted one is replaced to fix."""
    if resource_type not in _MONITORING_KEY_FIELDS:
        return
    field, what = _MONITORING_KEY_FIELDS[resource_type]
    key = peek(props, field)
    if key is UNKNOWN:
        return
    if text(key) is None:
        report(f"{what} is encrypted with an AWS-owned key (no {field}). Fix: set {field} to the project's "
               "customer-managed KMS key ARN.")


# ---------------------------------------------------------------- kms-rotation-and-deletion-window

MIN_DELETION_WINDOW_DAYS = 14


def validate_kms_rotation_and_deletion_window(
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig | None = None
) -> None:
    if resource_type != KMS_KEY:
        return
    key_spec = text(props.get("customerMasterKeySpec")) or "SYMMETRIC_DEFAULT"
    # AWS rotates only symmetric keys held in KMS itself (not asymmetric, HMAC or custom-store keys).
    rotatable = key_spec == "SYMMETRIC_DEFAULT" and not props.get("customKeyStoreId") and not props.get("xksKeyId")
    if rotatable and not is_true(props.get("enableKeyRotation")):
        report("KMS key has automatic rotation off. Fix: set enableKeyRotation to true.")
    window = props.get("deletionWindowInDays")
    if window is not None:  # absent: AWS waits its default 30 days
        days = as_number(window)
        if days is None or days < MIN_DELETION_WINDOW_DAYS:
            report(
                f"KMS key deletionWindowInDays is {window!r}: a key scheduled for deletion by mistake "
                f"must stay recoverable for at least {MIN_DELETION_WINDOW_DAYS} days. Fix: set "
                f"deletionWindowInDays between {MIN_DELETION_WINDOW_DAYS} and 30, or leave it unset (30)."
            )
