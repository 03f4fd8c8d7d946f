"""Shared data tiers: an FSx for Lustre file system linked to the project's S3 prefixes
(`storage.lustre`) and Mountpoint for Amazon S3 mounts of the prefixes (`storage.s3Mount`).

The capacity and throughput rules are the ones FSx enforces at CreateFileSystem, read from the
botocore fsx model 2018-03-01 (CreateFileSystem.StorageCapacity and
CreateFileSystemLustreConfiguration.PerUnitStorageThroughput documentation, botocore 1.44.8, read
2026-11-25) and the FSx for Lustre user guide, "Deployment and storage class options"
(https://docs.aws.amazon.com/fsx/latest/LustreGuide/using-fsx-lustre.html, read 2026-11-25).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from gpucloud.config.fields import ConfigModel, Prefix
from gpucloud.limits import LUSTRE_PERSISTENT_2_THROUGHPUTS as PERSISTENT_2_THROUGHPUTS
from gpucloud.limits import lustre_capacity_allowed

if TYPE_CHECKING:
    from gpucloud.config.access import DataConfig

LUSTRE_MOUNT_PATH = "/fsx"
"""Where every node mounts the file system (the FSx user guide's own examples mount at /fsx)."""
S3_MOUNT_ROOT = "/s3"
"""Mountpoint for Amazon S3 mounts each prefix at /s3/<prefix without its slash>."""

CAPACITY_SOURCE = (
    "botocore fsx model, CreateFileSystem.StorageCapacity: for SCRATCH_2 and PERSISTENT_2 on SSD, "
    "1200 GiB, 2400 GiB, then increments of 2400 GiB (read 2026-11-25)"
)
THROUGHPUT_SOURCE = (
    "botocore fsx model, CreateFileSystemLustreConfiguration.PerUnitStorageThroughput: PERSISTENT_2 SSD "
    "takes 125, 250, 500 or 1000 MB/s/TiB; SCRATCH types take none (read 2026-11-25)"
)


class LustreConfig(ConfigModel):
    """One FSx for Lustre file system for the project, mounted at /fsx on every node."""

    deployment_type: Literal["PERSISTENT_2", "SCRATCH_2"] = "PERSISTENT_2"
    """PERSISTENT_2: replicated in its zone, encrypted with the project key, kept on destroy.
    SCRATCH_2: not replicated (a failed file server loses its data), encrypted with an FSx-owned
    key (FSx takes no customer-managed key for scratch), deleted with the stack."""
    storage_capacity_gib: int = Field(default=1200, ge=1200, alias="storageCapacityGiB", json_schema_extra={
        "oneOf": [{"const": 1200}, {"minimum": 2400, "multipleOf": 2400}]})
    """1200, 2400, then multiples of 2400 GiB: FSx sells no other size."""
    throughput_per_tib: int | None = Field(default=None, alias="throughputPerTiB")
    """PERSISTENT_2 only: 125, 250, 500 or 1000 MB/s per TiB (default 125); what you pay for rises with it."""
    retain_on_delete: bool | None = None
    """Keep the file system when the stack is destroyed; default: true for PERSISTENT_2, false for SCRATCH_2."""
    preload_prefixes: list[Prefix] = Field(default_factory=list, max_length=8)
    """Prefixes (under data.readPrefixes or writePrefixes) whose content one node loads into the file system once,
    after it is created (`lfs hsm_restore`, under a lock on the file system), so no first read waits on S3. Their
    metadata is imported when each prefix is linked."""
    zone: str | None = None
    """The availability zone of its one subnet: one of the stack's zones (checked against them
    before any resource); default: the first zone of the first group. Nodes in other zones mount it
    across zones, which AWS bills as data transfer (the plan names those groups)."""

    @model_validator(mode="after")
    def sold_by_fsx(self) -> LustreConfig:
        if not lustre_capacity_allowed(self.storage_capacity_gib):
            raise ValueError(
                f"storageCapacityGiB {self.storage_capacity_gib} is not a size FSx sells for {self.deployment_type}: "
                f"use 1200, 2400 or a multiple of 2400 ({CAPACITY_SOURCE})"
            )
        if self.deployment_type == "SCRATCH_2" and self.throughput_per_tib is not None:
            raise ValueError(f"throughputPerTiB is set, but SCRATCH_2 has a fixed throughput ({THROUGHPUT_SOURCE})")
        if self.deployment_type == "PERSISTENT_2" and self.throughput_per_tib not in (None, *PERSISTENT_2_THROUGHPUTS):
            raise ValueError(
                f"throughputPerTiB {self.throughput_per_tib} is not sold for PERSISTENT_2: use 125, 250, 500 or 1000 "
                f"({THROUGHPUT_SOURCE})"
            )
        return self

    @property
    def throughput(self) -> int | None:
        """MB/s/TiB for the API: the PERSISTENT_2 default is 125."""
        if self.deployment_type == "SCRATCH_2":
            return None
        return self.throughput_per_tib or 125

    @property
    def retained(self) -> bool:
        return self.retain_on_delete if self.retain_on_delete is not None else self.deployment_type != "SCRATCH_2"


class S3MountConfig(ConfigModel):
    """Mountpoint for Amazon S3 on every node: each read prefix read-only, the write prefix if asked."""

    write_prefix: bool = False
    """Also mount the first write prefix, writable (Mountpoint writes new files sequentially; no
    in-place edits or renames)."""
    install: Literal["ami", "download"] = "download"
    """download: the node fetches AWS's package from s3.amazonaws.com at boot, which needs a way out (egress nat);
    ami: the group's own image (amiId) has `mount-s3`, which the default image lacks (data/image_software.json)."""


class StorageConfig(ConfigModel):
    """Shared tiers next to the nodes' own /scratch (instance store), /data and /persist (EBS)."""

    lustre: LustreConfig | None = None
    s3_mount: S3MountConfig | None = None


def mount_path(prefix: str) -> str:
    """Where the S3 mount of a prefix lands: /s3/datasets/imagenet for datasets/imagenet/."""
    return f"{S3_MOUNT_ROOT}/{prefix.rstrip('/')}"


def lustre_path(prefix: str) -> str:
    """The file system directory a prefix is linked to: /datasets/imagenet/ for datasets/imagenet/
    (under the mount: /fsx/datasets/imagenet/)."""
    return "/" + prefix.rstrip("/") + "/"


def s3_mount_entries(storage: StorageConfig, data: DataConfig | None) -> tuple[str, ...]:
    """The node's `s3_mounts`: `MODE BUCKET PREFIX PATH` per mount, `ro` for each read prefix and
    `rw` for the first write prefix when asked (prefixes and bucket names hold no spaces)."""
    mount = storage.s3_mount
    if mount is None or data is None:
        return ()
    entries = [f"ro {data.bucket} {prefix} {mount_path(prefix)}" for prefix in data.read_prefixes]
    if mount.write_prefix and data.write_prefixes:
        prefix = data.write_prefixes[0]
        entries.append(f"rw {data.bucket} {prefix} {mount_path(prefix)}")
    return tuple(entries)
