"""Generators of stack configs (valid, hostile, mutated) and the checks of what AWS accepts,
shared by the property tests of the config models and of the offline plan."""

from __future__ import annotations

import copy
import functools
import ipaddress
import json
import math
import re
import unicodedata
import zoneinfo
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, Phase, assume, settings
from hypothesis import strategies as st

from gpucloud.config import StackConfig
from gpucloud.config.regions import known_regions
from gpucloud.config.scaling import CRON_FIELDS, cron_field_problem
from gpucloud.documents import instance_role_policy, prometheus_remote_write_policy
from gpucloud.naming import autoscaling_group_name


MODEL_SETTINGS = settings(
    max_examples=300,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
"""Parsing is cheap: many examples, the same ones on every run (CI is reproducible)."""

ENGINE_SETTINGS = settings(
    max_examples=5,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
"""Each example is a whole offline plan (one to three seconds), so only a handful per group
shape (the test runs once per shape of its first group), and no
shrinking: shrinking a plan takes minutes, and a failure notes its whole config anyway."""

GPU_TYPES = ["g4dn.xlarge", "g5.xlarge", "g5.2xlarge", "g6.xlarge", "g6e.xlarge", "p4d.24xlarge", "p5.48xlarge"]
EFA_GPU_TYPES = ["p4d.24xlarge", "p5.48xlarge"]
STATISTICS = ["Average", "Sum", "Maximum", "Minimum", "SampleCount"]
TIME_ZONES = ["UTC", "Europe/Berlin", "Europe/London", "America/New_York", "Asia/Tokyo", "Etc/GMT+9", "Pacific/Tahiti"]

IAM_ROLE_POLICY_LIMIT = 10240
"""AWS: the inline policies of one role together, whitespace not counted."""

# ---------------------------------------------------------------------------------------------
# What AWS accepts, written from its documentation independently of gpucloud.config.


def aws_tag_value_problem(value: str) -> str | None:
    """IAM, EC2, KMS, SNS tags: up to 256 Unicode letters, digits, spaces and _ . : / = + - @."""
    if len(value) > 256:
        return "longer than 256"
    for character in value:
        if unicodedata.category(character)[0] not in "LZN" and character not in "_.:/=+-@":
            return f"{character!r} is not allowed in a tag value"
    return None


def cloudwatch_name_problem(value: str, *, namespace: bool = False, limit: int = 255) -> str | None:
    """Metric names, namespaces, dimension names and values: printable ASCII with something
    besides whitespace; a namespace or dimension name cannot start with ':'."""
    if not 1 <= len(value) <= limit:
        return f"length {len(value)} outside 1..{limit}"
    if not all(" " <= character <= "~" for character in value):
        return "not printable ASCII"
    if not value.strip():
        return "only whitespace"
    if namespace and value.startswith(":"):
        return "starts with ':'"
    return None


def s3_bucket_problem(bucket: str) -> str | None:
    """S3 general purpose bucket naming rules."""
    if not re.fullmatch(r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]", bucket):
        return "not 3-63 lowercase letters, digits, '.' and '-'"
    if ".." in bucket:
        return "two adjacent periods"
    if re.fullmatch(r"\d+\.\d+\.\d+\.\d+", bucket):
        return "formatted as an IP address"
    if bucket.startswith(("xn--", "sthree-")) or bucket.endswith(("-s3alias", "--ol-s3")):
        return "reserved prefix or suffix"
    return None


def s3_prefix_problem(prefix: str) -> str | None:
    """A key prefix that means itself in an IAM ARN, an s3:prefix condition and a shell word."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._\-=/]*/", prefix):
        return "characters outside letters, digits and . _ - = / (or no trailing '/')"
    segments = prefix.rstrip("/").split("/")
    if any(segment in ("", ".", "..") for segment in segments):
        return "empty, '.' or '..' segment"
    return None


def cidr_problem(cidr: str) -> str | None:
    """EC2 security group rules take a plain network in canonical form, never the whole internet."""
    try:
        network = ipaddress.ip_network(cidr, strict=True)
    except ValueError as error:
        return str(error)
    if "%" in cidr:
        return "IPv6 zone index"
    if network.prefixlen == 0:
        return "world-open"
    if str(network) != cidr:
        return "not canonical"
    return None


MACHINE_DEPENDENT_ZONES = {"localtime", "Factory", "posixrules"}


@functools.cache
def _zone_names() -> frozenset[str]:
    """The tz database's names, read once: `available_timezones` walks the whole tree each call."""
    return frozenset(zoneinfo.available_timezones())


def time_zone_problem(time_zone: str) -> str | None:
    """Auto Scaling takes IANA zone names; 'localtime' means whatever machine reads it."""
    if time_zone in MACHINE_DEPENDENT_ZONES or time_zone not in _zone_names():
        return "not an IANA zone name"
    return None


def role_policy_size(config: StackConfig) -> int:
    """The node role's inline policies in the longest partition, counted as IAM counts them: the
    access policy (naming each group) and, with Prometheus, the remote write policy."""
    data = config.data
    documents = [instance_role_policy(
        partition="aws-us-gov",
        region="us-gov-west-1",
        account_id="123456789012",
        project=config.project,
        key_arn="arn:aws-us-gov:kms:us-gov-west-1:123456789012:key/" + "0" * 36,
        bucket=data.bucket if data else None,
        read_prefixes=data.read_prefixes if data else (),
        write_prefixes=data.write_prefixes if data else (),
        session_manager=config.access.ssm,
        group_names=[autoscaling_group_name(config.project, group.name) for group in config.groups],
    )]
    if config.monitoring.prometheus.enabled:
        documents.append(prometheus_remote_write_policy(
            "arn:aws-us-gov:aps:us-gov-west-1:123456789012:workspace/ws-" + "0" * 36))
    return sum(len(re.sub(r"\s", "", json.dumps(document))) for document in documents)


def unsafe_values(config: StackConfig) -> list[str]:
    """Every value of a validated config that AWS would refuse or read differently."""
    problems: list[str] = []

    def check(where: str, problem: str | None) -> None:
        if problem:
            problems.append(f"{where}: {problem}")

    def name(value: str) -> str | None:
        return None if re.fullmatch(r"[a-z][a-z0-9-]{0,22}[a-z0-9]", value) else "not a 2-24 character resource name"

    check("project", name(config.project))
    for key, value in config.tags.items():
        check(f"tags.{key}", aws_tag_value_problem(value))
    if config.data:
        check("data.bucket", s3_bucket_problem(config.data.bucket))
        for prefix in (*config.data.read_prefixes, *config.data.write_prefixes):
            check(f"data prefix {prefix!r}", s3_prefix_problem(prefix))
    size = role_policy_size(config)
    check("node role policy", f"{size} characters, above IAM's {IAM_ROLE_POLICY_LIMIT}" if size > IAM_ROLE_POLICY_LIMIT else None)
    access = config.access
    for cidr in (*access.ssh_cidrs, *access.jupyter_cidrs, *access.tensorboard_cidrs):
        check(f"cidr {cidr!r}", cidr_problem(cidr))
    for subnet in config.network.subnet_ids or ():
        check(f"subnet {subnet!r}", None if re.fullmatch(r"subnet-[0-9a-f]{8,17}", subnet) else "not a subnet id")
    for number in (config.budget.monthly_usd, config.monitoring.memory_saturation_percent, config.monitoring.idle_utilization_percent):
        check("number", None if math.isfinite(number) else f"{number} is not finite")
    for group in config.groups:
        check(f"group {group.name!r}", name(group.name))
        for instance_type in group.instance_types:
            check(f"instance type {instance_type!r}", None if re.fullmatch(r"[a-z][a-z0-9-]*\.[a-z0-9-]+", instance_type) else "not an instance type")
        checkpoint = group.checkpoint
        check("checkpoint.directory", None if re.fullmatch(r"/[A-Za-z0-9._\-/]{0,127}", checkpoint.directory) else "not an absolute path of safe characters")
        for argument in checkpoint.command or ():
            check(f"checkpoint argument {argument!r}", None if argument and argument.isprintable() else "empty or not printable")
        if group.ami_id:
            check("amiId", None if re.fullmatch(r"ami-[0-9a-f]{8,17}", group.ami_id) else "not an AMI id")
        scaling = group.scaling
        metrics = [scaling.target_tracking] if scaling.target_tracking else []
        metrics += scaling.step_scaling
        for metric in metrics:
            check(f"metric {metric.metric_name!r}", cloudwatch_name_problem(metric.metric_name))
            check(f"namespace {metric.namespace!r}", cloudwatch_name_problem(metric.namespace, namespace=True))
            for dimension, value in metric.dimensions.items():
                check(f"dimension {dimension!r}", cloudwatch_name_problem(dimension, namespace=True))
                check(f"dimension value {value!r}", cloudwatch_name_problem(value, limit=1024))
        if scaling.target_tracking:
            check("targetValue", None if math.isfinite(scaling.target_tracking.target_value) else "not finite")
        for step in scaling.step_scaling:
            check("threshold", None if math.isfinite(step.threshold) else f"{step.threshold} is not finite")
        for schedule in scaling.schedules:
            check(f"schedule {schedule.name!r}", name(schedule.name))
            recurrence = schedule.recurrence
            check(f"recurrence {recurrence!r}", None if len(recurrence) <= 255 and len(recurrence.split(" ")) == 5 else "not a cron of at most 255 characters")
            for field, (what, low, high, names) in zip(recurrence.split(" "), CRON_FIELDS):
                check(f"recurrence {recurrence!r}", cron_field_problem(field, what, low, high, names))
            check(f"timeZone {schedule.time_zone!r}", time_zone_problem(schedule.time_zone))
    return problems


# ---------------------------------------------------------------------------------------------
# Valid configs: every value valid for gpucloud.config and for AWS.

LOWER, UPPER, DIGITS, HEX = "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789", "0123456789abcdef"
ALNUM = LOWER + UPPER + DIGITS
TAG_CHARACTERS = ALNUM + "_.:/=+-@"


def shaped(*parts: tuple[str, int, int] | st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Strings made of `parts` in order, each an (alphabet, fewest, most) run or a strategy: what
    `st.from_regex` draws for a simple pattern, at about half the cost (generation dominates the
    model properties)."""
    return st.tuples(
        *(part if isinstance(part, st.SearchStrategy) else st.text(part[0], min_size=part[1], max_size=part[2]) for part in parts)
    ).map("".join)


resource_names = shaped((LOWER, 1, 1), (LOWER + DIGITS + "-", 0, 22), (LOWER + DIGITS, 1, 1))
emails = shaped((ALNUM, 1, 1), (ALNUM + "._+-", 0, 15), ("@", 1, 1), (LOWER + DIGITS, 1, 1), (LOWER + DIGITS + "-", 0, 10), st.sampled_from([".com", ".org", ".io", ".de"]))
tag_values = shaped((TAG_CHARACTERS, 1, 1), (TAG_CHARACTERS + " ", 0, 40))
buckets = shaped(
    (LOWER, 1, 1), (LOWER + DIGITS + "-", 1, 20), (LOWER + DIGITS, 1, 1), st.one_of(st.just(""), shaped((".", 1, 1), (LOWER + DIGITS, 1, 8)))
).filter(lambda b: s3_bucket_problem(b) is None)
prefix_segments = shaped((ALNUM, 1, 1), (ALNUM + "._=-", 0, 15))
prefixes = st.builds(
    lambda segments, slash: "/".join(segments) + ("/" if slash else ""),
    st.lists(prefix_segments, min_size=1, max_size=3),
    st.booleans(),
)
checkpoint_arguments = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), min_size=1, max_size=40).filter(str.isprintable)
"""Any printable text: a checkpoint command's arguments reach the node as JSON data, never through a shell."""
checkpoint_directories = st.from_regex(r"/[A-Za-z0-9._\-]{1,20}(/[A-Za-z0-9._\-]{1,20}){0,2}", fullmatch=True)
metric_names = shaped((LOWER + UPPER, 1, 1), (ALNUM + "_.-/#:", 0, 30))
subnet_ids = st.one_of(shaped((HEX, 8, 8)), shaped((HEX, 17, 17))).map("subnet-".__add__)
ami_ids = shaped((HEX, 17, 17)).map("ami-".__add__)
model_instance_types = st.one_of(st.sampled_from(GPU_TYPES), shaped((LOWER, 1, 1), (LOWER + DIGITS, 1, 5), (".", 1, 1), (LOWER + DIGITS, 1, 10)))
recurrences = st.builds(
    " ".join,
    st.tuples(
        st.sampled_from(["0", "30", "*/15", "5,35"]),
        st.sampled_from(["*", "8", "20", "0-6"]),
        st.sampled_from(["*", "1", "15"]),
        st.sampled_from(["*", "1-6", "12"]),
        st.sampled_from(["*", "1-5", "0,6", "MON-FRI"]),
    ),
)


@st.composite
def cidrs(draw) -> str:
    if draw(st.booleans()):
        address, length = draw(st.ip_addresses(v=4)), draw(st.integers(1, 32))
    else:
        address, length = draw(st.ip_addresses(v=6)), draw(st.integers(1, 128))
    return str(ipaddress.ip_network(f"{address}/{length}", strict=False))


@st.composite
def private_cidrs(draw) -> str:
    """A range in a private block (RFC 1918, IPv6 unique local): what access.*Cidrs take."""
    block = ipaddress.ip_network(draw(st.sampled_from(["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"])))
    length = draw(st.integers(block.prefixlen, block.max_prefixlen))
    address = block.network_address + draw(st.integers(0, block.num_addresses - 1))
    return str(ipaddress.ip_network(f"{address}/{length}", strict=False))


def pick(draw, options: list[Any]) -> Any:
    """One of `options`, near uniformly: `sampled_from` favours the first few so strongly that
    kinds of fields late in a list would hardly ever be mutated. Shrinks towards the first."""
    return options[draw(st.integers(0, 2**16 - 1)) % len(options)]


def likely(draw) -> bool:
    """True three times in four: optional parts show up often enough to be mutated."""
    return draw(st.integers(0, 3)) > 0


def optional_keys(draw, values: dict[str, Any]) -> dict[str, Any]:
    """Drop a random subset of the keys (all of them optional) to exercise defaults."""
    return {key: value for key, value in values.items() if draw(st.booleans())}


@st.composite
def dimensions(draw) -> dict[str, str]:
    return draw(st.dictionaries(metric_names, tag_values, min_size=1 if likely(draw) else 0, max_size=3))


@st.composite
def target_tracking(draw) -> dict[str, Any]:
    values = {"metricName": draw(metric_names), "namespace": draw(metric_names), "targetValue": draw(st.floats(0.5, 1e6))}
    values |= optional_keys(
        draw,
        {"statistic": draw(st.sampled_from(STATISTICS)), "dimensions": draw(dimensions()), "disableScaleIn": draw(st.booleans())},
    )
    return values


@st.composite
def step_scaling(draw) -> dict[str, Any]:
    values = {
        "metricName": draw(metric_names),
        "namespace": draw(metric_names),
        "threshold": draw(st.floats(-1e6, 1e6)),
        "scaleOutBy": draw(st.integers(1, 100)),
    }
    period = draw(st.sampled_from([10, 20, 30]) | st.integers(1, 1440).map(lambda minutes: minutes * 60))
    window = 86_400 if period < 3600 else 604_800
    values |= optional_keys(
        draw,
        {
            "statistic": draw(st.sampled_from(STATISTICS)),
            "dimensions": draw(dimensions()),
            "periodSeconds": period,
            "evaluationPeriods": draw(st.integers(1, max(1, min(100, window // period)))),
            "cooldownSeconds": draw(st.integers(0, 86400)),
        },
    )
    return values


@st.composite
def schedule(draw, name: str, group_max: int) -> dict[str, Any]:
    most = draw(st.integers(0, group_max))
    least = draw(st.integers(0, most))
    sizes = {"maxSize": most, "minSize": least, "desiredCapacity": draw(st.integers(least, most))}
    kept = draw(st.lists(st.sampled_from(sorted(sizes)), min_size=1, max_size=3, unique=True))
    values = {"name": name, "recurrence": draw(recurrences), **{key: sizes[key] for key in kept}}
    if likely(draw):
        values["timeZone"] = draw(st.sampled_from(TIME_ZONES))
    return values


GROUP_SHAPES = ["plain", "multi-node", "persistent volume"]


@st.composite
def group(draw, name: str, types: st.SearchStrategy[str], shape: str | None = None) -> dict[str, Any]:
    shape = shape or pick(draw, GROUP_SHAPES)
    multi_node, persistent = shape == "multi-node", shape == "persistent volume"
    if multi_node:  # EFA, so only the types that have it
        instance_types = draw(st.lists(st.sampled_from(EFA_GPU_TYPES), min_size=1, max_size=2, unique=True))
    else:
        instance_types = draw(st.lists(types, min_size=1, max_size=3, unique=True))
    max_size = 1 if persistent else draw(st.integers(1, 8))
    min_size = draw(st.integers(0, max_size))
    values: dict[str, Any] = {"name": name, "instanceTypes": instance_types, "maxSize": max_size}
    scaling: dict[str, Any] = {}
    if likely(draw):
        scaling["targetTracking"] = draw(target_tracking())
    if likely(draw):
        scaling["stepScaling"] = draw(st.lists(step_scaling(), min_size=1, max_size=2))
    names = draw(st.lists(resource_names, min_size=1 if likely(draw) else 0, max_size=3, unique=True))
    if names:
        scaling["schedules"] = [draw(schedule(schedule_name, max_size)) for schedule_name in names]
    if likely(draw):
        scaling["gpuIdleScaleIn"] = {"utilizationPercent": draw(st.floats(1, 100)), "minutes": draw(st.integers(5, 1440))}
    values |= optional_keys(
        draw,
        {
            "minSize": min_size,
            "desiredCapacity": draw(st.integers(min_size, max_size)),
            "onDemandBaseCapacity": draw(st.integers(0, max_size)),
            "spotPercent": draw(st.integers(0, 100)),
            "rootVolumeGiB": draw(st.integers(30, 2000)),
            "dataVolumeGiB": draw(st.integers(0, 2000)),
            "healthCheckGracePeriodSeconds": draw(st.integers(0, 7200)),
        },
    )
    if scaling and likely(draw):
        values["scaling"] = scaling
    if multi_node:
        values["multiNode"] = True
    if persistent:
        values["persistentVolumeGiB"] = draw(st.integers(1, 2000))
        if values.get("spotPercent", 0) and not values.get("onDemandBaseCapacity"):
            values["onDemandBaseCapacity"] = 1  # a persistent volume's group runs on demand
    if draw(st.booleans()):
        values["checkpoint"] = optional_keys(
            draw,
            {
                "command": draw(st.lists(checkpoint_arguments, min_size=1, max_size=4)),
                "directory": draw(checkpoint_directories),
                "timeoutSeconds": draw(st.integers(10, 180)),
            },
        )
    if values.get("minSize", 0) == 0 and draw(st.booleans()):
        values["idleShutdown"] = optional_keys(draw, {"utilizationPercent": draw(st.floats(1, 100)), "minutes": draw(st.integers(10, 1440))})
    return values


@st.composite
def stack_values(
    draw, types: st.SearchStrategy[str] = model_instance_types, engine: bool = False, first_shape: str | None = None
) -> dict[str, Any]:
    """A config dict that validates, in the stack file's camelCase spelling."""
    values: dict[str, Any] = {
        "project": draw(resource_names),
        "owner": draw(emails),
        "costCenter": draw(tag_values),
        "budget": {"monthlyUsd": draw(st.floats(1, 1e6))},
    }
    names = draw(st.lists(resource_names, min_size=1, max_size=2 if engine else 3, unique=True))
    values["groups"] = [draw(group(group_name, types, first_shape if index == 0 else None)) for index, group_name in enumerate(names)]
    if pick(draw, [True, True, True, False]):
        read = draw(st.lists(prefixes, max_size=3))
        write = draw(st.lists(prefixes, min_size=0 if read else 1, max_size=2))
        values["data"] = {"bucket": draw(buckets), **({"readPrefixes": read} if read else {}), **({"writePrefixes": write} if write else {})}
    ssm = draw(st.booleans())
    unique_cidrs = st.lists(private_cidrs(), max_size=2, unique_by=lambda cidr: str(ipaddress.ip_network(cidr)))
    access = {"ssm": ssm, "jupyterCidrs": draw(unique_cidrs), "tensorboardCidrs": draw(unique_cidrs)}
    if not ssm:
        access["sshCidrs"] = draw(unique_cidrs)
    values["access"] = optional_keys(draw, access) if ssm else access
    values |= optional_keys(
        draw,
        {
            "monitoring": optional_keys(
                draw,
                {
                    "temperatureThresholdC": draw(st.integers(40, 100)),
                    "memorySaturationPercent": draw(st.floats(1, 100)),
                    "idleUtilizationPercent": draw(st.floats(1, 100)),
                    "idleMinutes": draw(st.integers(10, 1440)),
                    "dashboard": draw(st.booleans()),
                },
            ),
            "backup": {"retentionDays": draw(st.integers(1, 3650))},
        },
    )
    if engine:
        values["account"] = {"createServiceLinkedRole": True}
    elif draw(st.booleans()):
        values["account"] = {"createServiceLinkedRole": draw(st.booleans())}
    if not engine and draw(st.booleans()):
        values["network"] = {"subnetIds": draw(st.lists(subnet_ids, min_size=1, max_size=3, unique=True))}
    if not engine and draw(st.booleans()):
        for group_values in values["groups"]:
            group_values["amiId"] = draw(ami_ids)
    return values


# ---------------------------------------------------------------------------------------------
# Mutations: hostile strings, wrong types, out-of-range numbers, unknown and missing keys.

HOSTILE_STRINGS = [
    "",
    " ",
    "'",
    '"',
    "x'; rm -rf / #",
    '"; DROP TABLE x; --',
    "$(reboot)",
    "`id`",
    "${aws:username}",
    "a\nb",
    "line\r\nbreak",
    "tab\there",
    "nul\x00byte",
    "../etc/passwd",
    "..",
    ".",
    "*",
    "s3:*",
    "a//b",
    "/abs",
    "a b",
    "trail ",
    "é",
    "日本語",
    "line\u2028separator",
    "\u202eevil",
    "x" * 300,
    "A" * 257,
    "a=b",
    "a+b@c.io",
    "x%y@example.com",
    ":colon",
    "a..b",
    "null",
    "~",
    "\\",
    "{}",
    "[]",
    "#",
    "?",
    "!",
    "<script>",
    "a|b&c;d",
]

SURELY_BAD_CHARACTERS = set("'\"`$;|&<>(){}[]!~^\\\n\r\t\x00")
"""No string field of the config accepts any of these."""


def surely_invalid_text(kind: str, value: str) -> bool:
    """A checkpoint argument takes any printable text (it is data, not shell); other strings refuse
    the characters no string field of the config accepts."""
    if kind == "argument":
        return not value or len(value) > 256 or not value.isprintable()
    return surely_invalid_string(value)


def surely_invalid_string(value: str) -> bool:
    return (
        not value
        or len(value) > 256
        or any(character in SURELY_BAD_CHARACTERS or not " " <= character <= "~" for character in value)
    )


# Near-valid strings per kind: what the config's own patterns let through, to find where those
# patterns are wider than AWS. EDGES are tried in every key of their kind (exhaustively, below);
# the generators add random ones of the same shape.
EDGES: dict[str, list[str]] = {
    "name": ["a-", "-a", "a--b", "ab", "a" * 24, "a" * 25, "Ab"],
    "email": ["x%y@example.com", "a@b..com", "a+b@example.io", "a=b@example.com", "a@example.c0m"],
    "tag": [" ", "   ", "a b", "=", "@", ":", "x" * 256, "x" * 257],
    "bucket": ["a..b", "192.168.1.10", "xn--bucket", "bucket-s3alias", "bucket--ol-s3", "sthree-bucket", "a.b", "ab"],
    "prefix": ["a/../b", "a/./b", "a//b/", "date=2024-01-01/", "a" * 200, "x" * 199 + "/", "a/", "a-=_./"],
    "cidr": ["fe80::%eth0/64", "10.0.0.1/24", "0.0.0.0/0", "::/0", "0.0.0.0/1", "10.0.0.0/08", "10.0.0.0", "2001:DB8::/32", "::ffff:10.0.0.0/120"],
    "subnet": ["subnet-0123456", "subnet-0123456789ABCDEF0", "subnet-0123456789abcdef01"],
    "ami": ["ami-0123456", "ami-0123456789ABCDEF0", "ami-0123456789abcdef01"],
    "instance_type": ["g5.", ".xlarge", "g5..xlarge", "p5.48xlarge.x", "g5-.xlarge", "a" * 40 + ".x"],
    "metric": [":", ":colon", "#", "a:b", "AWS/EC2", "x" * 255, "x" * 256],
    "statistic": ["average", "Avg", "p99", "Sum ", "SampleCount"],
    "recurrence": ["0  20 * * *", "@daily", "0 20 * * * *", "0 0 * * " + ",".join(["1"] * 130), "L L L L L", "# # # # #"],
    "argument": ["", " ", "$(reboot)", "a;b", "--to=s3://b/p", "é", "line\nbreak", "x" * 256, "x" * 257],
    "path": ["relative/dir", "/", "/a b", "/a/../b", "/" + "x" * 127, "/" + "x" * 128, "/ckpt/é", "//x"],
    "time_zone": ["localtime", "Factory", "posixrules", "right/UTC", "posix/UTC", "US/Pacific", "EST5EDT", "utc", "Etc/GMT+9", "Europe/Berlin/"],
}

_SHAPES: dict[str, st.SearchStrategy[str]] = {
    "name": st.from_regex(r"[a-z][a-z0-9-]*[a-z0-9]", fullmatch=True),
    "email": st.from_regex(r"[A-Za-z0-9._%+\-]{1,10}@[A-Za-z0-9.\-]{1,10}\.[A-Za-z]{2,4}", fullmatch=True),
    "tag": st.from_regex(r"[A-Za-z0-9_.:/=+\-@ ]{1,30}", fullmatch=True),
    "bucket": st.from_regex(r"[a-z0-9][a-z0-9.\-]{1,20}[a-z0-9]", fullmatch=True),
    "prefix": st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._\-=/]{0,40}", fullmatch=True),
    "cidr": cidrs(),
    "subnet": st.from_regex(r"subnet-[0-9a-fA-F]{6,18}", fullmatch=True),
    "ami": st.from_regex(r"ami-[0-9a-fA-F]{6,18}", fullmatch=True),
    "instance_type": st.from_regex(r"[a-z][a-z0-9-]*\.[a-z0-9-]+", fullmatch=True),
    "metric": st.from_regex(r"[A-Za-z0-9_.\-/#:]{1,20}", fullmatch=True),
    "statistic": st.sampled_from(STATISTICS),
    "recurrence": st.lists(st.from_regex(r"[0-9A-Za-z*/,\-?#L]{1,70}", fullmatch=True), min_size=4, max_size=6).map(" ".join),
    "time_zone": st.sampled_from(TIME_ZONES),
    "argument": st.text(min_size=0, max_size=20),
    "path": st.from_regex(r"/?[A-Za-z0-9._\-/ ]{0,30}", fullmatch=True),
}

NEAR_VALID: dict[str, st.SearchStrategy[str]] = {kind: st.sampled_from(EDGES[kind]) | _SHAPES[kind] for kind in EDGES}


@dataclass(frozen=True)
class Field:
    kind: str
    low: float | None = None
    high: float | None = None
    low_exclusive: bool = False
    required: bool = False


def _f(kind: str, low=None, high=None, *, exclusive=False, required=False) -> Field:
    return Field(kind, low, high, exclusive, required)


FIELDS: dict[str, Field] = {
    "project": _f("name", required=True),
    "owner": _f("email", required=True),
    "costCenter": _f("tag", required=True),
    "budget": _f("object", required=True),
    "budget.monthlyUsd": _f("float", 0, 10_000_000, exclusive=True, required=True),
    "network": _f("object"),
    "network.subnetIds": _f("list"),
    "network.subnetIds.*": _f("subnet"),
    "network.zones": _f("int", 1, 6),
    "data": _f("object"),
    "data.bucket": _f("bucket", required=True),
    "data.readPrefixes": _f("list"),
    "data.readPrefixes.*": _f("prefix"),
    "data.writePrefixes": _f("list"),
    "data.writePrefixes.*": _f("prefix"),
    "access": _f("object"),
    "access.ssm": _f("bool"),
    "access.sshCidrs": _f("list"),
    "access.sshCidrs.*": _f("cidr"),
    "access.jupyterCidrs": _f("list"),
    "access.jupyterCidrs.*": _f("cidr"),
    "access.tensorboardCidrs": _f("list"),
    "access.tensorboardCidrs.*": _f("cidr"),
    "monitoring": _f("object"),
    "monitoring.temperatureThresholdC": _f("int", 40, 100),
    "monitoring.memorySaturationPercent": _f("float", 0, 100, exclusive=True),
    "monitoring.idleUtilizationPercent": _f("float", 0, 100, exclusive=True),
    "monitoring.idleMinutes": _f("int", 10, 1440),
    "monitoring.dashboard": _f("bool"),
    "backup": _f("object"),
    "backup.retentionDays": _f("int", 1, 3650),
    "account": _f("object"),
    "account.createServiceLinkedRole": _f("bool"),
    "groups": _f("list", required=True),
    "groups.*": _f("object"),
    "groups.*.name": _f("name", required=True),
    "groups.*.instanceTypes": _f("list"),  # or instanceRequirements: the group then names neither
    "groups.*.instanceTypes.*": _f("instance_type"),
    "groups.*.minSize": _f("int", 0, 1000),
    "groups.*.maxSize": _f("int", 1, 1000, required=True),
    "groups.*.desiredCapacity": _f("int", 0, 1000),
    "groups.*.onDemandBaseCapacity": _f("int", 0, 1000),
    "groups.*.spotPercent": _f("int", 0, 100),
    "groups.*.multiNode": _f("bool"),
    "groups.*.rootVolumeGiB": _f("int", 30, 16384),
    "groups.*.dataVolumeGiB": _f("int", 0, 16384),
    "groups.*.persistentVolumeGiB": _f("int", 0, 16384),
    "groups.*.amiId": _f("ami"),
    "groups.*.healthCheckGracePeriodSeconds": _f("int", 0, 7200),
    "groups.*.checkpoint": _f("object"),
    "groups.*.checkpoint.command": _f("list"),
    "groups.*.checkpoint.command.*": _f("argument"),
    "groups.*.checkpoint.directory": _f("path"),
    "groups.*.checkpoint.timeoutSeconds": _f("int", 10, 180),
    "groups.*.idleShutdown": _f("object"),
    "groups.*.idleShutdown.utilizationPercent": _f("float", 0, 100, exclusive=True),
    "groups.*.idleShutdown.minutes": _f("int", 10, 1440),
    "groups.*.scaling": _f("object"),
    "groups.*.scaling.targetTracking": _f("object"),
    "groups.*.scaling.targetTracking.metricName": _f("metric", required=True),
    "groups.*.scaling.targetTracking.namespace": _f("metric", required=True),
    "groups.*.scaling.targetTracking.targetValue": _f("float", 0, None, exclusive=True, required=True),
    "groups.*.scaling.targetTracking.statistic": _f("statistic"),
    "groups.*.scaling.targetTracking.dimensions": _f("dimensions"),
    "groups.*.scaling.targetTracking.dimensions.<name>": _f("tag"),
    "groups.*.scaling.targetTracking.disableScaleIn": _f("bool"),
    "groups.*.scaling.stepScaling": _f("list"),
    "groups.*.scaling.stepScaling.*": _f("object"),
    "groups.*.scaling.stepScaling.*.metricName": _f("metric", required=True),
    "groups.*.scaling.stepScaling.*.namespace": _f("metric", required=True),
    "groups.*.scaling.stepScaling.*.threshold": _f("float", required=True),
    "groups.*.scaling.stepScaling.*.scaleOutBy": _f("int", 1, 100, required=True),
    "groups.*.scaling.stepScaling.*.statistic": _f("statistic"),
    "groups.*.scaling.stepScaling.*.dimensions": _f("dimensions"),
    "groups.*.scaling.stepScaling.*.dimensions.<name>": _f("tag"),
    "groups.*.scaling.stepScaling.*.periodSeconds": _f("int", 10, 86400),
    "groups.*.scaling.stepScaling.*.evaluationPeriods": _f("int", 1, 100),
    "groups.*.scaling.stepScaling.*.cooldownSeconds": _f("int", 0, 86400),
    "groups.*.scaling.schedules": _f("list"),
    "groups.*.scaling.schedules.*": _f("object"),
    "groups.*.scaling.schedules.*.name": _f("name", required=True),
    "groups.*.scaling.schedules.*.recurrence": _f("recurrence", required=True),
    "groups.*.scaling.schedules.*.minSize": _f("int", 0),
    "groups.*.scaling.schedules.*.maxSize": _f("int", 0),
    "groups.*.scaling.schedules.*.desiredCapacity": _f("int", 0),
    "groups.*.scaling.schedules.*.timeZone": _f("time_zone"),
    "groups.*.scaling.gpuIdleScaleIn": _f("object"),
    "groups.*.scaling.gpuIdleScaleIn.utilizationPercent": _f("float", 0, 100, exclusive=True, required=True),
    "groups.*.scaling.gpuIdleScaleIn.minutes": _f("int", 5, 1440),
    "groups.*.scaling.gpuIdleScaleIn.scaleInBy": _f("int", 1, 100),
}

Path = tuple[Any, ...]


def pattern_of(path: Path) -> str:
    parts = []
    for index, part in enumerate(path):
        if isinstance(part, int):
            parts.append("*")
        elif index and path[index - 1] == "dimensions":
            parts.append("<name>")
        else:
            parts.append(part)
    return ".".join(parts)


def walk(values: Any, path: Path = ()) -> list[tuple[Path, Any]]:
    """Every (path, value) under the config, parents before children."""
    found = []
    items = values.items() if isinstance(values, dict) else enumerate(values) if isinstance(values, list) else ()
    for key, value in items:
        found.append(((*path, key), value))
        found += walk(value, (*path, key))
    return found


def get(values: Any, path: Path) -> Any:
    for part in path:
        values = values[part]
    return values


def related(first: Path, second: Path) -> bool:
    shorter = min(len(first), len(second))
    return first[:shorter] == second[:shorter]


WRONG_TYPES: dict[str, list[Any]] = {
    "string": [5, 1.5, [], {}, True, ["a"], {"a": "b"}],
    "int": ["abc", [], {}, 1.5, "1.5", "", None],
    "float": ["abc", [], {}, "", None],
    "bool": ["maybe", [], {}, 2, 0.5, None],
    "list": ["abc", 5, {}, None, True],
    "object": ["abc", 5, [], True],
    "dimensions": ["abc", 5, [], True],
}


@dataclass(frozen=True)
class Mutation:
    path: Path
    description: str
    surely_invalid: bool


def type_family(field: Field) -> str:
    if field.kind in ("int", "float", "bool", "list", "object", "dimensions"):
        return field.kind
    return "string"


@st.composite
def mutation(draw, values: dict[str, Any], path: Path) -> Mutation:
    """Change `values` in place at `path` (`()`: the top level); say whether the result is invalid for sure."""
    field = FIELDS[pattern_of(path)] if path else Field("object")
    parent, key = (get(values, path[:-1]), path[-1]) if path else (None, None)
    family = type_family(field)
    choices = ["wrong type"] if path else []
    if family == "string":
        choices += ["hostile string", "near-valid string", "near-valid string"]
    if family in ("int", "float"):
        choices += ["out of range", "in range"]
    if family == "object":
        choices += ["unknown key", "unknown key"]
    if family == "dimensions":
        choices += ["hostile dimension name", "near-valid dimension name"]
    if family == "list" and pattern_of(path).endswith("Prefixes"):
        choices += ["many long prefixes"]
    if path and isinstance(parent, dict):
        choices += ["delete"]
    choice = pick(draw, choices)
    if choice == "wrong type":
        wrong = draw(st.sampled_from(WRONG_TYPES[family]))
        parent[key] = copy.deepcopy(wrong)
        return Mutation(path, f"{choice}: {wrong!r}", not (wrong is None and pattern_of(path) in NULLABLE))
    if choice == "hostile string":
        text = draw(st.one_of(st.sampled_from(HOSTILE_STRINGS), st.text(max_size=30)))
        parent[key] = text
        return Mutation(path, f"{choice}: {text!r}", surely_invalid_text(field.kind, text))
    if choice == "near-valid string":
        text = draw(NEAR_VALID[field.kind])
        parent[key] = text
        return Mutation(path, f"{choice}: {text!r}", surely_invalid_text(field.kind, text))
    if choice == "out of range":
        options: list[Any] = [math.nan, math.inf, -math.inf] if family == "float" else []
        if field.low is not None:
            options.append(field.low if field.low_exclusive else field.low - 1)
        if field.high is not None:
            options.append(field.high + (0.5 if family == "float" else 1))
        if family == "int" and field.high is None:
            options.append(-10**30)
        number = draw(st.sampled_from(options))
        parent[key] = number
        return Mutation(path, f"{choice}: {number!r}", True)
    if choice == "in range":
        low = field.low if field.low is not None else -(10**6)
        high = field.high if field.high is not None else 10**6
        number = draw(st.integers(int(math.ceil(low)), int(high))) if family == "int" else draw(st.floats(low, high))
        parent[key] = number
        return Mutation(path, f"{choice}: {number!r}", False)
    if choice == "unknown key":
        unknown = draw(st.one_of(st.sampled_from(HOSTILE_STRINGS + ["maxsize", "instance_type", "Project", "x-extra"]), st.text(min_size=1, max_size=12)))
        assume(unknown not in KNOWN_KEYS)
        value = get(values, path)
        value[unknown] = draw(st.sampled_from([1, "x", None, [], {}]))
        return Mutation((*path, unknown), f"{choice}: {unknown!r}", True)
    if choice in ("hostile dimension name", "near-valid dimension name"):
        name = draw(st.sampled_from(HOSTILE_STRINGS) | st.text(max_size=20)) if choice.startswith("hostile") else draw(NEAR_VALID["metric"] | st.sampled_from([":x", " ", "a b", "x" * 256]))
        value = get(values, path)
        assume(name not in value)
        value[name] = "value"
        return Mutation((*path, name), f"{choice}: {name!r}", surely_invalid_string(name))
    if choice == "many long prefixes":
        count = draw(st.integers(5, 40))
        length = draw(st.integers(20, 199))
        get(values, path).extend(f"{index:03d}{'p' * length}"[:length] + "/" for index in range(count))
        return Mutation(path, f"{choice}: {count} x {length + 1} characters", False)
    del parent[key]
    return Mutation(path, choice, field.required)


NULLABLE = {
    "network.subnetIds",
    "groups.*.checkpoint.command",
    "data",
    "groups.*.desiredCapacity",
    "groups.*.amiId",
    "groups.*.idleShutdown",
    "groups.*.scaling.targetTracking",
    "groups.*.scaling.gpuIdleScaleIn",
    "groups.*.scaling.schedules.*.minSize",
    "groups.*.scaling.schedules.*.maxSize",
    "groups.*.scaling.schedules.*.desiredCapacity",
}
"""Fields declared `X | None`: an explicit null is their default, not a wrong type."""


def _field_names() -> set[str]:
    names: set[str] = set()
    pending = [StackConfig]
    seen = set()
    while pending:
        model = pending.pop()
        if model in seen:
            continue
        seen.add(model)
        for name, info in model.model_fields.items():
            names.add(name)
            names.add(info.alias or name)
            for candidate in getattr(info.annotation, "__args__", ()) + (info.annotation,):
                for inner in getattr(candidate, "__args__", ()) + (candidate,):
                    if isinstance(inner, type) and hasattr(inner, "model_fields"):
                        pending.append(inner)
    return names


KNOWN_KEYS = _field_names() | {pattern.rsplit(".", 1)[-1] for pattern in FIELDS}
"""Field names and aliases of every model: an "unknown" key must be none of them."""

REGIONS = st.one_of(
    st.just("us-east-1"),
    st.sampled_from(["eu-west-1", "us-gov-west-1", "us-east-9", "US-EAST-1", "us-east-1\n", "../us-east-1", "", "us east 1", "x" * 300]),
    st.sampled_from([None, 1, ["us-east-1"], {"name": "us-east-1"}]),
)


def region_is_valid(region: Any) -> bool:
    return (isinstance(region, str) and re.fullmatch(r"[a-z]{2}(-gov)?-[a-z]+-\d", region) is not None
            and region in known_regions())


@st.composite
def mutated_stacks(draw, bases: st.SearchStrategy[dict[str, Any]], most: int = 4) -> tuple[dict[str, Any], Any, list[Mutation]]:
    """A valid config with one to `most` unrelated mutations, and a region that may be bad."""
    values = draw(bases)
    region = draw(st.one_of(st.just("us-east-1"), REGIONS)) if draw(st.integers(0, 4)) == 0 else "us-east-1"
    mutations: list[Mutation] = []
    for _ in range(draw(st.integers(1, most))):
        by_kind: dict[str, list[Path]] = {}
        for path, _ in walk(values):
            if not any(related(path, done.path) for done in mutations):
                by_kind.setdefault(FIELDS[pattern_of(path)].kind, []).append(path)
        by_kind.setdefault("object", []).append(())
        # Kind first, then a path of that kind: every kind of field gets its share.
        path = pick(draw, by_kind[pick(draw, sorted(by_kind))])
        mutations.append(draw(mutation(values, path)))
    return values, region, mutations


def render_key(path: Path) -> str:
    """A key path as ConfigError names it: `gpu-cloud:groups[0].scaling`; a key that is not a
    plain identifier shows as its repr in brackets, so hostile keys cannot break the line."""
    text = "gpu-cloud:"
    for index, part in enumerate(path):
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z0-9_\-]+", part):
            text += ("." if index else "") + part
        else:
            text += f"[{part!r}]"
    return text


def key_is_related(key: str, path: Path) -> bool:
    """The problem key names `path`, one of its ancestors, or something inside it."""
    rendered = render_key(path)
    if key == rendered:
        return True
    shorter, longer = sorted((key, rendered), key=len)
    return longer.startswith(shorter) and longer[len(shorter)] in ".["


RICH_CONFIG: dict[str, Any] = {
    "project": "vision",
    "owner": "ml-team+gpu@example.com",
    "costCenter": "cc-42/ml = research",
    "budget": {"monthlyUsd": 5000},
    "network": {"subnetIds": ["subnet-0123456789abcdef0", "subnet-01234567"]},
    "data": {"bucket": "example-data.eu", "readPrefixes": ["datasets/imagenet/", "date=2024-01-01/"], "writePrefixes": ["runs/vision/"]},
    "access": {"ssm": False, "sshCidrs": ["10.0.0.0/8"], "jupyterCidrs": ["192.168.8.0/24"], "tensorboardCidrs": ["fd00:db8::/32"]},
    "monitoring": {"temperatureThresholdC": 85, "memorySaturationPercent": 95, "idleUtilizationPercent": 5, "idleMinutes": 60, "dashboard": True},
    "backup": {"retentionDays": 30},
    "groups": [
        {
            "name": "trainers",
            "instanceTypes": ["p4d.24xlarge", "p5.48xlarge"],
            "minSize": 0,
            "maxSize": 4,
            "desiredCapacity": 1,
            "onDemandBaseCapacity": 1,
            "spotPercent": 80,
            "multiNode": True,
            "rootVolumeGiB": 200,
            "dataVolumeGiB": 500,
            "amiId": "ami-0123456789abcdef0",
            "healthCheckGracePeriodSeconds": 600,
            "idleShutdown": {"utilizationPercent": 5, "minutes": 60},
            "checkpoint": {"command": ["/opt/ml/save-checkpoint", "--to", "s3://example-data.eu/runs/vision/"], "directory": "/scratch/ckpt", "timeoutSeconds": 120},
            "scaling": {
                "targetTracking": {
                    "metricName": "BacklogPerInstance",
                    "namespace": "Jobs/Queue",
                    "targetValue": 10,
                    "statistic": "Average",
                    "dimensions": {"Queue": "training jobs"},
                    "disableScaleIn": False,
                },
                "stepScaling": [
                    {
                        "metricName": "PendingJobs",
                        "namespace": "Jobs/Queue",
                        "threshold": 100,
                        "scaleOutBy": 2,
                        "statistic": "Maximum",
                        "dimensions": {"Queue Name": "training", "Stage": "=prod"},
                        "periodSeconds": 60,
                        "evaluationPeriods": 2,
                        "cooldownSeconds": 300,
                    }
                ],
                "schedules": [
                    {"name": "night", "recurrence": "0 20 * * *", "timeZone": "Europe/Berlin", "minSize": 0, "maxSize": 0, "desiredCapacity": 0}
                ],
                "gpuIdleScaleIn": {"utilizationPercent": 10, "minutes": 30, "scaleInBy": 1},
            },
        },
        {"name": "notebook", "instanceTypes": ["g5.xlarge"], "maxSize": 1, "persistentVolumeGiB": 100},
    ],
}
"""A valid config that sets every key, so each one is there to be mutated."""
