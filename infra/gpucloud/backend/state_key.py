"""The KMS key of the state backend: one symmetric key behind an alias, for the bucket's default
encryption and Pulumi's `awskms://` secrets provider, created and tagged here or refused when it is
not one this command created."""

from __future__ import annotations

from typing import Any

from gpucloud.backend.aws_steps import read_setting
from gpucloud.backend.names import PURPOSE_TAG_KEY, PURPOSE_TAG_VALUE, BackendError


def ensure_key(kms: Any, key_alias: str, created: list[str]) -> str:
    """The ARN of the symmetric key behind the alias, creating both if needed; rotation always on."""
    described = read_setting(lambda: kms.describe_key(KeyId=key_alias), "NotFoundException")
    metadata = described["KeyMetadata"] if described else None

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
        refuse_unusable_key(metadata, key_alias)
        refuse_key_not_created_here(kms, metadata, key_alias)

    if not kms.get_key_rotation_status(KeyId=metadata["KeyId"])["KeyRotationEnabled"]:
        kms.enable_key_rotation(KeyId=metadata["KeyId"])
        created.append(f"automatic rotation on KMS key {metadata['Arn']}")
    return metadata["Arn"]


def refuse_unusable_key(metadata: dict[str, Any], key_alias: str) -> None:
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


def refuse_key_not_created_here(kms: Any, metadata: dict[str, Any], key_alias: str) -> None:
    """Refuse a key this command did not create: it may be a project's key, or one others rely on."""
    pages = kms.get_paginator("list_resource_tags").paginate(KeyId=metadata["KeyId"])
    tags = {tag["TagKey"]: tag["TagValue"] for page in pages for tag in page.get("Tags", [])}
    if tags.get(PURPOSE_TAG_KEY) != PURPOSE_TAG_VALUE:
        raise BackendError(
            f"KMS alias {key_alias} points at {metadata['Arn']}, which lacks the tag "
            f"{PURPOSE_TAG_KEY}={PURPOSE_TAG_VALUE} that this command puts on the key it creates; "
            "pass another --key-alias, or tag that key if it is meant to be the state key"
        )
