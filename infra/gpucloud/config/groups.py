"""One GPU instance group: its types, sizes, volumes, spot share, scaling and checkpoint."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field, StringConstraints, field_validator, model_validator

from gpucloud.config.fields import AmiId, ConfigModel, InstanceType, ResourceName, shaped
from gpucloud.config.scaling import IdleShutdown, ScalingConfig

CHECKPOINT_TIMEOUT_LIMIT_SECONDS = 180
"""The drain tries a checkpoint three times within the terminate hook's 600 s."""


def _check_checkpoint_argument(argument: str) -> str:
    if not argument or not argument.isprintable():
        raise ValueError("each command argument must be non-empty printable text (no control characters)")
    return argument


CheckpointArgument = Annotated[str, StringConstraints(max_length=256), AfterValidator(_check_checkpoint_argument)]


class CheckpointConfig(ConfigModel):
    """What the node saves when told to go (spot notice, scale-in). Without a command, the agent
    uploads `directory` to the group's write prefix; a command runs as given (no shell), with
    GPUCLOUD_CHECKPOINT_DIR, GPUCLOUD_CHECKPOINT_URI and GPUCLOUD_INSTANCE_ID set."""

    command: list[CheckpointArgument] | None = Field(default=None, min_length=1, max_length=16)
    directory: Annotated[
        str, shaped(r"/[A-Za-z0-9._\-/]*", "use an absolute path of letters, digits and . _ - /", 128)
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


class HealthConfig(ConfigModel):
    """How the node agent's watch treats this group's GPUs once they are in service."""

    interval_seconds: int = Field(default=60, ge=10, le=3600)
    throttle_minutes: int = Field(default=10, ge=1, le=1440)
    """How long thermal or power throttling must last before it is reported and alarmed."""
    max_replacements_per_hour: int = Field(default=2, ge=1, le=100)
    """The breaker: past this many replacements in the group within an hour, a faulty node is
    only marked and the ReplacementsHeld alarm fires, so a bad driver or image cannot drain the group."""
    replace: bool = True
    """False: node faults are reported and alarmed, and no node is ever marked Unhealthy."""


class GroupConfig(ConfigModel):
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
    health: HealthConfig = Field(default_factory=HealthConfig)

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
    def single_zone(self) -> bool:
        """Multi-node groups (one cluster placement group) and groups with a persistent volume (an
        EBS volume lives in one zone) stay in one zone."""
        return self.multi_node or bool(self.persistent_volume_gib)

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


def purchase_split(capacity: int, on_demand_base: int, spot_percent: int) -> tuple[int, int]:
    """(on-demand, spot) instance counts for a running capacity, on-demand share rounded up, as
    Auto Scaling splits a mixed instances group (the cost estimate and the quota check share it)."""
    base = min(capacity, on_demand_base)
    above = capacity - base
    on_demand_above = -(-above * (100 - spot_percent) // 100)
    return base + on_demand_above, above - on_demand_above
