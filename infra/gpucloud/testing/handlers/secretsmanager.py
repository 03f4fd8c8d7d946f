"""Secrets Manager as the program reads it: `aws.secretsmanager.getSecret` (DescribeSecret, never
the value), for the secrets containers' `secretEnv` names."""

from __future__ import annotations

import re
from typing import Any

from botocore.exceptions import ClientError

from gpucloud.lookups.facts import SECRET_NOT_KNOWN
from gpucloud.testing.registry import Account, invoke

SECRET_ARN_NAME = re.compile(r"arn:[^:]+:secretsmanager:[^:]+:[0-9]{12}:secret:(?P<name>.+)-[A-Za-z0-9]{6}")
"""A secret's ARN ends in its name, a hyphen and six random characters (CreateSecret's `ARN`,
Secrets Manager API reference, read 2026-11-28)."""


@invoke("aws:secretsmanager/getSecret:getSecret")
def secret(account: Account, args: dict[str, Any]) -> dict[str, Any]:
    """DescribeSecret by ARN or name; a missing one fails with ResourceNotFoundException where account
    facts list the secrets, else it is not known. moto draws an ARN's suffix itself, so a secret the
    facts seeded is found by the name an ARN carries."""
    secret_id = args.get("arn") or args["name"]
    match = SECRET_ARN_NAME.fullmatch(secret_id)
    try:
        found = account.client("secretsmanager").describe_secret(SecretId=match["name"] if match else secret_id)
    except ClientError as error:
        if error.response["Error"]["Code"] != "ResourceNotFoundException" or account.secrets_known:
            raise
        raise LookupError(f"{SECRET_NOT_KNOWN}: no account facts list {secret_id}") from None
    return {"id": found["ARN"], "arn": found["ARN"], "name": found["Name"], "description": found.get("Description", ""),
            "kmsKeyId": found.get("KmsKeyId", ""), "policy": "", "tags": {}, "createdDate": "", "lastChangedDate": "",
            "region": account.region}
