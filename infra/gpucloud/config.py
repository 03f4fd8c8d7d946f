"""Typed stack configuration: parsed once, at the edge, from Pulumi config or a stack file.

Every key keeps the camelCase spelling of the stack file (`gpu-cloud:costCenter`), while
Python code uses snake_case. Rules that need no AWS lookup live here, one named validator
each; rules that need AWS facts (GPU types, EFA, subnets) live in `gpucloud.resolve`.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import re
import zoneinfo
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from gpucloud.policy_documents import instance_role_policy

NAMESPACE = "gpu-cloud"


class ConfigError(Exception):
    """A stack config that breaks a rule. Names the stack and its file, the key and the reason."""

    def __init__(self, source: str, problems: list[tuple[str, str]]):
        self.source = source
        self.problems = problems
        lines = [f"{source}: {key}: {reason}" for key, reason in problems]
        super().__init__("\n".join(lines))


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        str_strip_whitespace=False,
        allow_inf_nan=False,  # an alarm threshold or target of .nan / .inf is no number AWS takes
    )


def _refuse_world_open(cidr: str) -> str:
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


def _shaped(pattern: str, description: str, max_length: int = 256) -> AfterValidator:
    """A string rule whose error says in words what is allowed."""
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if len(value) > max_length or not compiled.fullmatch(value):
            shown = value if len(value) <= 60 else value[:57] + "..."
            raise ValueError(f"{shown!r} is not allowed: {description}")
        return value

    return AfterValidator(check)


Cidr = Annotated[str, AfterValidator(_refuse_world_open)]
Prefix = Annotated[str, StringConstraints(min_length=1, max_length=200), AfterValidator(_check_prefix)]
ResourceName = Annotated[
    str,
    _shaped(r"[a-z][a-z0-9-]*[a-z0-9]", "use 2-24 lowercase letters, digits and hyphens, starting with a letter", 24),
]
InstanceType = Annotated[str, _shaped(r"[a-z][a-z0-9-]*\.[a-z0-9-]+", "expected an EC2 instance type such as g5.xlarge", 32)]
SubnetId = Annotated[str, _shaped(r"subnet-[0-9a-f]{8,17}", "expected a subnet id such as subnet-0123456789abcdef0")]
AmiId = Annotated[str, _shaped(r"ami-[0-9a-f]{8,17}", "expected an AMI id such as ami-0123456789abcdef0")]
MetricName = Annotated[str, _shaped(r"[A-Za-z0-9_.\-/#:]+", "use letters, digits and _ . - / # :", 255)]
Namespace = Annotated[
    str, _shaped(r"[A-Za-z0-9_.\-/#][A-Za-z0-9_.\-/#:]*", "use letters, digits and _ . - / # :, not starting with ':'", 255)
]
"""CloudWatch refuses a namespace that starts with ':'."""
DimensionName = Annotated[
    str,
    _shaped(
        r" *[A-Za-z0-9_.\-/#=+@][A-Za-z0-9_.\-/#:=+@ ]*",
        "use letters, digits, spaces and _ . - / # : = + @, not starting with ':' and not only spaces",
        255,
    ),
]
"""CloudWatch refuses a dimension name that starts with ':' or holds only whitespace."""
Statistic = Annotated[
    str, _shaped(r"Average|Sum|Maximum|Minimum|SampleCount", "one of Average, Sum, Maximum, Minimum, SampleCount")
]
TagValue = Annotated[str, _shaped(r"[A-Za-z0-9_.:/=+\-@ ]+", "use letters, digits, spaces and _ . : / = + - @")]
DimensionValue = Annotated[
    str, _shaped(r" *[A-Za-z0-9_.:/=+\-@][A-Za-z0-9_.:/=+\-@ ]*", "use letters, digits, spaces and _ . : / = + - @, not only spaces")
]
"""CloudWatch refuses a dimension value of only whitespace."""
Email = Annotated[
    str,
    _shaped(
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
    _shaped(r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]", "expected an S3 bucket name (3-63 lowercase letters, digits, . and -)"),
    AfterValidator(_check_bucket_rules),
]
CRON_FIELD = r"[0-9A-Za-z*/,\-?#L]+"
MACHINE_DEPENDENT_ZONES = frozenset({"localtime", "posixrules", "Factory"})
"""Files in the tz database that are no zone: `localtime` is whatever the machine is set to."""


@functools.cache
def _iana_time_zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones()) - MACHINE_DEPENDENT_ZONES


def _unique_names(items: list, what: str) -> list:
    """Names become resource names, so two items of a list may not share one."""
    names = [item.name for item in items]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"{what} names must be unique: {', '.join(duplicates)}")
    return items


class NetworkConfig(_Model):
    """Where instances run. No subnets listed: the default VPC's subnets."""

    subnet_ids: list[SubnetId] | None = Field(default=None, min_length=1)

    @field_validator("subnet_ids")
    @classmethod
    def subnets_are_unique(cls, subnet_ids: list[str] | None) -> list[str] | None:
        if subnet_ids and len(set(subnet_ids)) != len(subnet_ids):
            raise ValueError("lists a subnet twice")
        return subnet_ids


class DataConfig(_Model):
    """The project's S3 data: one bucket, prefixes read-only or read/write."""

    bucket: BucketName
    read_prefixes: list[Prefix] = Field(default_factory=list)
    write_prefixes: list[Prefix] = Field(default_factory=list)

    @model_validator(mode="after")
    def some_prefix_is_granted(self) -> DataConfig:
        if not self.read_prefixes and not self.write_prefixes:
            raise ValueError("names a bucket but grants no readPrefixes or writePrefixes")
        return self

    @model_validator(mode="after")
    def prefixes_fit_in_the_node_role_policy(self) -> DataConfig:
        size = _longest_node_role_policy_size(self)
        if size > IAM_ROLE_POLICY_LIMIT:
            raise ValueError(
                f"readPrefixes and writePrefixes make the node role's IAM policy {size} characters, "
                f"above the {IAM_ROLE_POLICY_LIMIT} IAM allows a role: grant fewer or shorter prefixes "
                "(a prefix covers every key under it)"
            )
        return self


IAM_ROLE_POLICY_LIMIT = 10240
"""AWS: the inline policies of one role together, whitespace not counted."""


def _longest_node_role_policy_size(data: DataConfig) -> int:
    """The node role's policy for these prefixes with the longest partition, region, account,
    key and project name any stack can have, so the check holds for every stack."""
    region = "ap-southeast-7"
    document = instance_role_policy(
        partition="aws-us-gov",
        region=region,
        account_id="0" * 12,
        project="p" * 24,
        key_arn=f"arn:aws-us-gov:kms:{region}:{'0' * 12}:key/{'0' * 36}",
        bucket=data.bucket,
        read_prefixes=data.read_prefixes,
        write_prefixes=data.write_prefixes,
        session_manager=True,
    )
    return len(json.dumps(document, separators=(",", ":")))


class AccessConfig(_Model):
    """Who may reach the instances. Empty lists are the default: no ingress at all."""

    ssh_cidrs: list[Cidr] = Field(default_factory=list)
    jupyter_cidrs: list[Cidr] = Field(default_factory=list)
    tensorboard_cidrs: list[Cidr] = Field(default_factory=list)
    ssm: bool = True

    @field_validator("ssh_cidrs", "jupyter_cidrs", "tensorboard_cidrs")
    @classmethod
    def cidrs_are_unique(cls, cidrs: list[str]) -> list[str]:
        """Each CIDR becomes a rule, and EC2 refuses a rule that already exists (compared as networks:
        `10.0.0.0/8` and `10.0.0.0/08` are one)."""
        repeated = sorted({cidr for cidr in cidrs if cidrs.count(cidr) > 1})
        if repeated:
            raise ValueError(f"lists {', '.join(repeated)} twice; each CIDR opens the port once")
        return cidrs

    @model_validator(mode="after")
    def ssh_only_without_session_manager(self) -> AccessConfig:
        if self.ssm and self.ssh_cidrs:
            raise ValueError(
                "sshCidrs opens port 22 while ssm is true (Session Manager instead of SSH); "
                "drop sshCidrs, or set ssm: false to use SSH instead"
            )
        return self


class TargetTracking(_Model):
    """Keep a custom metric (e.g. queue backlog per instance) at a target value."""

    metric_name: MetricName
    namespace: Namespace
    target_value: float = Field(gt=0)
    statistic: Statistic = "Average"
    dimensions: dict[DimensionName, DimensionValue] = Field(default_factory=dict)
    disable_scale_in: bool = False


class StepScaling(_Model):
    """Add `scaleOutBy` instances when a metric passes `threshold`."""

    metric_name: MetricName
    namespace: Namespace
    threshold: float
    scale_out_by: int = Field(ge=1, le=100)
    statistic: Statistic = "Average"
    dimensions: dict[DimensionName, DimensionValue] = Field(default_factory=dict)
    period_seconds: int = Field(default=60, ge=10, le=86400)
    evaluation_periods: int = Field(default=2, ge=1, le=100)
    cooldown_seconds: int = Field(default=300, ge=0, le=86400)


class Schedule(_Model):
    """A recurring resize, e.g. scale to zero at night."""

    name: ResourceName
    recurrence: str
    min_size: int | None = Field(default=None, ge=0)
    max_size: int | None = Field(default=None, ge=0)
    desired_capacity: int | None = Field(default=None, ge=0)
    time_zone: str = "UTC"

    @field_validator("recurrence")
    @classmethod
    def recurrence_is_cron(cls, recurrence: str) -> str:
        fields = recurrence.split(" ")
        if len(fields) != 5 or not all(re.fullmatch(CRON_FIELD, field) for field in fields):
            raise ValueError(
                f"{recurrence!r} is not a 5-field cron expression (minute hour day month weekday)"
            )
        if len(recurrence) > 255:
            raise ValueError(f"is {len(recurrence)} characters long; Auto Scaling takes a recurrence of at most 255")
        return recurrence

    @field_validator("time_zone")
    @classmethod
    def time_zone_is_known(cls, time_zone: str) -> str:
        if time_zone not in _iana_time_zones():
            raise ValueError(f"{time_zone!r} is not an IANA time zone (e.g. Europe/Paris)")
        return time_zone

    @model_validator(mode="after")
    def sets_some_size_consistently(self) -> Schedule:
        if self.min_size is None and self.max_size is None and self.desired_capacity is None:
            raise ValueError("sets none of minSize, maxSize, desiredCapacity")
        low = self.min_size if self.min_size is not None else 0
        if self.max_size is not None and low > self.max_size:
            raise ValueError(f"minSize {low} is above maxSize {self.max_size}")
        if self.desired_capacity is not None:
            if self.desired_capacity < low or (
                self.max_size is not None and self.desired_capacity > self.max_size
            ):
                raise ValueError("desiredCapacity is outside minSize..maxSize")
        return self


class GpuIdleScaleIn(_Model):
    """Remove instances while average GPU utilisation stays under `utilizationPercent`."""

    utilization_percent: float = Field(gt=0, le=100)
    minutes: int = Field(default=60, ge=5, le=1440)
    scale_in_by: int = Field(default=1, ge=1, le=100)


class IdleShutdown(_Model):
    """Scale the group to zero once its GPUs have been idle this long (an idle fleet costs only its volumes)."""

    utilization_percent: float = Field(default=5, gt=0, le=100)
    minutes: int = Field(default=60, ge=10, le=1440)


class ScalingConfig(_Model):
    target_tracking: TargetTracking | None = None
    step_scaling: list[StepScaling] = Field(default_factory=list)
    schedules: list[Schedule] = Field(default_factory=list)
    gpu_idle_scale_in: GpuIdleScaleIn | None = None

    @field_validator("schedules")
    @classmethod
    def schedule_names_are_unique(cls, schedules: list[Schedule]) -> list[Schedule]:
        return _unique_names(schedules, "schedule")


CHECKPOINT_TIMEOUT_LIMIT_SECONDS = 180
"""The drain tries a checkpoint three times within the terminate hook's 600 s."""


def _check_checkpoint_argument(argument: str) -> str:
    if not argument or not argument.isprintable():
        raise ValueError("each command argument must be non-empty printable text (no control characters)")
    return argument


CheckpointArgument = Annotated[str, StringConstraints(max_length=256), AfterValidator(_check_checkpoint_argument)]


class CheckpointConfig(_Model):
    """What the node saves when told to go (spot notice, scale-in). Without a command, the agent
    uploads `directory` to the group's write prefix; a command runs as given (no shell), with
    GPUCLOUD_CHECKPOINT_DIR, GPUCLOUD_CHECKPOINT_URI and GPUCLOUD_INSTANCE_ID set."""

    command: list[CheckpointArgument] | None = Field(default=None, min_length=1, max_length=16)
    directory: Annotated[
        str, _shaped(r"/[A-Za-z0-9._\-/]*", "use an absolute path of letters, digits and . _ - /", 128)
    ] = "/scratch/checkpoints"
    timeout_seconds: int = Field(default=90, ge=10, le=CHECKPOINT_TIMEOUT_LIMIT_SECONDS)

    @field_validator("command")
    @classmethod
    def command_fits_in_user_data(cls, command: list[str] | None) -> list[str] | None:
        if command and sum(len(argument) for argument in command) > 512:
            raise ValueError(
                "is longer than 512 characters in all (it travels in the 16 KB of user data); "
                "put a longer command in a script on the image"
            )
        return command


class GroupConfig(_Model):
    """One GPU instance group: an Auto Scaling group over one or more GPU instance types."""

    name: ResourceName
    instance_types: list[InstanceType] = Field(min_length=1, max_length=20)
    min_size: int = Field(default=0, ge=0, le=1000)
    max_size: int = Field(ge=1, le=1000)
    desired_capacity: int | None = Field(default=None, ge=0, le=1000)
    on_demand_base_capacity: int = Field(default=0, ge=0, le=1000)
    spot_percent: int = Field(default=100, ge=0, le=100)
    multi_node: bool = False
    root_volume_gib: int = Field(default=100, ge=30, le=16384, alias="rootVolumeGiB")
    data_volume_gib: int = Field(default=0, ge=0, le=16384, alias="dataVolumeGiB")
    persistent_volume_gib: int = Field(default=0, ge=0, le=16384, alias="persistentVolumeGiB")
    ami_id: AmiId | None = None
    health_check_grace_period_seconds: int = Field(default=900, ge=0, le=7200)
    scaling: ScalingConfig = Field(default_factory=ScalingConfig)
    idle_shutdown: IdleShutdown | None = None
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig)

    @model_validator(mode="before")
    @classmethod
    def persistent_volume_group_defaults_to_on_demand(cls, values: Any) -> Any:
        """Spot is the default elsewhere; a group that holds a persistent volume runs on-demand
        unless spotPercent says otherwise (and then persistent_volume_group_stays_on_demand refuses it)."""
        if isinstance(values, dict) and values.get("persistentVolumeGiB", values.get("persistent_volume_gib")):
            if "spotPercent" not in values and "spot_percent" not in values:
                return {**values, "spotPercent": 0}
        return values

    @property
    def initial_capacity(self) -> int:
        return self.min_size if self.desired_capacity is None else self.desired_capacity

    @property
    def uses_spot(self) -> bool:
        return self.spot_percent > 0 and self.max_size > self.on_demand_base_capacity

    @field_validator("instance_types")
    @classmethod
    def instance_types_are_unique(cls, instance_types: list[str]) -> list[str]:
        if len(set(instance_types)) != len(instance_types):
            raise ValueError("lists an instance type twice")
        return instance_types

    @model_validator(mode="after")
    def sizes_are_ordered(self) -> GroupConfig:
        if self.min_size > self.max_size:
            raise ValueError(f"minSize {self.min_size} is above maxSize {self.max_size}")
        if not self.min_size <= self.initial_capacity <= self.max_size:
            raise ValueError(
                f"desiredCapacity {self.initial_capacity} is outside minSize..maxSize "
                f"({self.min_size}..{self.max_size})"
            )
        if self.on_demand_base_capacity > self.max_size:
            raise ValueError(
                f"onDemandBaseCapacity {self.on_demand_base_capacity} is above maxSize {self.max_size}"
            )
        return self

    @model_validator(mode="after")
    def persistent_volume_needs_single_instance(self) -> GroupConfig:
        if self.persistent_volume_gib and self.max_size != 1:
            raise ValueError(
                f"persistentVolumeGiB needs maxSize: 1 (got {self.max_size}): one EBS volume "
                "attaches to one instance"
            )
        if self.persistent_volume_gib and self.multi_node:
            raise ValueError("persistentVolumeGiB cannot be combined with multiNode")
        return self

    @model_validator(mode="after")
    def persistent_volume_group_stays_on_demand(self) -> GroupConfig:
        if self.persistent_volume_gib and self.uses_spot:
            raise ValueError(
                f"spotPercent {self.spot_percent} puts this persistentVolumeGiB group on spot, whose capacity "
                "rebalancing launches the replacement while the old node still holds the volume (the new "
                "node cannot attach it and is abandoned); set spotPercent: 0 or onDemandBaseCapacity: 1"
            )
        return self

    @model_validator(mode="after")
    def idle_shutdown_needs_zero_minimum(self) -> GroupConfig:
        if self.idle_shutdown and self.min_size != 0:
            raise ValueError(
                f"idleShutdown scales the group to zero, which needs minSize: 0 (got {self.min_size})"
            )
        return self

    @model_validator(mode="after")
    def schedules_stay_within_max(self) -> GroupConfig:
        for schedule in self.scaling.schedules:
            for size in (schedule.max_size, schedule.desired_capacity, schedule.min_size):
                if size is not None and size > self.max_size:
                    raise ValueError(
                        f"schedule {schedule.name!r} sets a size of {size}, above the group's "
                        f"maxSize {self.max_size}"
                    )
        return self


class MonitoringConfig(_Model):
    """GPU alarms sent to the project's SNS topic (the owner's e-mail is subscribed)."""

    temperature_threshold_c: int = Field(default=85, ge=40, le=100)
    memory_saturation_percent: float = Field(default=95, gt=0, le=100)
    idle_utilization_percent: float = Field(default=5, gt=0, le=100)
    idle_minutes: int = Field(default=60, ge=10, le=1440)
    dashboard: bool = True


class BackupConfig(_Model):
    """AWS Backup of persistent volumes: daily, kept this many days."""

    retention_days: int = Field(default=7, ge=1, le=3650)


class BudgetConfig(_Model):
    """The project's monthly AWS Budgets cost budget, filtered on its `Project` tag."""

    monthly_usd: float = Field(gt=0, le=10_000_000)


class StackConfig(_Model):
    """Everything one project's stack declares under the `gpu-cloud:` namespace."""

    project: ResourceName
    owner: Email
    cost_center: TagValue
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    data: DataConfig | None = None
    access: AccessConfig = Field(default_factory=AccessConfig)
    monitoring: MonitoringConfig = Field(default_factory=MonitoringConfig)
    budget: BudgetConfig
    backup: BackupConfig = Field(default_factory=BackupConfig)
    groups: list[GroupConfig] = Field(min_length=1, max_length=50)

    @field_validator("groups")
    @classmethod
    def group_names_are_unique(cls, groups: list[GroupConfig]) -> list[GroupConfig]:
        return _unique_names(groups, "group")

    @property
    def tags(self) -> dict[str, str]:
        """The tags every taggable resource carries."""
        return {
            "Project": self.project,
            "Owner": self.owner,
            "CostCenter": self.cost_center,
            "ManagedBy": "gpu-cloud",
        }


class StackSettings(BaseModel):
    """A parsed stack: its name, where it came from, the AWS region and the typed config."""

    model_config = ConfigDict(frozen=True)

    stack: str
    source: str
    region: str
    config: StackConfig


def _key_path(location: tuple[Any, ...]) -> str:
    """`gpu-cloud:groups[0].scaling`; a key that is not a plain word shows as its repr in
    brackets (`dimensions['a b']`), so a hostile key in a stack file cannot break the message."""
    if not location:
        return NAMESPACE
    if location[-1] == "[key]":  # pydantic's marker for an invalid dict key
        location = location[:-1]
    path = f"{NAMESPACE}:"
    for index, part in enumerate(location):
        if isinstance(part, int):
            path += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z0-9_\-]+", str(part)):
            path += f".{part}" if index else str(part)
        else:
            path += f"[{part!r}]"
    return path


def _problems(error: ValidationError) -> list[tuple[str, str]]:
    problems = []
    for item in error.errors(include_url=False):
        location = tuple(part for part in item["loc"] if not str(part).startswith("function-"))
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = "is not a known key (check its spelling against the config reference)"
        problems.append((_key_path(location), message))
    return problems


def parse_stack_config(values: Mapping[str, Any], *, stack: str, source: str, region: str) -> StackSettings:
    """Validate `gpu-cloud:` values (namespace already stripped) into typed settings."""
    try:
        config = StackConfig.model_validate(dict(values), by_alias=True)
    except ValidationError as error:
        raise ConfigError(f"stack {stack!r} ({source})", _problems(error)) from None
    if not isinstance(region, str) or not re.fullmatch(r"[a-z]{2}(-gov)?-[a-z]+-\d", region):
        raise ConfigError(f"stack {stack!r} ({source})", [("aws:region", f"{region!r} is not an AWS region")])
    return StackSettings(stack=stack, source=source, region=region, config=config)


def split_namespace(raw: Mapping[str, Any], *, stack: str, source: str) -> tuple[dict[str, Any], str | None]:
    """Pick the `gpu-cloud:` keys and `aws:region` out of a flat Pulumi config map."""
    values: dict[str, Any] = {}
    region = None
    for key, value in raw.items():
        namespace, _, name = str(key).partition(":")
        if key == "aws:region":
            region = value
        elif namespace == NAMESPACE:
            if isinstance(value, dict) and set(value) == {"secure"}:
                raise ConfigError(
                    f"stack {stack!r} ({source})",
                    [(key, "is a secret; gpu-cloud settings are plain values (nothing here is secret)")],
                )
            values[name] = value
    return values, region


class _StackFileLoader(yaml.SafeLoader):
    """Safe YAML that refuses a key given twice in one mapping (plain YAML keeps the last one,
    so a second `gpu-cloud:groups` would silently replace the first)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, Hashable):
                continue  # SafeLoader's own construct_mapping refuses it, with its position
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice in one mapping", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_StackFileLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _StackFileLoader.construct_mapping)


def _one_line(error: yaml.YAMLError) -> str:
    """PyYAML's multi-line report (context, problem, a caret under the line) as one line."""
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    return f"{problem}{where}".replace("\n", " ")


def load_stack_file(path: str | Path, *, region: str | None = None) -> StackSettings:
    """Read `stacks/Pulumi.<stack>.yaml` directly, for offline use (plan, tests)."""
    path = Path(path)
    match = re.fullmatch(r"Pulumi\.(.+)\.ya?ml", path.name)
    stack = match.group(1) if match else path.stem
    source = str(path)
    where = f"stack {stack!r} ({source})"
    try:
        document = yaml.load(path.read_text(encoding="utf-8"), Loader=_StackFileLoader)  # noqa: S506 - a SafeLoader
    except FileNotFoundError:
        raise ConfigError(where, [("file", "does not exist")]) from None
    except IsADirectoryError:
        raise ConfigError(where, [("file", "is a directory, not a stack file")]) from None
    except OSError as error:
        raise ConfigError(where, [("file", f"cannot be read: {error.strerror or error}")]) from None
    except UnicodeDecodeError as error:
        raise ConfigError(where, [("file", f"is not UTF-8 text (byte {error.start}: {error.reason})")]) from None
    except yaml.YAMLError as error:
        raise ConfigError(where, [("file", f"is not valid YAML: {_one_line(error)}")]) from None
    if not isinstance(document, dict) or not isinstance(document.get("config"), dict):
        raise ConfigError(where, [("config", "the file needs a top-level 'config:' map")])
    values, file_region = split_namespace(document["config"], stack=stack, source=source)
    chosen_region = region or file_region
    if not chosen_region:
        raise ConfigError(where, [("aws:region", "is not set")])
    return parse_stack_config(values, stack=stack, source=source, region=chosen_region)
