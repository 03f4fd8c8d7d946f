"""EBS volumes at boot: attach the group's persistent volume by tag, and find the local block
device of any attached volume.

On Nitro instances a volume attached as /dev/sdf shows up as /dev/nvmeNn1 in whatever order the
kernel enumerates it, so it is found by volume id, which the NVMe controller reports as its serial
("vol0123..." without the dash), never by guessing from the attachment name.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpucloud.node.config import NodeConfig
from gpucloud.node.imds import InstanceMetadata, MetadataError
from gpucloud.node.aws_calls import ClientFactory, LifecycleError, boto3_client, call_aws, identify
from gpucloud.node.retry import Backoff

Clock = Callable[[], float]
Sleep = Callable[[float], None]

log = logging.getLogger("gpucloud.node.volumes")


class VolumeError(RuntimeError):
    """The volume could not be found, attached or located on this instance."""


def find_local_device(
    volume_id: str,
    device_name: str | None = None,
    sys_block: Path = Path("/sys/block"),
    dev: Path = Path("/dev"),
) -> Path | None:
    """The volume's block device: the NVMe namespace whose controller serial is the volume id,
    else udev's by-id link, else the attachment name itself (Xen instances, or Amazon Linux,
    whose udev rules link /dev/sdf to the NVMe device)."""
    serial = volume_id.replace("-", "")
    for block in sorted(sys_block.glob("nvme*n*")):
        try:
            if (block / "device" / "serial").read_text(errors="replace").strip() == serial:
                return dev / block.name
        except OSError:
            continue
    candidates = [dev / "disk" / "by-id" / f"nvme-Amazon_Elastic_Block_Store_{serial}"]
    if device_name:
        name = Path(device_name).name
        candidates += [dev / name, dev / name.replace("sd", "xvd", 1)]
    return next((path.resolve() for path in candidates if path.exists()), None)


def local_device_for(
    device_name: str,
    config: NodeConfig,
    metadata: InstanceMetadata,
    client_factory: ClientFactory = boto3_client,
    sleep: Sleep = time.sleep,
    clock: Clock = time.monotonic,
    sys_block: Path = Path("/sys/block"),
    dev: Path = Path("/dev"),
) -> str:
    """Local path of the EBS volume the launch template attaches as device_name (e.g. /dev/sdf)."""
    instance_id, ec2 = _connect(config, metadata, client_factory)
    response = _call("DescribeInstances", lambda: ec2.describe_instances(InstanceIds=[instance_id]), sleep)
    volume_id = next(
        (
            mapping["Ebs"]["VolumeId"]
            for reservation in response["Reservations"]
            for instance in reservation["Instances"]
            for mapping in instance.get("BlockDeviceMappings", [])
            if mapping.get("DeviceName") == device_name and "Ebs" in mapping
        ),
        None,
    )
    if volume_id is None:
        raise VolumeError(f"no EBS volume is attached to {instance_id} as {device_name}")
    deadline = clock() + config.volume_wait_s
    return str(_wait_for_device(volume_id, device_name, deadline, sleep, clock, sys_block, dev))


def attach_persistent_volume(
    config: NodeConfig,
    metadata: InstanceMetadata,
    client_factory: ClientFactory = boto3_client,
    sleep: Sleep = time.sleep,
    clock: Clock = time.monotonic,
    sys_block: Path = Path("/sys/block"),
    dev: Path = Path("/dev"),
    poll_s: float = 5.0,
) -> str:
    """Attach the volume tagged key=value in this instance's availability zone; return its device.

    A volume still held by a terminating predecessor is waited for (up to volume_wait_s) until it
    is `available`. With several candidates the first available by id is taken; losing a race for
    it to another instance only means looking again at the next poll.
    """
    key, value = config.persistent_volume_tag_key, config.persistent_volume_tag_value
    if not key or value is None:
        raise VolumeError("no persistent volume tag is configured")
    instance_id, ec2 = _connect(config, metadata, client_factory)
    try:
        zone = metadata.availability_zone()
    except MetadataError as error:
        raise VolumeError(f"cannot read the availability zone: {error}") from error
    filters = [{"Name": f"tag:{key}", "Values": [value]}, {"Name": "availability-zone", "Values": [zone]}]
    deadline = clock() + config.volume_wait_s
    while True:
        volumes = _call("DescribeVolumes", lambda: ec2.describe_volumes(Filters=filters)["Volumes"], sleep)
        if not volumes:
            raise VolumeError(f"no EBS volume tagged {key}={value} in {zone}")
        attachment = _attachment(volumes, instance_id)
        if attachment and attachment[1] == "attached":
            break
        available = sorted(volume["VolumeId"] for volume in volumes if volume["State"] == "available")
        if not attachment and available:
            _try_attach(ec2, available[0], instance_id, config.persistent_volume_device, sleep)
        if clock() >= deadline:
            states = ", ".join(f"{volume['VolumeId']} {volume['State']}" for volume in volumes)
            raise VolumeError(
                f"no volume tagged {key}={value} attached within {config.volume_wait_s:g} s ({states})"
            )
        log.info("waiting for a volume tagged %s=%s in %s", key, value, zone)
        sleep(poll_s)
    volume_id = attachment[0]
    log.info("persistent volume %s is attached to %s", volume_id, instance_id)
    return str(
        _wait_for_device(volume_id, config.persistent_volume_device, deadline, sleep, clock, sys_block, dev)
    )


def _try_attach(ec2: Any, volume_id: str, instance_id: str, device: str, sleep: Sleep) -> None:
    log.info("attaching %s to %s as %s", volume_id, instance_id, device)
    try:
        _call(
            f"AttachVolume {volume_id}",
            lambda: ec2.attach_volume(VolumeId=volume_id, InstanceId=instance_id, Device=device),
            sleep,
        )
    except VolumeError as error:
        code = getattr(error.__cause__, "response", {}).get("Error", {}).get("Code")
        if code not in ("VolumeInUse", "IncorrectState"):
            raise
        log.info("%s was taken meanwhile (%s); looking again", volume_id, code)


def _attachment(volumes: list[dict[str, Any]], instance_id: str) -> tuple[str, str] | None:
    for volume in volumes:
        for attachment in volume.get("Attachments", []):
            if attachment.get("InstanceId") == instance_id and attachment.get("State") in (
                "attaching",
                "attached",
            ):
                return volume["VolumeId"], attachment["State"]
    return None


def _wait_for_device(
    volume_id: str,
    device_name: str | None,
    deadline: float,
    sleep: Sleep,
    clock: Clock,
    sys_block: Path,
    dev: Path,
) -> Path:
    """The kernel shows a new attachment a moment after EC2 reports it attached."""
    while True:
        device = find_local_device(volume_id, device_name, sys_block, dev)
        if device is not None:
            return device
        if clock() >= deadline:
            raise VolumeError(f"{volume_id} is attached but no local block device shows it")
        sleep(1.0)


def _connect(
    config: NodeConfig, metadata: InstanceMetadata, client_factory: ClientFactory
) -> tuple[str, Any]:
    try:
        instance_id, region = identify(config, metadata)
    except LifecycleError as error:
        raise VolumeError(str(error)) from error
    return instance_id, client_factory("ec2", region)


def _call(what: str, operation: Callable[[], Any], sleep: Sleep) -> Any:
    try:
        return call_aws(what, operation, Backoff(), sleep)
    except LifecycleError as error:
        raise VolumeError(str(error)) from error.__cause__
