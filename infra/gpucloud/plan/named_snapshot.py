"""`account snapshot`'s facts of what a stack names by ARN or name but does not create: the
endpoints' ACM certificates (acm:DescribeCertificate) and the parameters and secrets `secretEnv`
names (ssm:DescribeParameters, secretsmanager:DescribeSecret). Values are never read."""

from __future__ import annotations

from typing import Any

import boto3
from botocore.exceptions import ClientError

from gpucloud.config import StackSettings
from gpucloud.lookups.certificates import named_certificates
from gpucloud.lookups.secrets import named_secret_references


def read_named(settings: StackSettings, session: boto3.Session) -> dict[str, list[dict[str, Any]]]:
    """The `certificates`, `parameters` and `secrets` facts: those that exist, each once."""
    references = {reference for _key, reference in named_secret_references(settings)}
    return {
        "certificates": _certificates(session, sorted({arn for _key, arn in named_certificates(settings)})),
        "parameters": _parameters(session.client("ssm", region_name=settings.region),
                                  sorted(r.removeprefix("ssm:") for r in references if r.startswith("ssm:"))),
        "secrets": _secrets(session.client("secretsmanager", region_name=settings.region),
                            sorted(r.removeprefix("secretsmanager:") for r in references if r.startswith("secretsmanager:"))),
    }


def _certificates(session: boto3.Session, arns: list[str]) -> list[dict[str, Any]]:
    """Each certificate in its own region: status, expiry and domain (ResourceNotFoundException
    leaves it out, so the plan reports it missing)."""
    found = []
    for arn in arns:
        region = arn.split(":")[3]
        try:
            detail = session.client("acm", region_name=region).describe_certificate(CertificateArn=arn)["Certificate"]
        except ClientError as error:
            if error.response["Error"]["Code"] == "ResourceNotFoundException":
                continue
            raise
        found.append({"arn": arn, "status": detail["Status"], "domain": detail.get("DomainName", ""), "region": region,
                      **({"notAfter": detail["NotAfter"].isoformat()} if detail.get("NotAfter") else {})})
    return found


def _parameters(ssm, names: list[str]) -> list[dict[str, str]]:
    """Each parameter's type and KMS key (DescribeParameters by name: the value is not read)."""
    found = []
    for name in names:
        listed = ssm.describe_parameters(ParameterFilters=[{"Key": "Name", "Option": "Equals", "Values": [name]}])
        for parameter in listed["Parameters"]:
            found.append({"name": name, "type": parameter["Type"], "keyId": parameter.get("KeyId", "")})
    return found


def _secrets(secretsmanager, secret_ids: list[str]) -> list[dict[str, str]]:
    """Each secret's name, ARN and KMS key (DescribeSecret: the value is not read)."""
    found = []
    for secret_id in secret_ids:
        try:
            secret = secretsmanager.describe_secret(SecretId=secret_id)
        except ClientError as error:
            if error.response["Error"]["Code"] == "ResourceNotFoundException":
                continue
            raise
        found.append({"name": secret["Name"], "arn": secret["ARN"], "kmsKeyId": secret.get("KmsKeyId", "")})
    return found
