"""Account facts of the ACM certificates, SSM parameters and Secrets Manager secrets a stack names
but does not create, as `gpucloud account snapshot` read them; never their values."""

from __future__ import annotations

import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from gpucloud.lookups.facts import Certificate
from gpucloud.testing.external_seed import seed_certificate, seed_parameter, seed_secret
from gpucloud.testing.registry import Account


class _Facts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)


class CertificateFacts(_Facts):
    """An ACM certificate the stack names (`endpoint.certificateArn`), as DescribeCertificate read it."""

    arn: str
    status: str
    """ISSUED, PENDING_VALIDATION, EXPIRED, REVOKED, ..."""
    not_after: datetime.datetime | None = None
    domain: str = ""
    region: str

    def certificate(self) -> Certificate:
        return Certificate(self.arn, exists=True, status=self.status, not_after=self.not_after,
                           domain=self.domain, region=self.region)


class ParameterFacts(_Facts):
    """An SSM parameter `secretEnv` names, as DescribeParameters read it (never its value)."""

    name: str
    type: Literal["String", "StringList", "SecureString"] = "SecureString"
    key_id: str = ""
    """The KMS key a SecureString is encrypted with (`alias/aws/ssm` for SSM's own)."""


class SecretFacts(_Facts):
    """A Secrets Manager secret `secretEnv` names, as DescribeSecret read it (never its value)."""

    name: str
    arn: str
    kms_key_id: str = ""
    """Its KMS key; empty: Secrets Manager's own (aws/secretsmanager)."""


class NamedFacts(_Facts):
    """The account facts' lists of certificates, parameters and secrets (`AccountFacts` takes them)."""

    certificates: list[CertificateFacts] | None = None
    """The ACM certificates the stack names that exist; absent: not known."""
    parameters: list[ParameterFacts] | None = None
    """The SSM parameters `secretEnv` names that exist; absent: not known."""
    secrets: list[SecretFacts] | None = None
    """The Secrets Manager secrets `secretEnv` names that exist; absent: not known."""


def seed_named(account: Account, certificates: list[CertificateFacts] | None,
               parameters: list[ParameterFacts] | None, secrets: list[SecretFacts] | None) -> None:
    """Those the facts list, in moto; a list the facts give makes what it leaves out missing."""
    account.certificates_known = certificates is not None
    for certificate in certificates or ():
        seed_certificate(account, certificate.arn, certificate.domain, certificate.status)
    account.parameters_known = parameters is not None
    for parameter in parameters or ():
        seed_parameter(account, parameter.name, parameter.type, parameter.key_id)
    account.secrets_known = secrets is not None
    for secret in secrets or ():
        seed_secret(account, secret.name)


def facts_certificate(arn: str, certificates: list[CertificateFacts] | None) -> Certificate:
    """The certificate as the facts recorded it: missing where they list others, not known where
    they list none."""
    if certificates is None:
        return Certificate(arn, exists=None)
    recorded = next((certificate for certificate in certificates if certificate.arn == arn), None)
    return recorded.certificate() if recorded else Certificate(arn, exists=False, region=arn.split(":")[3])
