"""The building blocks of the config models: the base model and the string shapes AWS accepts.

Every key keeps the camelCase spelling of the stack file (`gpu-cloud:costCenter`), while Python
code uses snake_case; each shape's error says in words what is allowed.
"""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import re
import zoneinfo
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, GetJsonSchemaHandler, StringConstraints
from pydantic.alias_generators import to_camel
from pydantic_core import CoreSchema


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


def json_pattern(pattern: str) -> str:
    """A Python `fullmatch` pattern as JSON Schema's `pattern` (ECMA-262, matched anywhere in the
    value): anchored, and its named groups unnamed (`(?P<name>` is Python's spelling only)."""
    if re.search(r"\(\?[aiLmsux]", pattern):
        raise ValueError(f"{pattern!r} sets a flag that JSON Schema's regular expressions lack")
    return "^(?:" + re.sub(r"\(\?P<[A-Za-z_][A-Za-z0-9_]*>", "(?:", pattern) + ")$"


class JsonShape:
    """What a value's check says in the stack file's JSON Schema (`pattern`, `enum`, `uniqueItems`),
    so that an editor refuses what the CLI refuses; the check itself stays the validator's."""

    def __init__(self, **keywords: Any) -> None:
        self.keywords = keywords

    def __repr__(self) -> str:
        return f"JsonShape({', '.join(sorted(self.keywords))})"

    def __get_pydantic_json_schema__(self, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> dict[str, Any]:
        schema = handler(core_schema)
        for keyword, value in self.keywords.items():
            given = schema.get(keyword)
            schema[keyword] = {**given, **value} if isinstance(given, dict) and isinstance(value, dict) else value
        return schema


@dataclasses.dataclass(frozen=True)
class ShapedValidator(AfterValidator):
    """`shaped`'s check, which also writes its pattern, length and words into the JSON Schema (the YAML
    language server shows `patternErrorMessage` instead of the pattern)."""

    pattern: str = ""
    max_length: int = 256
    description: str = ""

    def __get_pydantic_json_schema__(self, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> dict[str, Any]:
        return {**handler(core_schema), "pattern": json_pattern(self.pattern), "maxLength": self.max_length,
                "patternErrorMessage": self.description}


IPV4_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
IPV4_CIDR = rf"{IPV4_OCTET}(?:\.{IPV4_OCTET}){{3}}(?:/0*(?:3[0-2]|[12][0-9]|[1-9]))?"
"""An IPv4 block of /1 to /32, or an address (a /32 to `ip_network`); /0 is refused."""
IPV6_CIDR = r"[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*(?:/0*(?:12[0-8]|1[01][0-9]|[1-9][0-9]|[1-9]))?"
"""The shape of an IPv6 block of /1 to /128, or an address (its hextets are checked by `ip_network` only)."""


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


def shaped(pattern: str, description: str, max_length: int = 256) -> ShapedValidator:
    """A string rule whose error says in words what is allowed (the JSON Schema gets the pattern)."""
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if len(value) > max_length or not compiled.fullmatch(value):
            shown = value if len(value) <= 60 else value[:57] + "..."
            raise ValueError(f"{shown!r} is not allowed: {description}")
        return value

    return ShapedValidator(check, pattern=pattern, max_length=max_length, description=description)


CIDR_PATTERN = rf"{IPV4_CIDR}|{IPV6_CIDR}"
"""What `refuse_world_open` takes, as far as a pattern can say: host bits set (10.1.2.3/8) pass it."""
Cidr = Annotated[str, AfterValidator(refuse_world_open), JsonShape(
    pattern=json_pattern(CIDR_PATTERN), patternErrorMessage="expected a CIDR block such as 10.0.0.0/8 (not /0)")]

PRIVATE_RANGES = tuple(ipaddress.ip_network(block) for block in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"))
"""The private IPv4 blocks of RFC 1918 ("Address Allocation for Private Internets", section 3) and
IPv6's unique local block of RFC 4193 (section 3.1), read 2026-11-28."""


def refuse_public(cidr: str) -> str:
    """A range that may reach the nodes' own ports: they have no public address and sit in private
    subnets, so only a network routed into the VPC (VPN, Direct Connect, transit gateway) reaches
    them, and from its private addresses; a public range there is a mistake for the office's or
    the load balancer's (docs/guides/network.md, "Reaching the nodes")."""
    network = ipaddress.ip_network(cidr)
    if not any(network.version == block.version and network.subnet_of(block) for block in PRIVATE_RANGES):
        raise ValueError(
            f"{cidr} is not in a private range (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7): the nodes have "
            "no public address, so only a network routed into the VPC reaches them, from its private ranges; "
            "list those, or use Session Manager (gpucloud connect), which needs no ingress"
        )
    return cidr


PRIVATE_CIDR_PATTERN = rf"(?=10\.|172\.(?:1[6-9]|2[0-9]|3[01])\.|192\.168\.|[Ff][CcDd][0-9A-Fa-f]{{2}}:)(?:{CIDR_PATTERN})"
"""`refuse_public` as far as a pattern can say: a range that starts in a private block (10.0.0.0/7
starts there and is wider: the check refuses it)."""
PrivateCidr = Annotated[str, AfterValidator(refuse_world_open), AfterValidator(refuse_public), JsonShape(
    pattern=json_pattern(PRIVATE_CIDR_PATTERN),
    patternErrorMessage="expected a private CIDR block (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7) such as 10.20.0.0/16")]
PREFIX_PATTERN = r"(?!(?:.*/)?\.\.?(?:/|$))(?!.*//)[A-Za-z0-9][A-Za-z0-9._\-=/]*"
"""`_check_prefix` as one pattern: its characters, and no empty, '.' or '..' segment."""
Prefix = Annotated[
    str,
    StringConstraints(min_length=1, max_length=200),
    AfterValidator(_check_prefix),
    JsonShape(pattern=json_pattern(PREFIX_PATTERN), patternErrorMessage=(
        "use letters, digits and . _ - = /, starting with a letter or digit, with no empty, '.' or '..' segment")),
]
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


BUCKET_PATTERN = r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]"
BUCKET_RULES_PATTERN = (r"(?!.*\.\.)(?![0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$)(?!xn--|sthree-)(?!.*(?:-s3alias|--ol-s3)$)"
                        + BUCKET_PATTERN)
"""`_check_bucket_rules` and the characters as one pattern, for the JSON Schema."""
BucketName = Annotated[
    str,
    shaped(BUCKET_PATTERN, "expected an S3 bucket name (3-63 lowercase letters, digits, . and -)"),
    AfterValidator(_check_bucket_rules),
    JsonShape(pattern=json_pattern(BUCKET_RULES_PATTERN), patternErrorMessage=(
        "expected an S3 bucket name: 3-63 lowercase letters, digits, . and -; no '..', no IP address, "
        "no xn--/sthree- start or -s3alias/--ol-s3 end")),
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
