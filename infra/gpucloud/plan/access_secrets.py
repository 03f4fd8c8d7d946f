"""The parameters and secrets of `secretEnv` in the access check. They are the account's, not the
stack's: the plan knows their names, not whether they exist nor the key that encrypts each. The
node's calls are checked on each named parameter and secret (a secret named without its ARN gets an
example six-character suffix), and the decrypt on a stand-in for its key that carries a customer
managed key's default key policy, which lets IAM policies of the account grant its use (KMS
developer guide, "Default key policy": it gives the account, and so IAM policies, full access;
read 2026-11-28). A key policy of the owner's own making is not checked."""

from __future__ import annotations

from typing import Any

from gpucloud.config import StackConfig
from gpucloud.config.node_role import secret_references

EXAMPLE_SECRET_SUFFIX = "EXAMPL"
"""Secrets Manager ends a secret's ARN with a hyphen and six characters of its own choosing."""
SECRET_KEY_ID = "secretenv-own-key"


def secret_key_arn(partition: str, region: str, account: str) -> str:
    return f"arn:{partition}:kms:{region}:{account}:key/{SECRET_KEY_ID}"


def secret_values(config: StackConfig, partition: str, region: str, account: str) -> dict[str, list[str]]:
    """The placeholders of the node's `containerSecrets` calls: each parameter as its ARN holds it,
    each secret's ARN, and the stand-in key."""
    parameters, secrets = secret_references(config.groups)
    arns = [secret if secret.startswith("arn:")
            else f"arn:{partition}:secretsmanager:{region}:{account}:secret:{secret}-{EXAMPLE_SECRET_SUFFIX}"
            for secret in secrets]
    return {"secretParameter": [parameter.lstrip("/") for parameter in parameters], "secretArn": arns,
            "secretKeyArn": [secret_key_arn(partition, region, account)] if parameters or secrets else []}


def secret_key_policies(config: StackConfig, partition: str, region: str, account: str) -> list[tuple[str, dict[str, Any]]]:
    """(the stand-in key, the default key policy) where a container has `secretEnv`, else nothing."""
    parameters, secrets = secret_references(config.groups)
    if not parameters and not secrets:
        return []
    policy = {"Version": "2012-10-17", "Id": "the secretEnv values' own key (not in the plan: its default key policy)",
              "Statement": [{"Sid": "EnableIamPolicies", "Effect": "Allow",
                             "Principal": {"AWS": f"arn:{partition}:iam::{account}:root"}, "Action": "kms:*",
                             "Resource": "*"}]}
    return [(secret_key_arn(partition, region, account), policy)]
