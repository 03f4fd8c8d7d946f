"""Shared data tiers on the node: the project's FSx for Lustre file system at /fsx and Mountpoint for
Amazon S3 mounts under /s3, mounted at boot by `gpucloud-node mount-shared` and checked by the gate.

Stdlib only. A node whose image lacks the Lustre client (no mount.lustre) or mount-s3 fails its
gate with that reason instead of starting without its data.

Facts (read 2026-11-25): the FSx for Lustre user guide, "Mounting from an Amazon EC2 instance":
`mount -t lustre -o relatime,flock <dns name>@tcp:/<mount name> /fsx`; "Installing the Lustre
client": the client is a kernel module matched to the running kernel (the AWS Deep Learning AMIs
ship it). Mountpoint for Amazon S3 (github.com/awslabs/mountpoint-s3, "Installing"): AWS publishes
mount-s3 packages at https://s3.amazonaws.com/mountpoint-s3-release/latest/<arch>/mount-s3.<deb|rpm>;
`mount-s3 [--read-only] [--prefix P] BUCKET DIR`.
"""

from __future__ import annotations

import logging
import os
import platform
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpucloud.node.commands import CommandResult, run_command
from gpucloud.node.config import NodeConfig
from gpucloud.node.packages import Installer

log = logging.getLogger("gpucloud.node.shared_storage")

LUSTRE_MOUNT_OPTIONS = "relatime,flock"
MOUNT_S3_RELEASE = "https://s3.amazonaws.com/mountpoint-s3-release/latest/{arch}/mount-s3.{kind}"
MOUNT_TIMEOUT_S = 300.0

Runner = Callable[[Sequence[str], float], CommandResult]
Which = Callable[[str], "str | None"]

LUSTRE_CLIENT_MISSING = (
    "the Lustre client is not installed on this image (no mount.lustre), so the project's FSx for Lustre "
    "file system cannot be mounted at {path}: use an image with the client for its kernel (the AWS Deep "
    "Learning AMIs carry it; FSx for Lustre user guide, 'Installing the Lustre client')"
)
MOUNT_S3_MISSING = (
    "mount-s3 (Mountpoint for Amazon S3) is not installed on this image, so {path} cannot be mounted: "
    "use an image that carries it, or storage.s3Mount.install: download with a network that reaches "
    "s3.amazonaws.com"
)

MOUNT_S3_NOT_DOWNLOADED = (
    "mount-s3 (Mountpoint for Amazon S3) was to be downloaded and installed at boot (storage.s3Mount.install: "
    "download) and is not, so {path} cannot be mounted: the gpucloud-storage unit's log says why (journalctl -u "
    "gpucloud-storage); the download needs a way to s3.amazonaws.com and the install Ubuntu's package archive"
)


def mount_s3_missing(config: NodeConfig, path: str) -> str:
    """Why the gate refuses a node without mount-s3: the image lacks it, or the boot's download failed."""
    template = MOUNT_S3_NOT_DOWNLOADED if config.s3_mount_install == "download" else MOUNT_S3_MISSING
    return template.format(path=path)


@dataclass(frozen=True)
class S3Mount:
    """One `s3_mounts` entry of node.json: `MODE BUCKET PREFIX PATH`."""

    writable: bool
    bucket: str
    prefix: str
    path: str

    @classmethod
    def parse(cls, entry: str) -> S3Mount:
        parts = entry.split(" ")
        if len(parts) != 4 or parts[0] not in ("ro", "rw") or not parts[3].startswith("/"):
            raise ValueError(f"s3_mounts entry {entry!r} is not 'ro|rw BUCKET PREFIX /PATH'")
        return cls(parts[0] == "rw", parts[1], parts[2], parts[3])

    def argv(self, region: str | None) -> list[str]:
        argv = ["mount-s3", "--prefix", self.prefix, "--allow-other"]
        argv += ["--allow-overwrite"] if self.writable else ["--read-only"]
        if region:
            argv += ["--region", region]
        return [*argv, self.bucket, self.path]


def mounted_filesystems(mounts_file: Path = Path("/proc/self/mounts")) -> dict[str, tuple[str, str]]:
    """Mount point -> (source, file system type), as the kernel lists them."""
    table: dict[str, tuple[str, str]] = {}
    try:
        lines = mounts_file.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return table
    for line in lines:
        fields = line.split()
        if len(fields) >= 3:
            table[fields[1].replace("\\040", " ")] = (fields[0], fields[2])
    return table


def lustre_client_present(which: Which = shutil.which) -> bool:
    return bool(which("mount.lustre") or Path("/sbin/mount.lustre").exists())


def shared_storage_problems(
    config: NodeConfig, which: Which = shutil.which, mounts: dict[str, tuple[str, str]] | None = None
) -> list[str]:
    """What the gate reports about the shared tiers: each missing client or mount, with its reason."""
    table = mounted_filesystems() if mounts is None else mounts
    problems = []
    if config.lustre_source:
        path = config.lustre_mount_path
        if not lustre_client_present(which):
            problems.append(LUSTRE_CLIENT_MISSING.format(path=path))
        elif table.get(path, ("", ""))[1] != "lustre":
            problems.append(f"{path} is not mounted: the FSx for Lustre file system {config.lustre_source} "
                            "did not mount at boot (see the gpucloud-storage unit's log)")
    for entry in config.s3_mounts:
        mount = S3Mount.parse(entry)
        if not which("mount-s3"):
            problems.append(mount_s3_missing(config, mount.path))
            break
        if not table.get(mount.path, ("", ""))[1].startswith("fuse"):
            problems.append(f"{mount.path} is not mounted: Mountpoint for Amazon S3 did not mount "
                            f"s3://{mount.bucket}/{mount.prefix} at boot")
    return problems


def mount_shared(
    config: NodeConfig,
    run: Runner = run_command,
    which: Which = shutil.which,
    mounts: dict[str, tuple[str, str]] | None = None,
    machine: str | None = None,
) -> list[str]:
    """Mount what node.json lists; return what failed (empty: all mounted or already there)."""
    table = mounted_filesystems() if mounts is None else mounts
    failures = []
    if config.lustre_source and table.get(config.lustre_mount_path, ("", ""))[1] != "lustre":
        if not lustre_client_present(which):
            failures.append(LUSTRE_CLIENT_MISSING.format(path=config.lustre_mount_path))
        else:
            os.makedirs(config.lustre_mount_path, exist_ok=True)
            result = run(["mount", "-t", "lustre", "-o", LUSTRE_MOUNT_OPTIONS, config.lustre_source,
                          config.lustre_mount_path], MOUNT_TIMEOUT_S)
            if not result.ok:
                failures.append(f"mount {config.lustre_source} at {config.lustre_mount_path}: "
                                f"{result.describe_failure(MOUNT_TIMEOUT_S)}")
    entries = [S3Mount.parse(entry) for entry in config.s3_mounts]
    if entries and not which("mount-s3") and config.s3_mount_install == "download":
        failure = install_mount_s3(run, which, machine or platform.machine())
        if failure:
            failures.append(failure)
    for mount in entries:
        if table.get(mount.path, ("", ""))[1].startswith("fuse"):
            continue
        if not which("mount-s3"):
            failures.append(mount_s3_missing(config, mount.path))
            break
        os.makedirs(mount.path, exist_ok=True)
        result = run(mount.argv(config.region), MOUNT_TIMEOUT_S)
        if not result.ok:
            failures.append(f"mount-s3 s3://{mount.bucket}/{mount.prefix} at {mount.path}: "
                            f"{result.describe_failure(MOUNT_TIMEOUT_S)}")
    return failures


def install_mount_s3(run: Runner, which: Which, machine: str, installer: Installer | None = None) -> str | None:
    """Fetch AWS's mount-s3 package for this architecture and install it with its dependencies
    (`apt-get install ./mount-s3.deb` resolves them from fresh package lists); the failure, or None.
    curl retries transient download errors itself; the install waits for the package locks."""
    arch = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}.get(machine)
    if arch is None:
        return f"mount-s3 has no package for the {machine} architecture"
    kind = "deb" if which("apt-get") else "rpm"
    package = f"/tmp/mount-s3.{kind}"
    download = ["curl", "-fsSL", "--retry", "3", "--retry-all-errors", "--connect-timeout", "20", "-o", package,
                MOUNT_S3_RELEASE.format(arch=arch, kind=kind)]
    result = run(download, MOUNT_TIMEOUT_S)
    if not result.ok:
        return f"installing mount-s3 (curl {download[-1]}): {result.describe_failure(MOUNT_TIMEOUT_S)}"
    failure = (installer or Installer(run, which=which)).install([package])
    return f"installing mount-s3: {failure}" if failure else None
