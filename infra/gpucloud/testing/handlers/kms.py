"""KMS keys and aliases."""

from __future__ import annotations


from gpucloud.testing.handlers.statements import allows, principals, statements
from gpucloud.testing.registry import (
    Account,
    BrokenReferenceError,
    Created,
    ResourceRequest,
    aws_tags,
    drop_none,
    refused,
    resource,
)


def _missing_principals(account: Account, policy: str) -> list[str]:
    """The account's own IAM roles and users a key policy names that do not exist. KMS refuses
    such a policy (CreateKey and PutKeyPolicy, `Policy`: the principals must exist and be visible
    to KMS, https://docs.aws.amazon.com/kms/latest/APIReference/API_CreateKey.html, read
    2026-11-24); moto accepts it. Other accounts' principals cannot be checked from here."""
    iam = account.client("iam")
    missing = []
    for statement in statements(policy):
        for arn in principals(statement, "AWS"):
            kind, _, path = arn.partition(f":iam::{account.account_id}:")[2].partition("/")
            if kind not in ("role", "user"):
                continue
            try:
                if kind == "role":
                    iam.get_role(RoleName=path.rsplit("/", 1)[-1])
                else:
                    iam.get_user(UserName=path.rsplit("/", 1)[-1])
            except iam.exceptions.NoSuchEntityException:
                missing.append(arn)
    return sorted(set(missing))


def _lets_account_change_policy(account: Account, policy: str) -> bool:
    """Whether the key policy lets the account (whoever creates the key in it) call
    kms:PutKeyPolicy later. KMS refuses a policy that does not, unless the caller bypasses the
    lockout safety check (KMS API reference, CreateKey, `BypassPolicyLockoutSafetyCheck`: the
    policy must allow the calling principal a subsequent PutKeyPolicy; read 2026-11-25), which the
    provider sends only with `bypassPolicyLockoutSafetyCheck`. Counted: an unconditioned Allow to
    the account root, the account id or everyone; a condition may or may not hold for the caller."""
    root = {f"arn:aws:iam::{account.account_id}:root", account.account_id}
    for statement in statements(policy):
        if not allows(statement, "kms:PutKeyPolicy") or statement.get("Condition"):
            continue
        if statement.get("Principal") == "*" or root & set(principals(statement, "AWS")):
            return True
    return False


@resource("aws:kms/key:Key")
def create_key(account: Account, request: ResourceRequest) -> Created:
    kms = account.client("kms")
    inputs = request.inputs
    missing = _missing_principals(account, inputs["policy"]) if inputs.get("policy") else []
    if missing:
        raise refused(
            "CreateKey",
            "MalformedPolicyDocumentException",
            f"Policy contains a statement with one or more invalid principals: {', '.join(missing)} does not exist",
        )
    if inputs.get("policy") and not inputs.get("bypassPolicyLockoutSafetyCheck") and not _lets_account_change_policy(
        account, inputs["policy"]
    ):
        raise refused(
            "CreateKey",
            "MalformedPolicyDocumentException",
            "The new key policy will not allow you to update the key policy in the future "
            "(no statement allows kms:PutKeyPolicy to the account)",
        )
    metadata = kms.create_key(
        **drop_none(
            {
                "Description": inputs.get("description"),
                "Policy": inputs.get("policy"),
                "KeyUsage": inputs.get("keyUsage", "ENCRYPT_DECRYPT"),
                "KeySpec": inputs.get("customerMasterKeySpec", "SYMMETRIC_DEFAULT"),
                "Tags": aws_tags(inputs.get("tags"), "TagKey", "TagValue"),
            }
        )
    )["KeyMetadata"]
    key_id = metadata["KeyId"]
    if inputs.get("enableKeyRotation"):
        kms.enable_key_rotation(KeyId=key_id)
    rotation = kms.get_key_rotation_status(KeyId=key_id)["KeyRotationEnabled"]
    policy = kms.get_key_policy(KeyId=key_id, PolicyName="default")["Policy"]
    return Created(
        id=key_id,
        outputs={
            "arn": metadata["Arn"],
            "keyId": key_id,
            "enableKeyRotation": rotation,
            "policy": policy,
            "deletionWindowInDays": inputs.get("deletionWindowInDays", 30),
        },
    )


@resource("aws:kms/alias:Alias")
def create_alias(account: Account, request: ResourceRequest) -> Created:
    kms = account.client("kms")
    name = request.inputs.get("name") or f"alias/{request.physical_name()}"
    kms.create_alias(AliasName=name, TargetKeyId=request.inputs["targetKeyId"])
    target = kms.describe_key(KeyId=request.inputs["targetKeyId"])["KeyMetadata"]["Arn"]
    return Created(id=name, outputs={"name": name, "arn": account.arn("kms", name), "targetKeyArn": target})


def require_key(account: Account, key: str | None, where: str) -> None:
    """Volumes and launch templates must name a key that exists and is enabled (moto does not check)."""
    if not key:
        return
    kms = account.client("kms")
    try:
        state = kms.describe_key(KeyId=key)["KeyMetadata"]["KeyState"]
    except kms.exceptions.NotFoundException:
        raise BrokenReferenceError(f"{where}: KMS key {key} does not exist") from None
    if state != "Enabled":
        raise BrokenReferenceError(f"{where}: KMS key {key} is {state}, not Enabled")
