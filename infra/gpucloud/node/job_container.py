"""A `gpucloud run` job's container: its image pulled (after an ECR login with the node's role
when it is in a private ECR registry, as a container service's is), and the `docker run` that gives
it the GPUs, the host's network and IPC namespace, and the node's EFA devices."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gpucloud.node.commands import CommandRunner
from gpucloud.node.containers import ecr_region, pull_image
from gpucloud.node.job_processes import container_name

DOCKER_CONFIG_DIR = "run/gpucloud/docker"
"""Under the root, `job-<id>/` keeps a job's ECR login: root-only, outside what the container mounts."""


def pull_job_image(run: CommandRunner, job_id: str, image: str, root: Path,
                   ecr_client: Callable[[str], Any] | None) -> None:
    """Log in to the image's ECR registry and pull it; an image from another registry is left to
    `docker run` to pull. Raises ServiceError saying what failed."""
    region = ecr_region(image)
    if region is None or ecr_client is None:
        return
    pull_image(run, image, region, ecr_client, str(root / DOCKER_CONFIG_DIR / f"job-{job_id}"))


def efa_devices(root: Path) -> list[str]:
    """The EFA verbs devices a container needs passed in (AWS Batch user guide, "Running MNP jobs
    with EFA" and EKS's EFA device plugin both hand /dev/infiniband/uverbsN to the container;
    read 2026-11-25)."""
    return sorted(f"/{path.relative_to(root).as_posix()}" for path in (root / "dev/infiniband").glob("uverbs*"))


def container_argv(job_id: str, image: str, names: Sequence[str], mounts: Sequence[Path], devices: Sequence[str],
                   command: Sequence[str]) -> list[str]:
    """`docker run` with the GPUs, the host's network (NCCL reaches the other nodes and IMDS with
    a hop limit of 1) and IPC namespace (NCCL's shared memory between local ranks). Values reach
    the container by name (`-e NAME`), from docker's own environment, never on the command line.
    EFA needs unlimited locked memory to register buffers (EC2 user guide, "Get started with EFA
    and NCCL"; read 2026-11-25)."""
    argv = ["docker", "run", "--rm", "--name", container_name(job_id), "--gpus", "all",
            "--network", "host", "--ipc", "host"]
    if devices:
        argv += ["--ulimit", "memlock=-1:-1"]
        for device in devices:
            argv += ["--device", device]
    for mount in mounts:
        argv += ["--volume", f"{mount}:{mount}"]
    for name in sorted(names):
        argv += ["--env", name]
    return argv + [image, *command]
