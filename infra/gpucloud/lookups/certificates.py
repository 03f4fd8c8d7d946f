"""The ACM certificates a stack names but does not create (`groups[].endpoint.certificateArn`).

A certificate that does not exist, is not issued, has expired or is in another region than the load
balancer planned clean before, and the HTTPS listener failed at `pulumi up`. ACM certificates are
regional: Elastic Load Balancing uses one of its own region only (ACM user guide, "Supported
Regions", read 2026-11-28). The program describes each (`PulumiAwsLookups.certificate`), account
facts record them for the offline plan, and without facts they are one not-checked line.
"""

from __future__ import annotations

import datetime

from gpucloud.config import StackSettings
from gpucloud.lookups.facts import AwsLookups, Certificate
from gpucloud.lookups.problems import Problems

EXPIRY_WARNING = datetime.timedelta(days=30)
"""A certificate that expires sooner than this is a warning: ACM renews only the certificates it
issued and that are in use; an imported one must be imported again (ACM user guide, "Managed
certificate renewal in AWS Certificate Manager", read 2026-11-28)."""


def named_certificates(settings: StackSettings) -> list[tuple[str, str]]:
    """Each certificate ARN the stack names, with the key that names it."""
    return [(f"groups[{index}].endpoint.certificateArn", group.endpoint.certificate_arn)
            for index, group in enumerate(settings.config.groups)
            if group.endpoint is not None and group.endpoint.certificate_arn]


def check_certificates(settings: StackSettings, lookups: AwsLookups, problems: Problems,
                       now: datetime.datetime | None = None) -> None:
    """Another region, missing, not ISSUED or expired: a problem naming the key; expiring within
    EXPIRY_WARNING: a warning; not known: one not-checked line."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    unknown = []
    for key, arn in named_certificates(settings):
        region = arn.split(":")[3]
        if region != settings.region:
            problems.add(key, f"certificate {arn} is in {region}, the stack's load balancer in {settings.region}: ACM "
                         f"certificates are regional; request or import one in {settings.region}")
            continue
        found = lookups.certificate(arn)
        if found.exists is None:
            unknown.append(arn + (f" ({found.why_not_known})" if found.why_not_known else ""))
            continue
        problem = certificate_problem(found, now)
        if problem:
            problems.add(key, problem)
        elif found.not_after and found.not_after - now < EXPIRY_WARNING:
            problems.warn(key, f"certificate {arn} ({found.domain}) expires on {found.not_after:%Y-%m-%d}: renew or "
                          "import it again before then, or the HTTPS listener serves an expired certificate")
    if unknown:
        problems.warn("groups", f"certificates not checked ({', '.join(unknown)}): whether each exists, is issued and "
                      "unexpired is not known here (offline, give the plan account facts from `gpucloud account snapshot`)")


def certificate_problem(found: Certificate, now: datetime.datetime) -> str | None:
    """Why the HTTPS listener could not serve the certificate, or None."""
    if not found.exists:
        return (f"certificate {found.arn} does not exist (ACM DescribeCertificate: ResourceNotFoundException): request "
                "or import it in ACM, or name one that exists")
    if found.status != "ISSUED":
        return (f"certificate {found.arn} ({found.domain}) is {found.status}, not ISSUED: a listener serves only an "
                "issued certificate (finish its validation, or name an issued one)")
    if found.not_after and found.not_after <= now:
        return f"certificate {found.arn} ({found.domain}) expired on {found.not_after:%Y-%m-%d}: renew or replace it"
    return None
