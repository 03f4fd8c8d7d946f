"""The building blocks of the config models: the base model and the string shapes AWS accepts.

Every key keeps the camelCase spelling of the stack file (`gpu-cloud:costCenter`), while Python
code uses snake_case; each shape's error says in words what is allowed.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import zoneinfo
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, StringConstraints
from pydantic.alias_generators import to_camel


class ConfigModel(BaseModel):
    """Frozen, no unknown keys, camelCase aliases: the shape every section of a stack file has."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        str_strip_whitespace=False,
        allow_inf_nan=False,  # an alarm threshold or target of .nan / .inf is no number AWS takes
        use_attribute_docstrings=True,  # a key's docstring is its description in the JSON Schema
    )


def refuse_world_open(cidr: str) -> str:
    try:
        network = ipaddress.ip_network(cidr, strict=True)
    except ValueError as error:
        raise ValueError(f"{cidr!r} is not a CIDR block ({error})") from None
    if getattr(network.network_address, "scope_id", None):
        raise ValueError(f"{cidr!r} carries an IPv6 zone index (%...), which no security group rule takes")
    if network.prefixlen == 0:
        raise ValueError(
            f"{cidr} opens the port to the whole internet; list the office or VPN ranges instead "
            "(or use Session Manager, which needs no ingress)"
        )
    return str(network)


def _check_prefix(prefix: str) -> str:
    """An S3 key prefix that is safe to put in an IAM ARN and a shell command."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._\-=/]*", prefix):
        raise ValueError(
            f"{prefix!r} may hold only letters, digits and . _ - = /, and must start with a "
            "letter or digit (no wildcards, spaces or quotes)"
        )
    if ".." in prefix.split("/") or "//" in prefix or "." in prefix.split("/"):
        raise ValueError(f"{prefix!r} has an empty, '.' or '..' path segment")
    return prefix.rstrip("/") + "/"


def shaped(pattern: str, description: str, max_length: int = 256) -> AfterValidator:
    """A string rule whose error says in words what is allowed."""
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if len(value) > max_length or not compiled.fullmatch(value):
            shown = value if len(value) <= 60 else value[:57] + "..."
            raise ValueError(f"{shown!r} is not allowed: {description}")
        return value

    return AfterValidator(check)


Cidr = Annotated[str, AfterValidator(refuse_world_open)]
Prefix = Annotated[str, StringConstraints(min_length=1, max_length=200), AfterValidator(_check_prefix)]
ResourceName = Annotated[
    str,
    shaped(r"[a-z][a-z0-9-]*[a-z0-9]", "use 2-24 lowercase letters, digits and hyphens, starting with a letter", 24),
]
InstanceType = Annotated[str, shaped(r"[a-z][a-z0-9-]*\.[a-z0-9-]+", "expected an EC2 instance type such as g5.xlarge", 32)]
SubnetId = Annotated[str, shaped(r"subnet-[0-9a-f]{8,17}", "expected a subnet id such as subnet-0123456789abcdef0")]
AmiId = Annotated[str, shaped(r"ami-[0-9a-f]{8,17}", "expected an AMI id such as ami-0123456789abcdef0")]
MetricName = Annotated[str, shaped(r"[A-Za-z0-9_.\-/#:]+", "use letters, digits and _ . - / # :", 255)]
Namespace = Annotated[
    str, shaped(r"[A-Za-z0-9_.\-/#][A-Za-z0-9_.\-/#:]*", "use letters, digits and _ . - / # :, not starting with ':'", 255)
]
"""CloudWatch refuses a namespace that starts with ':'."""
DimensionName = Annotated[
    str,
    shaped(
        r" *[A-Za-z0-9_.\-/#=+@][A-Za-z0-9_.\-/#:=+@ ]*",
        "use letters, digits, spaces and _ . - / # : = + @, not starting with ':' and not only spaces",
        255,
    ),
]
"""CloudWatch refuses a dimension name that starts with ':' or holds only whitespace."""
Statistic = Annotated[
    str, shaped(r"Average|Sum|Maximum|Minimum|SampleCount", "one of Average, Sum, Maximum, Minimum, SampleCount")
]
TagValue = Annotated[str, shaped(r"[A-Za-z0-9_.:/=+\-@ ]+", "use letters, digits, spaces and _ . : / = + - @")]
DimensionValue = Annotated[
    str, shaped(r" *[A-Za-z0-9_.:/=+\-@][A-Za-z0-9_.:/=+\-@ ]*", "use letters, digits, spaces and _ . : / = + - @, not only spaces")
]
"""CloudWatch refuses a dimension value of only whitespace."""
Email = Annotated[
    str,
    shaped(
        r"[A-Za-z0-9._+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}",
        "expected an e-mail address (alerts go there) of letters, digits and . _ + - @, "
        "the characters an AWS tag value allows (it is also the Owner tag)",
    ),
]


def _check_bucket_rules(bucket: str) -> str:
    """S3's naming rules beyond the characters: the policy would otherwise grant a bucket that cannot exist."""
    if ".." in bucket or re.fullmatch(r"\d+\.\d+\.\d+\.\d+", bucket):
        raise ValueError(f"{bucket!r} is not an S3 bucket name: no two adjacent periods, not an IP address")
    if bucket.startswith(("xn--", "sthree-")) or bucket.endswith(("-s3alias", "--ol-s3")):
        raise ValueError(f"{bucket!r} is not an S3 bucket name: it uses a prefix or suffix S3 reserves")
    return bucket


BucketName = Annotated[
    str,
    shaped(r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]", "expected an S3 bucket name (3-63 lowercase letters, digits, . and -)"),
    AfterValidator(_check_bucket_rules),
]
CRON_FIELD = r"[0-9A-Za-z*/,\-?#L]+"
MACHINE_DEPENDENT_ZONES = frozenset({"localtime", "posixrules", "Factory"})
"""Files in the tz database that are no zone: `localtime` is whatever the machine is set to."""


@functools.cache
def iana_time_zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones()) - MACHINE_DEPENDENT_ZONES


def unique_names(items: list, what: str) -> list:
    """Names become resource names, so two items of a list may not share one."""
    names = [item.name for item in items]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"{what} names must be unique: {', '.join(duplicates)}")
    return items
