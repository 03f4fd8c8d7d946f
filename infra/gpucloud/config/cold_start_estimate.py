"""The cold-start budget of a group: how long a new node takes, phase by phase, from launch to
serving, from what the stack file says and the documented figures of `data/cold_start.json`; and
the timers that act on a node before it is ready.

A node boots (the image's family), the bootstrap stub fetches and starts the agent, the storage
unit mounts the shared tiers, and the gate checks the GPUs and completes the launch hook: the node
is InService. Then the services unit pulls each container image, copies the weights, and the
server loads them and answers its health check; the load balancer then needs its healthy checks
in a row, and slow start ramps the node's share of requests.

Three timers act in that time. The launch hook ABANDONs (replaces) a node that sends no heartbeat
within its timeout; the agent beats from the moment it runs until the gate completes the hook. The
health check grace period starts at InService ("Set the health check grace period", EC2 Auto
Scaling user guide, read 2026-11-28) and is also the instance warmup of instance refreshes and of
the endpoint's scaling: past it an instance refresh goes on to replace the next nodes and the
endpoint's target tracking counts the node as serving. A container's health check stops the
container after its start period, in a loop while the server still loads.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any

from gpucloud.config.cold_start import weights_tier
from gpucloud.config.errors import NAMESPACE

if TYPE_CHECKING:
    from gpucloud.config.groups import GroupConfig
    from gpucloud.config.services import ContainerConfig
    from gpucloud.config.stack import StackConfig

MB_PER_GIB = 1073.741824
DEFAULT_GRACE_PERIOD_SECONDS = 900
MAX_GRACE_PERIOD_SECONDS = 7200
LAUNCH_HOOK_TIMEOUT_SECONDS = 900
"""components.gpu_group.LAUNCH_HOOK_TIMEOUT_SECONDS (a test holds them equal): the hook's heartbeat timeout."""
LAUNCH_HEARTBEAT_LIMIT_SECONDS = 3720
"""userdata.layout.LAUNCH_HEARTBEAT_LIMIT_SECONDS (a test holds them equal): how long the agent beats at most."""


@functools.cache
def figures() -> dict[str, Any]:
    """The documented figures, each with its source (`data/cold_start.json`)."""
    return json.loads(resources.files("gpucloud").joinpath("data/cold_start.json").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Phase:
    name: str
    seconds: float
    basis: str
    """How the figure was reached, in words (size at rate, the documented figure)."""


@dataclass(frozen=True)
class Timer:
    name: str
    key: str
    """The stack file key that sets it, or that a reviewer changes to fit the node in it."""
    limit_seconds: float
    needed_seconds: float
    source: str
    """stack file, default, or estimate (a default that follows the estimate)."""
    consequence: str

    @property
    def fits(self) -> bool:
        return self.needed_seconds <= self.limit_seconds


@dataclass(frozen=True)
class ColdStartBudget:
    group: str
    path: str
    """`launch`, or `warm pool` where scale-outs leave a pool whose instances pulled the images."""
    phases: tuple[Phase, ...]
    timers: tuple[Timer, ...]
    fixes: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def seconds(self, *names: str) -> float:
        return sum(phase.seconds for phase in self.phases if phase.name in names)

    @property
    def in_service_seconds(self) -> float:
        return self.seconds(*IN_SERVICE_PHASES)

    @property
    def serving_seconds(self) -> float:
        return self.seconds(*(phase.name for phase in self.phases))

    @property
    def failing(self) -> tuple[Timer, ...]:
        return tuple(timer for timer in self.timers if not timer.fits)


IN_SERVICE_PHASES = ("boot", "agent", "mount", "gate")
SERVING_PHASES = ("pull", "weights", "load", "healthy", "slowStart")


def image_family(group: GroupConfig) -> str:
    """The default image is the DLAMI on Ubuntu 22.04; an amiId of the group's own is `custom`."""
    return "custom" if group.ami_id else "ubuntu"


def _rate(name: str) -> float:
    return float(figures()[name]["value"])


def _lustre_throughput(config: StackConfig) -> float:
    lustre = config.storage.lustre
    assert lustre is not None
    per_tib = lustre.throughput or figures()["lustreThroughputPerTiB"]["SCRATCH_2"]
    return per_tib * lustre.storage_capacity_gib / 1024


def _transfer(size_gib: float, rate: float, what: str) -> Phase:
    return Phase("", size_gib * MB_PER_GIB / rate, f"{size_gib:g} GiB at {rate:g} MB/s ({what})")


def _disk(instance_store: bool) -> tuple[float, str]:
    if instance_store:
        return _rate("instanceStoreMBps"), "instance store"
    return _rate("rootVolumeMBps"), "gp3 root volume"


def _copy(config: StackConfig, container: ContainerConfig, instance_store: bool) -> Phase | None:
    """The node's copy of the weights from S3 to /scratch, at the slower of S3 and the disk."""
    weights = container.weights
    if weights is None or weights_tier(config, weights) != "scratch":
        return None
    disk, disk_name = _disk(instance_store)
    return _transfer(weights.size_gib, min(_rate("s3ReadMBps"), disk), f"S3 to /scratch on the {disk_name}")


def _load(config: StackConfig, container: ContainerConfig, instance_store: bool) -> Phase | None:
    """The server's load of its weights from their tier into the GPU while it starts: the slower of
    the tier and the measured load into GPU memory."""
    weights = container.weights
    if weights is None:
        return None
    tier, into_gpu = weights_tier(config, weights), _rate("gpuLoadMBps")
    if tier == "scratch":
        disk, disk_name = _disk(instance_store)
        return _transfer(weights.size_gib, min(disk, into_gpu), f"{container.name} loads from /scratch on the {disk_name}")
    if tier == "mountpoint":
        return _transfer(weights.size_gib, min(_rate("s3ReadMBps"), into_gpu), f"{container.name} loads from S3 through Mountpoint")
    lustre = config.storage.lustre
    preloaded = lustre is not None and any(weights.prefix.startswith(p) for p in lustre.preload_prefixes)
    share = 1.0 if preloaded else _rate("lustreLazyLoadShare")
    what = "preloaded Lustre" if preloaded else "Lustre, lazy-loading from S3 at first read"
    return _transfer(weights.size_gib, min(_lustre_throughput(config) * share, into_gpu), f"{container.name} loads from {what}")


def _weights_phases(config: StackConfig, containers: list[ContainerConfig], instance_store: bool) -> list[Phase]:
    found = []
    for name, step in (("weights", _copy), ("load", _load)):
        parts = [part for part in (step(config, container, instance_store) for container in containers) if part]
        if parts:
            found.append(Phase(name, sum(part.seconds for part in parts), "; ".join(part.basis for part in parts)))
    return found


def phases(config: StackConfig, group: GroupConfig, instance_store: bool, from_pool: bool,
           image_sizes: Mapping[str, float] | None = None) -> tuple[list[Phase], list[str]]:
    """The node's phases in order, and what the estimate could not count. `image_sizes`: GiB per
    image reference from the account facts (ECR), for containers the stack file gives no size."""
    table = figures()
    family = image_family(group)
    found = [Phase("boot", table["boot"][family]["seconds"], f"{family} image, documented figure"),
             Phase("agent", table["agent"]["seconds"], "bundle fetch, install and boot steps"),
             *_mount_phase(config), Phase("gate", table["gate"]["seconds"], "GPU checks and the launch hook")]
    notes: list[str] = []
    containers = group.services.containers
    sizes = {c.name: c.image_size_gib or (image_sizes or {}).get(c.image) for c in containers}
    notes += [f"{name}: imageSizeGiB not given, its pull is not counted" for name, size in sizes.items() if not size]
    notes += [f"{c.name}: image size from the ECR facts" for c in containers if sizes[c.name] and not c.image_size_gib]
    if any(sizes.values()) and from_pool:
        found.append(Phase("pull", 0.0, "pulled while the instance waited in the warm pool"))
    elif any(sizes.values()):
        total = sum(size for size in sizes.values() if size)
        found.append(_named("pull", _transfer(total, _rate("imagePullMBps"), "documented pull rate")))
    found += _weights_phases(config, containers, instance_store)
    endpoint = group.endpoint
    if endpoint is not None:
        found.append(Phase("healthy", endpoint.healthy_threshold * endpoint.health_check_interval_seconds,
                           f"endpoint: {endpoint.healthy_threshold} healthy checks x {endpoint.health_check_interval_seconds} s"))
        if endpoint.slow_start_seconds:
            found.append(Phase("slowStart", endpoint.slow_start_seconds, "endpoint slowStartSeconds"))
    return found, notes


def _named(name: str, phase: Phase) -> Phase:
    return Phase(name, phase.seconds, phase.basis)


def _mount_phase(config: StackConfig) -> list[Phase]:
    table = figures()
    parts = []
    if config.storage.lustre is not None:
        parts.append(("Lustre mount", table["lustreMount"]["seconds"]))
    if config.storage.s3_mount is not None and config.storage.s3_mount.install == "download":
        parts.append(("mount-s3 download and install", table["s3MountDownload"]["seconds"]))
    if not parts:
        return []
    return [Phase("mount", sum(seconds for _, seconds in parts), ", ".join(what for what, _ in parts))]


def _serving_after_in_service(found: list[Phase]) -> float:
    return sum(phase.seconds for phase in found if phase.name in SERVING_PHASES)


def default_grace_period(after_in_service: float) -> int:
    """The estimate from InService to serving with the margin, rounded up to the minute, and never
    below the 900 s the group always had."""
    padded = math.ceil(after_in_service * _rate("margin") / 60) * 60
    return min(MAX_GRACE_PERIOD_SECONDS, max(DEFAULT_GRACE_PERIOD_SECONDS, padded))


def pool_path(group: GroupConfig) -> bool:
    """Scale-outs come from a warm pool whose instances pulled the images while they waited. The
    pool holds at least its minSize, and without maxGroupPreparedCapacity the difference between
    the group's maximum and desired capacity ("Warm pools for Amazon EC2 Auto Scaling", EC2 Auto
    Scaling user guide, read 2026-11-28): an empty pool sends scale-outs straight into the group."""
    pool = group.warm_pool
    if pool is None or not pool.prepull_images:
        return False
    prepared = pool.max_group_prepared_capacity if pool.max_group_prepared_capacity is not None else group.max_size
    return pool.min_size > 0 or prepared > group.initial_capacity


def grace_period_seconds(config: StackConfig, group: GroupConfig, instance_store: bool) -> int:
    """The group's grace period: the stack file's, else the default that follows the estimate of a
    launch straight into the group (the longer path: a pool can run empty)."""
    if "health_check_grace_period_seconds" in group.model_fields_set:
        return group.health_check_grace_period_seconds
    found, _ = phases(config, group, instance_store, from_pool=False)
    return default_grace_period(_serving_after_in_service(found))


def budget(config: StackConfig, index: int, instance_store: bool,
           image_sizes: Mapping[str, float] | None = None) -> ColdStartBudget:
    """The group's phases on its usual path and every timer compared with them."""
    group = config.groups[index]
    key = f"{NAMESPACE}:groups[{index}]"
    from_pool = pool_path(group)
    found, notes = phases(config, group, instance_store, from_pool, image_sizes)
    set_by_user = "health_check_grace_period_seconds" in group.model_fields_set
    grace = grace_period_seconds(config, group, instance_store)
    in_service = sum(p.seconds for p in found if p.name in IN_SERVICE_PHASES)
    timers = [
        Timer("launch hook, first heartbeat", f"{key}.amiId", LAUNCH_HOOK_TIMEOUT_SECONDS,
              sum(p.seconds for p in found if p.name in ("boot", "agent")), "default",
              "the hook ABANDONs a node whose agent has not started beating: it is replaced"),
        Timer("launch hook, heartbeats", f"{key}.amiId", LAUNCH_HOOK_TIMEOUT_SECONDS + LAUNCH_HEARTBEAT_LIMIT_SECONDS,
              in_service, "default", "the agent stops beating and the hook ABANDONs the node: it is replaced"),
        Timer("health check grace period", f"{key}.healthCheckGracePeriodSeconds", grace,
              _serving_after_in_service(found), "stack file" if set_by_user else "estimate",
              "an instance refresh replaces the next nodes, and the endpoint's scaling counts this one as serving, "
              "before it serves"),
        *_start_period_timers(config, group, key, instance_store),
    ]
    if from_pool:
        direct, _ = phases(config, group, instance_store, False, image_sizes)
        notes.append(f"a launch straight into the group (pool empty) pulls too: {_serving_after_in_service(direct):.0f} s "
                     "from InService to serving")
    return ColdStartBudget(group.name, "warm pool" if from_pool else "launch", tuple(found), tuple(timers),
                           _fixes(config, group, key), tuple(notes))


def _start_period_timers(config: StackConfig, group: GroupConfig, key: str, instance_store: bool) -> list[Timer]:
    """A container that reads its weights while it starts must answer before its checks count."""
    timers = []
    for number, container in enumerate(group.services.containers):
        check, load = container.health_check, _load(config, container, instance_store)
        if load is None or check is None:
            continue
        timers.append(Timer(
            f"{container.name} start period", f"{key}.services.containers[{number}].healthCheck.startPeriodSeconds",
            check.start_period_seconds + check.unhealthy_threshold * check.interval_seconds, load.seconds,
            "stack file" if "start_period_seconds" in check.model_fields_set else "default",
            "the agent stops the container while it still loads its weights, and systemd starts it again, in a loop"))
    return timers


def _fixes(config: StackConfig, group: GroupConfig, key: str) -> tuple[str, ...]:
    """What shortens the time from InService to serving, each with the key that turns it on."""
    fixes = []
    pool_allowed = len(group.instance_types) == 1 and not group.uses_spot and group.capacity_block is None
    if group.services.containers and pool_allowed and not pool_path(group):
        fixes.append(f"{key}.warmPool with prepullImages: true (instances wait stopped, billed for their volumes only)")
    for number, container in enumerate(group.services.containers):
        weights = container.weights
        if weights is not None and config.storage.lustre is not None and weights_tier(config, weights) != "fsx":
            fixes.append(f"{key}.services.containers[{number}].weights.to: fsx with {NAMESPACE}:storage.lustre."
                         "preloadPrefixes (read from the file system, loaded once)")
    return tuple(fixes)
