"""Rules between `storage` and the rest of the stack: the data prefixes a file system links and a
mount mounts, FSx's limit on associations, and how mount-s3 reaches the nodes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpucloud.config.errors import NAMESPACE
from gpucloud.limits import LUSTRE_MAX_ASSOCIATIONS as MAX_ASSOCIATIONS

if TYPE_CHECKING:
    from gpucloud.config.stack import StackConfig


def storage_problems(config: StackConfig) -> list[tuple[str, str]]:
    """Rules between `storage` and the rest of the stack, each named by the key to change."""
    storage = config.storage
    problems: list[tuple[str, str]] = []
    data = config.data
    prefixes = [*data.read_prefixes, *data.write_prefixes] if data else []
    if storage.lustre and not data:
        problems.append((f"{NAMESPACE}:storage.lustre", "needs data.bucket with readPrefixes or writePrefixes: the "
                         "file system is linked to those prefixes and to nothing else"))
    if storage.lustre and len(prefixes) > MAX_ASSOCIATIONS:
        problems.append((f"{NAMESPACE}:data", f"lists {len(prefixes)} prefixes; an FSx for Lustre file system takes "
                         f"at most {MAX_ASSOCIATIONS} data repository associations (one per prefix)"))
    if storage.lustre and data:
        nested = [(inner, outer) for inner in prefixes for outer in prefixes if inner != outer and inner.startswith(outer)]
        if nested:
            inner, outer = nested[0]
            problems.append((f"{NAMESPACE}:data", (
                f"{inner!r} lies under {outer!r}, so their file system paths would overlap, which FSx refuses for "
                "two data repository associations (pulumi-aws 7.51.1 fsx.DataRepositoryAssociation file_system_path, "
                "read 2026-11-25): list only one of them")))
    if storage.s3_mount:
        if not data:
            problems.append((f"{NAMESPACE}:storage.s3Mount", "needs data.bucket with readPrefixes: it mounts those prefixes"))
        elif storage.s3_mount.write_prefix and not data.write_prefixes:
            problems.append((f"{NAMESPACE}:storage.s3Mount.writePrefix", "is true but data lists no writePrefixes"))
        if storage.s3_mount.install == "download" and config.network.created and config.network.egress == "endpointsOnly":
            # The release bucket is in us-east-1 (documents.buckets.MOUNTPOINT_RELEASE_BUCKET), which an S3
            # gateway endpoint elsewhere cannot reach (VPC user guide, "Gateway endpoints for Amazon S3");
            # in any region the node then installs the package with fresh package lists from the
            # distribution's mirrors (node.shared_storage.install_mount_s3), which only NAT reaches.
            problems.append((f"{NAMESPACE}:storage.s3Mount.install", (
                "download fetches mount-s3 from AWS's release bucket in us-east-1 (a gateway endpoint reaches only "
                "its own region's buckets) and installs it with package lists refreshed from the distribution's "
                "mirrors, which network.egress endpointsOnly cannot reach: use install: ami with an image that "
                "carries mount-s3, or egress: nat")))
    return problems
