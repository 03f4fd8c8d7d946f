"""`launch` and `launch-stop`: one node's share of a `gpucloud run` job.

`gpucloud run` sends the same `gpucloud-node launch` to every node of the job through SSM Run
Command: the stack's job document (`gpucloud.documents.jobs`) turns its parameters into this
command's flags, and tests/ops/test_job_document_runs_launcher.py runs one into the other. Each node
finds its rank from its own private IPv4 in the ordered node list, writes the job's hostfile and
environment under /run/gpucloud/jobs/JOB_ID/, restores the job's checkpoint on a resumed attempt,
runs the command (on the host, or in a container with host networking and the GPUs, pulled first
with an ECR login when the image is in a private ECR registry, as a container service's), passes its
output through to SSM, syncs the files the command wrote or changed back to the job's URI when it
has exited, and exits with the command's status. Every node shares the one URI, as a shared file
system would be shared: rank 0 (wherever the rendezvous put it) writes, or each rank under its own
names, and every node restores all of it.

The command's argv runs with no shell. In its arguments, `$NAME` and `${NAME}` of the job's own
variables (RENDEZVOUS_NAMES) become their values on this node, so `torchrun --nnodes '$NNODES'`
works as sent; any other `$` stays as it is (run `bash -c '...'` for a shell).

GPUCLOUD_ROOT redirects /run and /etc (tests); GPUCLOUD_NODE_IPV4 stands in for the metadata
service's local-ipv4 where there is none (tests and the recorded GPU run only: SSM never sets it).
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
import logging
import os
import re
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpucloud.node.checkpoints import CheckpointError, CheckpointStore, file_states, unchanged_files
from gpucloud.node.commands import CommandRunner
from gpucloud.node.job_container import container_argv, efa_devices, pull_job_image
from gpucloud.node.imds import InstanceMetadata, MetadataError
from gpucloud.node.job_processes import (
    DRAINED,
    EXIT_USAGE,
    JOB_ID_PATTERN,
    container_name,
    job_dir,
    launcher_lock,
    running_pid,
    signal_group,
    terminate_with_parent,
)
from gpucloud.node.services import ServiceError
from gpucloud.node.tuning import EFA_BINARY_DIRS, EFA_ENVIRONMENT_PATH, EFA_LIBRARY_DIRS, root_path

NODE_IPV4_ENV = "GPUCLOUD_NODE_IPV4"
DEFAULT_PORT = 29500

EXIT_CHECKPOINT = 74
"""sysexits.h EX_IOERR: the checkpoint could not be restored before, or saved after, the command."""
EXIT_DRAINED = 75
"""sysexits.h EX_TEMPFAIL: the drain stopped the job because this node is going (spot notice,
scale-in, replacement); the checkpoint was synced, and the job should resume elsewhere."""
EXIT_IMAGE = 69
"""sysexits.h EX_UNAVAILABLE: the job's private ECR image could not be pulled; the command did not start."""
EXIT_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126
"""The shell's statuses for a command that is missing or cannot be run."""

RENDEZVOUS_NAMES = (
    "MASTER_ADDR", "MASTER_PORT", "NODE_RANK", "NNODES", "NPROC_PER_NODE", "WORLD_SIZE",
    "GPUCLOUD_JOB_ID", "GPUCLOUD_ATTEMPT", "GPUCLOUD_HOSTFILE", "GPUCLOUD_CHECKPOINT_DIR",
    "GPUCLOUD_CHECKPOINT_URI",
)

log = logging.getLogger("gpucloud.node.launcher")


class LaunchError(RuntimeError):
    """The job cannot start on this node; `status` is the launcher's exit status."""

    def __init__(self, message: str, status: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class JobSpec:
    """What `gpucloud run` asked every node of the job to do."""

    job_id: str
    nodes: tuple[str, ...]
    command: tuple[str, ...]
    port: int = DEFAULT_PORT
    gpus_per_node: int | None = None
    image: str | None = None
    attempt: int = 0
    checkpoint_uri: str | None = None

    def __post_init__(self) -> None:
        if not JOB_ID_PATTERN.match(self.job_id):
            raise LaunchError(f"job id {self.job_id!r} does not match {JOB_ID_PATTERN.pattern}")
        if not self.nodes:
            raise LaunchError("--nodes names no node")
        if len(set(self.nodes)) != len(self.nodes):
            raise LaunchError(f"--nodes names a node twice: {','.join(self.nodes)}")
        if not self.command:
            raise LaunchError("the command is empty")
        if not 1 <= self.port <= 65535:
            raise LaunchError(f"--port {self.port} is not a TCP port")
        if self.gpus_per_node is not None and self.gpus_per_node < 1:
            raise LaunchError(f"--gpus-per-node must be at least 1, not {self.gpus_per_node}")
        if self.attempt < 0:
            raise LaunchError(f"--attempt must be 0 or more, not {self.attempt}")


def parse_nodes(text: str) -> tuple[str, ...]:
    """IPv4 addresses, comma-separated, in the job's order (the first is the master)."""
    nodes = []
    for item in (part.strip() for part in text.split(",")):
        try:
            nodes.append(str(ipaddress.IPv4Address(item)))
        except ValueError:
            raise LaunchError(f"--nodes: {item!r} is not an IPv4 address") from None
    return tuple(nodes)


def decode_command(encoded: str) -> tuple[str, ...]:
    """The user's argv: base64 (standard alphabet) of a JSON list of strings."""
    try:
        argv = json.loads(base64.b64decode(encoded, validate=True).decode("utf-8"))
    except (binascii.Error, UnicodeDecodeError, ValueError) as error:
        raise LaunchError(f"--command-b64 is not base64 of JSON: {error}") from None
    if not isinstance(argv, list) or not argv or not all(isinstance(item, str) for item in argv):
        raise LaunchError("--command-b64 must hold a non-empty JSON list of strings")
    return tuple(argv)


def encode_command(argv: Sequence[str]) -> str:
    return base64.b64encode(json.dumps(list(argv)).encode("utf-8")).decode("ascii")


def local_ipv4(metadata: InstanceMetadata, environ: Mapping[str, str] = os.environ) -> str:
    """This node's primary private IPv4, the address `gpucloud run` lists it by."""
    override = environ.get(NODE_IPV4_ENV)
    if override:
        return override
    try:
        return metadata.require("/latest/meta-data/local-ipv4").strip()
    except MetadataError as error:
        raise LaunchError(f"cannot read this node's private IPv4 from instance metadata: {error}") from error


def node_rank(nodes: Sequence[str], address: str) -> int:
    if address not in nodes:
        raise LaunchError(f"this node ({address}) is not one of the job's nodes ({','.join(nodes)}); not starting")
    return list(nodes).index(address)


def count_gpus(run: CommandRunner, nvidia_smi: str, timeout_s: float) -> int:
    """GPUs on this node: the lines of `nvidia-smi -L`."""
    result = run([nvidia_smi, "-L"], timeout_s)
    if not result.ok:
        raise LaunchError(f"cannot count GPUs ({result.describe_failure(timeout_s)}); pass --gpus-per-node")
    count = sum(1 for line in result.stdout.splitlines() if line.startswith("GPU "))
    if count == 0:
        raise LaunchError("nvidia-smi -L lists no GPU; pass --gpus-per-node")
    return count


def hostfile_text(nodes: Sequence[str], slots: int) -> str:
    """One line per node, `IP slots=K`, as MPI and DeepSpeed hostfiles read it."""
    return "".join(f"{node} slots={slots}\n" for node in nodes)


def rendezvous_environment(spec: JobSpec, rank: int, nproc: int, hostfile: Path, checkpoint_dir: Path) -> dict[str, str]:
    values = {
        "MASTER_ADDR": spec.nodes[0],
        "MASTER_PORT": str(spec.port),
        "NODE_RANK": str(rank),
        "NNODES": str(len(spec.nodes)),
        "NPROC_PER_NODE": str(nproc),
        "WORLD_SIZE": str(len(spec.nodes) * nproc),
        "GPUCLOUD_JOB_ID": spec.job_id,
        "GPUCLOUD_ATTEMPT": str(spec.attempt),
        "GPUCLOUD_HOSTFILE": str(hostfile),
        "GPUCLOUD_CHECKPOINT_DIR": str(checkpoint_dir),
    }
    if spec.checkpoint_uri:
        values["GPUCLOUD_CHECKPOINT_URI"] = spec.checkpoint_uri
    return values


_REFERENCE = re.compile(r"\$(?:\{([A-Z_][A-Z0-9_]*)\}|([A-Z_][A-Z0-9_]*))")


def expand_arguments(argv: Sequence[str], values: Mapping[str, str]) -> list[str]:
    """`$NAME` and `${NAME}` of the job's variables replaced by their values; every other `$`
    left alone, since no shell reads the argv."""
    known = {name: value for name, value in values.items() if name in RENDEZVOUS_NAMES}

    def value_of(match: re.Match) -> str:
        name = match.group(1) or match.group(2)
        return known.get(name, match.group(0))

    return [_REFERENCE.sub(value_of, argument) for argument in argv]


def read_environment_file(path: Path) -> dict[str, str]:
    """NAME=VALUE lines, as systemd's EnvironmentFile= and `docker --env-file` read them."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    values = {}
    for line in text.splitlines():
        name, equals, value = line.strip().partition("=")
        if equals and name and not name.startswith("#"):
            values[name] = value
    return values


def host_environment(base: Mapping[str, str], fabric: Mapping[str, str], job: Mapping[str, str],
                     exists: Callable[[str], bool] = os.path.isdir) -> dict[str, str]:
    """The launcher's environment, the agent's NCCL/EFA values and the job's. On an EFA node the
    EFA libraries and tools join the search paths as the login profile adds them, since SSM's
    shell reads no profile."""
    environment = {**base, **fabric, **job}
    if fabric:
        for name, directories in (("LD_LIBRARY_PATH", EFA_LIBRARY_DIRS), ("PATH", EFA_BINARY_DIRS)):
            present = [directory for directory in directories if exists(directory)]
            if present:
                environment[name] = ":".join(present + ([base[name]] if base.get(name) else []))
    return environment


def exit_status(returncode: int) -> int:
    """A command killed by signal N exits 128+N, as a shell reports it."""
    return 128 - returncode if returncode < 0 else returncode


@dataclass
class Launch:
    """One node's run of a job. `spawn` and `metadata` are injected for tests."""

    spec: JobSpec
    metadata: InstanceMetadata
    run: CommandRunner
    checkpoint_root: Path
    store_for: Callable[[str], CheckpointStore]
    nvidia_smi: str = "nvidia-smi"
    command_timeout_s: float = 30.0
    root: Path | None = None
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    spawn: Callable[..., subprocess.Popen] = subprocess.Popen
    ecr_client: Callable[[str], Any] | None = None
    """region -> an ECR client, for the login before pulling a private ECR image."""

    def __call__(self) -> int:
        try:
            return self._launch()
        except LaunchError as error:
            log.error("job %s: %s", self.spec.job_id, error)
            return error.status

    def _launch(self) -> int:
        spec = self.spec
        rank = node_rank(spec.nodes, local_ipv4(self.metadata, self.environ))
        nproc = spec.gpus_per_node or count_gpus(self.run, self.nvidia_smi, self.command_timeout_s)
        directory = job_dir(spec.job_id, self.root)
        if running_pid(directory, spec.job_id) is not None:
            raise LaunchError(f"job {spec.job_id} is already running on this node")
        checkpoints = self.checkpoint_root / "jobs" / spec.job_id
        directory.mkdir(parents=True, exist_ok=True)
        checkpoints.mkdir(parents=True, exist_ok=True)
        with launcher_lock(directory) as held:
            if not held:
                raise LaunchError(f"job {spec.job_id} is already running on this node")
            return self._start(rank, nproc, directory, checkpoints)

    def _start(self, rank: int, nproc: int, directory: Path, checkpoints: Path) -> int:
        """Under the launcher lock: restore, run, sync. The drain waits for this lock to go."""
        spec = self.spec
        hostfile = directory / "hostfile"
        hostfile.write_text(hostfile_text(spec.nodes, nproc), encoding="utf-8")
        job = rendezvous_environment(spec, rank, nproc, hostfile, checkpoints)
        fabric = read_environment_file((self.root or root_path()) / EFA_ENVIRONMENT_PATH)
        (directory / "env").write_text("".join(f"{k}={v}\n" for k, v in sorted({**fabric, **job}.items())),
                                       encoding="utf-8")
        for stale in ("exit", "container", DRAINED):
            (directory / stale).unlink(missing_ok=True)
        try:
            store = self.store_for(spec.checkpoint_uri) if spec.checkpoint_uri else None
        except CheckpointError as error:
            raise LaunchError(str(error)) from error
        if spec.image:
            self._pull(spec.image)
        if spec.attempt > 0:
            self._restore(store, checkpoints)
        before = file_states(checkpoints)
        argv = expand_arguments(spec.command, job)
        if spec.image:
            devices = efa_devices(self.root or Path("/"))
            argv = container_argv(spec.job_id, spec.image, [*fabric, *job], [directory, checkpoints], devices, argv)
            (directory / "container").write_text(container_name(spec.job_id) + "\n", encoding="utf-8")
        log.info("job %s attempt %d: node %d of %d (master %s:%d), %d process(es) per node: %s",
                 spec.job_id, spec.attempt, rank, len(spec.nodes), spec.nodes[0], spec.port, nproc, " ".join(argv))
        status = self._run(argv, host_environment(self.environ, fabric, job), directory)
        if store is not None:
            status = self._save(store, checkpoints, status, unchanged_files(checkpoints, before))
        if (directory / DRAINED).exists():
            log.warning("job %s was stopped because this node is going: exiting %d so it resumes elsewhere",
                        spec.job_id, EXIT_DRAINED)
            return EXIT_DRAINED
        return status

    def _pull(self, image: str) -> None:
        try:
            pull_job_image(self.run, self.spec.job_id, image, self.root or root_path(), self.ecr_client)
        except ServiceError as error:
            raise LaunchError(str(error), EXIT_IMAGE) from error

    def _restore(self, store: CheckpointStore | None, checkpoints: Path) -> None:
        if store is None:
            log.warning("attempt %d without a checkpoint URI: the command starts from nothing", self.spec.attempt)
            return
        try:
            count = store.restore(checkpoints)
        except CheckpointError as error:
            raise LaunchError(f"cannot restore the checkpoint from {store.uri}: {error}", EXIT_CHECKPOINT) from error
        log.info("restored %d file(s) from %s into %s", count, store.uri, checkpoints)

    def _save(self, store: CheckpointStore, checkpoints: Path, status: int, unchanged: frozenset[str]) -> int:
        """Upload only what this node's command wrote or changed: a copy restored here and left
        alone may be older than what another node (where torchrun's c10d put global rank 0)
        has uploaded since, and must not overwrite it."""
        try:
            count = store.save(checkpoints, unchanged)
        except CheckpointError as error:
            log.error("checkpoint sync to %s failed: %s", store.uri, error)
            return status or EXIT_CHECKPOINT
        log.info("synced %d new or changed file(s) from %s to %s", count, checkpoints, store.uri)
        return status

    def _run(self, argv: list[str], environment: dict[str, str], directory: Path) -> int:
        """Run argv in a process group of its own, its output passed through; SIGTERM, SIGINT and
        SIGHUP to the launcher go on to that group, and if the launcher dies the command gets SIGTERM."""
        try:
            process = self.spawn(argv, env=environment, stdin=subprocess.DEVNULL, start_new_session=True,
                                 preexec_fn=terminate_with_parent)
        except FileNotFoundError:
            log.error("%s: command not found", argv[0])
            return EXIT_NOT_FOUND
        except PermissionError as error:
            log.error("%s: %s", argv[0], error)
            return EXIT_NOT_EXECUTABLE
        pid_file = directory / "pid"
        pid_file.write_text(f"{process.pid}\n", encoding="utf-8")

        def forward(signum: int, _frame: object) -> None:
            log.info("got signal %d: passing SIGTERM to the job", signum)
            signal_group(process.pid, signal.SIGTERM)

        previous = {number: signal.signal(number, forward) for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
        try:
            status = exit_status(process.wait())
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)
            pid_file.unlink(missing_ok=True)
        (directory / "exit").write_text(f"{status}\n", encoding="utf-8")
        log.info("job %s exited with status %d", self.spec.job_id, status)
        return status
