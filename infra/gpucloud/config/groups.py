"""One GPU instance group: its types, sizes, volumes, spot share, scaling and checkpoint."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, StringConstraints, field_validator, model_validator

from gpucloud.config.capacity import CapacityConfig
from gpucloud.config.fields import AmiId, ConfigModel, InstanceType, ResourceName, shaped
from gpucloud.config.image import ImageConfig
from gpucloud.config.requirements import InstanceRequirementsConfig
from gpucloud.config.scaling import IdleShutdown, ScalingConfig
from gpucloud.config.endpoint import EndpointConfig
from gpucloud.config.jobs import JobsConfig
from gpucloud.config.services import ServicesConfig

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
    """The command that saves a checkpoint, as an argv list (no shell; at most 512 characters in all), run with
    GPUCLOUD_CHECKPOINT_DIR, GPUCLOUD_CHECKPOINT_URI and GPUCLOUD_INSTANCE_ID set. Unset: the agent uploads
    directory to `<first write prefix>/checkpoints/<group>/<instance id>/`."""
    directory: Annotated[
        str, shaped(r"/[A-Za-z0-9._\-/]*", "use an absolute path of letters, digits and . _ - /", 128)
    ] = "/scratch/checkpoints"
    """The absolute path of what is saved: uploaded as it is without a command, given to the command as
    GPUCLOUD_CHECKPOINT_DIR with one."""
    timeout_seconds: int = Field(default=90, ge=10, le=CHECKPOINT_TIMEOUT_LIMIT_SECONDS)
    """How long one checkpoint attempt may run before it is stopped; the drain tries up to three times within the
    terminate hook's 600 seconds."""

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
    """How often the watch reads the GPUs (one nvidia-smi query) and the new Xid lines of the kernel log."""
    throttle_minutes: int = Field(default=10, ge=1, le=1440)
    """How long thermal or power throttling must last before it is reported and alarmed."""
    max_replacements_per_hour: int = Field(default=2, ge=1, le=100)
    """The breaker: past this many replacements in the group within an hour, a faulty node is
    only marked and the ReplacementsHeld alarm fires, so a bad driver or image cannot drain the group."""
    replace: bool = True
    """False: node faults are reported and alarmed, and no node is ever marked Unhealthy."""


class WarmPoolConfig(ConfigModel):
    """Instances kept initialized and stopped (or hibernated), so scaling out skips the boot and the
    first gate. They leave the pool through the launch hook, and the gate runs again as they start."""

    min_size: int = Field(default=0, ge=0, le=1000)
    """Instances the pool keeps prepared even when the group runs none."""
    max_group_prepared_capacity: int | None = Field(default=None, ge=0, le=1000)
    """The most instances the group and its pool hold together, in service ones included, so at least maxSize;
    unset, the pool holds what maxSize leaves beside the group's desired capacity."""
    pool_state: Literal["Stopped", "Hibernated", "Running"] = "Stopped"
    """The state pool instances wait in: `Stopped`, or `Hibernated` where the type can hibernate (the root volume
    must hold its memory). `Running` is refused: the health gate would not run again."""
    reuse_on_scale_in: bool = False
    """On scale-in, return instances to the pool (stopped or hibernated) instead of terminating them."""
    prepull_images: bool = False
    """Pull the group's container images while a new instance waits in the pool (Warmed:Pending:Wait), before it is
    stopped, so a scale-out from the pool starts its containers without pulling them."""


class GroupConfig(ConfigModel):
    """One GPU instance group: an Auto Scaling group over one or more GPU instance types."""

    name: ResourceName
    """The group's name, unique in the stack: part of its resources' names (its Auto Scaling group is
    `gpu-cloud-<name base>-<name>`)."""
    instance_types: list[InstanceType] = Field(default_factory=list, max_length=20,
                                               json_schema_extra={"uniqueItems": True})
    """GPU instance types the group launches, each once, checked against EC2's GPU information in the region; or
    instanceRequirements instead (one of the two)."""
    instance_requirements: InstanceRequirementsConfig | None = None
    min_size: int = Field(default=0, ge=0, le=1000)
    """The fewest instances the group keeps running."""
    max_size: int = Field(ge=1, le=1000)
    """The most instances the group may run."""
    desired_capacity: int | None = Field(default=None, ge=0, le=1000)
    """Instances when the group is created (within minSize..maxSize); unset: minSize. Later updates leave the
    running count to scaling."""
    on_demand_base_capacity: int = Field(default=0, ge=0, le=1000)
    """Instances that always run on-demand before spotPercent splits the rest; at most maxSize."""
    spot_percent: int = Field(default=100, ge=0, le=100)
    """Percent of the instances above onDemandBaseCapacity that run on spot: by default all of them, and none in a
    group with persistentVolumeGiB, which may not use spot."""
    multi_node: bool = False
    """For distributed training: EFA on every network card, one cluster placement group in one zone, and traffic
    allowed between the group's members."""
    root_volume_gib: int = Field(default=100, ge=30, le=16384, alias="rootVolumeGiB")
    """Size of each instance's encrypted gp3 root volume, in GiB."""
    data_volume_gib: int = Field(default=0, ge=0, le=16384, alias="dataVolumeGiB")
    """An encrypted data volume of this many GiB per instance, mounted at /data and gone with its instance; 0:
    none."""
    persistent_volume_gib: int = Field(default=0, ge=0, le=16384, alias="persistentVolumeGiB")
    """An encrypted EBS volume of this many GiB, kept across instances and on destroy, that the group's one
    instance mounts at /persist, backed up daily; 0: none. Needs maxSize 1, no multiNode and no spot; the group
    stays in the first zone that offers every type it lists."""
    ami_id: AmiId | None = None
    """The image the nodes boot. Unset: the AWS Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04), read
    from its public SSM parameter."""
    image: ImageConfig | None = None
    """With amiId: what that image carries (provides), which the plan checks each feature against."""
    health_check_grace_period_seconds: int = Field(default=900, ge=0, le=7200)
    """Seconds Auto Scaling waits after a node enters service before it acts on its EC2 health checks; also the
    instance warmup of instance refreshes and of the endpoint's scaling. Unset: the plan's cold-start estimate of
    the time from service to serving, with a quarter more, and at least 900."""
    scaling: ScalingConfig = Field(default_factory=ScalingConfig)
    idle_shutdown: IdleShutdown | None = None
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig)
    health: HealthConfig = Field(default_factory=HealthConfig)
    capacity: CapacityConfig = Field(default_factory=CapacityConfig)
    """Reserved capacity the group launches into: reservations or a capacityBlock, not both. Unset: on-demand and
    spot capacity as AWS has it."""
    warm_pool: WarmPoolConfig | None = None
    services: ServicesConfig = Field(default_factory=ServicesConfig)
    jobs: JobsConfig = Field(default_factory=JobsConfig)
    endpoint: EndpointConfig | None = None

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
    def capacity_block(self) -> CapacityBlockConfig | None:
        return self.capacity.capacity_block

    @property
    def single_zone(self) -> bool:
        """Multi-node groups (one cluster placement group), groups with a persistent volume (an EBS
        volume lives in one zone) and groups in a Capacity Block (the block's zone) stay in one zone."""
        return self.multi_node or bool(self.persistent_volume_gib) or self.capacity_block is not None

    @property
    def uses_spot(self) -> bool:
        return self.spot_percent > 0 and self.max_size > self.on_demand_base_capacity

    @model_validator(mode="after")
    def types_or_requirements(self) -> GroupConfig:
        if bool(self.instance_types) == (self.instance_requirements is not None):
            raise ValueError("give instanceTypes (a list of GPU types) or instanceRequirements (GPU attributes), one of them")
        return self

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
    def capacity_block_group_is_one_on_demand_type(self) -> GroupConfig:
        """Instances launch into a Capacity Block with the launch template's market type
        `capacity-block`: on-demand instances of the block's one type in its one zone (EC2 user
        guide, "Launch instances into a Capacity Block", read 2026-11-25). Spot, several types and
        a warm pool cannot use it."""
        block = self.capacity_block
        if block is None:
            return self
        if self.uses_spot:
            raise ValueError(f"capacity.capacityBlock runs on-demand instances in the block, but spotPercent "
                             f"{self.spot_percent} puts some on spot: set spotPercent: 0")
        if len(self.instance_types) != 1:
            raise ValueError("capacity.capacityBlock holds one instance type; list only that type in instanceTypes "
                             "(not instanceRequirements)")
        if self.warm_pool is not None:
            raise ValueError("warmPool cannot be combined with capacity.capacityBlock: the block is paid by the hour "
                             "whether instances run or wait, and its instances end with it")
        if block.offering and block.offering.instance_type != self.instance_types[0]:
            raise ValueError(f"capacity.capacityBlock.offering is for {block.offering.instance_type}, but the group "
                             f"lists {self.instance_types[0]}")
        if block.offering and self.max_size > block.offering.count:
            raise ValueError(f"maxSize {self.max_size} is above the block's {block.offering.count} instances: the "
                             "group could never launch the rest")
        return self

    @model_validator(mode="after")
    def warm_pool_fits_what_auto_scaling_allows(self) -> GroupConfig:
        """Auto Scaling refuses a warm pool on a group with a mixed instances policy or spot
        instances (EC2 Auto Scaling user guide, "Warm pools": limitations, read 2026-11-25); this
        package gives a group a mixed instances policy whenever it lists several types or uses spot."""
        pool = self.warm_pool
        if pool is None:
            return self
        if len(self.instance_types) != 1 or self.uses_spot:
            raise ValueError("warmPool needs one instance type and no spot (spotPercent: 0): Auto Scaling refuses a "
                             "warm pool on a group with a mixed instances policy or spot instances")
        if pool.pool_state == "Running":
            raise ValueError("warmPool.poolState Running keeps pool instances booted, so the node's health gate, which "
                             "runs as the instance starts, would not run again when it leaves the pool: use Stopped "
                             "or Hibernated")
        if pool.max_group_prepared_capacity is not None and pool.max_group_prepared_capacity < self.max_size:
            raise ValueError(f"warmPool.maxGroupPreparedCapacity {pool.max_group_prepared_capacity} is below maxSize "
                             f"{self.max_size}: Auto Scaling counts in-service instances in it")
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
