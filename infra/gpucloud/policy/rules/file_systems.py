"""file-system-encrypted-with-cmk: FSx for Lustre file systems under the project's key.

FSx takes a customer-managed key for persistent deployment types only; SCRATCH types are always
encrypted with a key FSx owns and accept no KmsKeyId (botocore fsx model 2018-03-01,
CreateFileSystem.KmsKeyId, read 2026-11-25), so the rule asks the key of persistent file systems and
says so of scratch ones in its description. Tags are `required-tags`' business (the type is taggable).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gpucloud.policy.model import UNKNOWN, PolicyConfig, Report
from gpucloud.policy.resource_types import LUSTRE_FILE_SYSTEM
from gpucloud.policy.values import peek, text

_AWS_MANAGED_ALIAS = re.compile(r"(^|:)alias/aws/")


def is_persistent(props: Mapping[str, Any]) -> bool:
    """Persistent deployment types keep data; the provider's default is SCRATCH_1."""
    deployment = text(props.get("deploymentType")) or "SCRATCH_1"
    return deployment.startswith("PERSISTENT")


def validate_file_system_encrypted_with_cmk(
    resource_type: str, props: Mapping[str, Any], report: Report, config: PolicyConfig | None = None
) -> None:
    if resource_type != LUSTRE_FILE_SYSTEM or not is_persistent(props):
        return
    key = peek(props, "kmsKeyId")
    if key is UNKNOWN:
        return
    key_text = text(key)
    if key_text is None:
        report("FSx for Lustre file system is encrypted with the AWS-managed aws/fsx key (no kmsKeyId). Fix: set "
               "kmsKeyId to the project's customer-managed KMS key ARN (FSx takes it at creation only).")
    elif _AWS_MANAGED_ALIAS.search(key_text):
        report(f"FSx for Lustre file system is encrypted with the AWS-managed key {key_text!r}. Fix: set kmsKeyId "
               "to the project's customer-managed KMS key ARN.")
