"""CloudWatch Logs log groups."""

from __future__ import annotations

import fnmatch

from gpucloud.testing.handlers.kms import require_key
from gpucloud.testing.handlers.statements import allows, listed, principals, statements
from gpucloud.testing.registry import Account, Created, ResourceRequest, drop_none, refused, resource


@resource("aws:cloudwatch/logGroup:LogGroup")
def create_log_group(account: Account, request: ResourceRequest) -> Created:
    """The `arn` output is the provider's: without the `:*` that DescribeLogGroups adds (pulumi-aws
    v7, LogGroup.arn: "Any `:*` suffix added by the API ... is removed")."""
    logs = account.client("logs")
    inputs = request.inputs
    name = request.physical_name()
    arn = account.arn("logs", f"log-group:{name}")
    if inputs.get("kmsKeyId"):
        require_key(account, inputs["kmsKeyId"], f"log group {name}")
        _require_logs_may_use_key(account, inputs["kmsKeyId"], arn)
    logs.create_log_group(
        **drop_none({"logGroupName": name, "kmsKeyId": inputs.get("kmsKeyId"), "tags": inputs.get("tags") or None})
    )
    if inputs.get("retentionInDays"):
        logs.put_retention_policy(logGroupName=name, retentionInDays=inputs["retentionInDays"])
    return Created(id=name, outputs={"name": name, "arn": arn})


def _require_logs_may_use_key(account: Account, key: str, log_group_arn: str) -> None:
    """CloudWatch Logs refuses a key whose policy does not let `logs.<region>.amazonaws.com` use
    it for this log group (CloudWatch Logs user guide, "Encrypt log data in CloudWatch Logs using
    AWS KMS", read 2026-11-24); moto does not check."""
    policy = account.client("kms").get_key_policy(KeyId=key, PolicyName="default")["Policy"]
    service = f"logs.{account.region}.amazonaws.com"
    for statement in statements(policy):
        if service not in principals(statement, "Service") or not allows(statement, "kms:GenerateDataKey"):
            continue
        patterns = (statement.get("Condition", {}).get("ArnLike", {}) or {}).get("kms:EncryptionContext:aws:logs:arn")
        if patterns is None or any(fnmatch.fnmatchcase(log_group_arn, pattern) for pattern in listed(patterns)):
            return
    raise refused(
        "CreateLogGroup",
        "AccessDeniedException",
        f"The specified KMS key does not exist or is not allowed to be used with Arn '{log_group_arn}'",
    )
