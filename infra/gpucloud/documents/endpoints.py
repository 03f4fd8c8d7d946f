"""What may pass the stack's interface VPC endpoints: this account's principals only, and through
the `kms` endpoint only the project key.

Without a policy AWS attaches its default, which lets any principal do anything through the
endpoint; with `network.egress: endpointsOnly` the endpoints are the nodes' only way out, so a
compromised node could move data out through them with another account's credentials (AWS
PrivateLink guide, "Control access to VPC endpoints using endpoint policies": the default policy,
and that an endpoint policy limits who may use the endpoint but grants nothing; read 2026-11-28).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from gpucloud.documents.services import Document

SUPPORT_PATH = Path(__file__).resolve().parents[1] / "data" / "vpc_endpoint_policies.json"


@cache
def services_without_policy() -> frozenset[str]:
    """Interface endpoint services that take no endpoint policy (AWS refuses one), from
    `data/vpc_endpoint_policies.json`, which names its sources."""
    return frozenset(json.loads(SUPPORT_PATH.read_text(encoding="utf-8"))["withoutPolicy"])


def interface_endpoint_policy(service: str, account_id: str, key_arn: str | None = None) -> Document | None:
    """The policy of the interface endpoint of `service` (`ssm`, `logs`, `ecr.api`, ...), or None
    where the service takes none.

    Every action, for principals of this account only (`aws:PrincipalAccount`, a key AWS sets on
    every signed request). The other services' calls from a node name no resource of the stack
    that a policy could list without breaking a call that has no resource (ec2:DescribeInstances,
    cloudwatch:PutMetricData, ecr:GetAuthorizationToken); KMS authorizes every key action on the
    key's ARN, so through `kms` only the project key (`key_arn`) is reachable."""
    if service in services_without_policy():
        return None
    return {
        "Version": "2012-10-17",
        "Statement": [{
            "Sid": "AccountPrincipalsOnly",
            "Effect": "Allow",
            "Principal": "*",
            "Action": "*",
            "Resource": key_arn if service == "kms" and key_arn else "*",
            "Condition": {"StringEquals": {"aws:PrincipalAccount": account_id}},
        }],
    }
