"""`gpucloud-node launch` and `launch-stop`: the node's side of `gpucloud run` (rank, rendezvous
environment, hostfile, container argv, checkpoint restore and sync, exit status, stop)."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from gpucloud.node import launcher
from gpucloud.node.checkpoints import CheckpointError, DirectoryCheckpoints, checkpoint_store
from gpucloud.node.cli import main
from gpucloud.node.commands import CommandResult
from gpucloud.node.lifecycle import boto3_client
from gpucloud.node.job_processes import stop
from gpucloud.node.launcher import JobSpec, Launch, encode_command, host_environment
from gpucloud.node.tuning import EFA_ENVIRONMENT_PATH
from gpucloud.userdata import bundle
from node_fakes import REGION, aws_client

NODES = "10.0.1.7,10.0.1.12,10.0.2.3"
JOB = "vision-train-20261125120000-ab12"
LOCAL_IPV4_PATH = "/latest/meta-data/local-ipv4"


def record_environment(path: Path, exit_status: int = 0) -> list[str]:
    """A command that writes the environment it got to path as JSON, then exits with exit_status."""
    return [sys.executable, "-c",
            f"import json, os, sys; json.dump(dict(os.environ), open({str(path)!r}, 'w')); sys.exit({exit_status})"]


@pytest.fixture
def node(tmp_path, monkeypatch):
    """A node config whose checkpoint dir and root (/run, /etc) live under tmp_path."""
    (tmp_path / "node.json").write_text(json.dumps({"checkpoint_dir": str(tmp_path / "checkpoints"), "region": REGION}))
    monkeypatch.setenv("GPUCLOUD_NODE_CONFIG", str(tmp_path / "node.json"))
    monkeypatch.setenv("GPUCLOUD_ROOT", str(tmp_path / "root"))
    monkeypatch.delenv(launcher.NODE_IPV4_ENV, raising=False)
    return tmp_path


def launch_args(command: list[str], *extra: str, nodes: str = NODES) -> list[str]:
    return ["launch", "--job", JOB, "--nodes", nodes, "--command-b64", encode_command(command), *extra]


def test_rank_comes_from_the_nodes_ipv4_in_metadata_and_the_command_gets_the_rendezvous(node, metadata_stub):
    metadata_stub.routes[LOCAL_IPV4_PATH] = "10.0.1.12"
    seen = node / "seen.json"
    (node / "root" / EFA_ENVIRONMENT_PATH).parent.mkdir(parents=True)
    (node / "root" / EFA_ENVIRONMENT_PATH).write_text("FI_EFA_FORK_SAFE=1\nFI_PROVIDER=efa\n")

    status = main(["--imds-endpoint", metadata_stub.endpoint,
                   *launch_args(record_environment(seen), "--gpus-per-node", "8", "--port", "29400")])

    job_dir = node / "root/run/gpucloud/jobs" / JOB
    checkpoints = node / "checkpoints/jobs" / JOB
    expected = {
        "MASTER_ADDR": "10.0.1.7", "MASTER_PORT": "29400", "NODE_RANK": "1", "NNODES": "3", "NPROC_PER_NODE": "8",
        "WORLD_SIZE": "24", "GPUCLOUD_JOB_ID": JOB, "GPUCLOUD_ATTEMPT": "0",
        "GPUCLOUD_HOSTFILE": str(job_dir / "hostfile"), "GPUCLOUD_CHECKPOINT_DIR": str(checkpoints),
        "FI_PROVIDER": "efa", "FI_EFA_FORK_SAFE": "1",
    }
    environment = json.loads(seen.read_text())
    assert status == 0
    assert {name: environment.get(name) for name in expected} == expected
    assert "GPUCLOUD_CHECKPOINT_URI" not in environment
    assert (job_dir / "hostfile").read_text() == "10.0.1.7 slots=8\n10.0.1.12 slots=8\n10.0.2.3 slots=8\n"
    assert (job_dir / "env").read_text().splitlines() == [f"{name}={value}" for name, value in sorted(expected.items())]
    assert (job_dir / "exit").read_text() == "0\n"
    assert not (job_dir / "pid").exists()
    assert checkpoints.is_dir()


def test_a_node_not_in_the_list_exits_64_and_runs_nothing(node, monkeypatch, caplog):
    monkeypatch.setenv(launcher.NODE_IPV4_ENV, "10.0.9.9")
    seen = node / "seen.json"

    assert main(launch_args(record_environment(seen), "--gpus-per-node", "1")) == 64
    assert not seen.exists()
    assert "this node (10.0.9.9) is not one of the job's nodes (10.0.1.7,10.0.1.12,10.0.2.3)" in caplog.text


@pytest.mark.parametrize("change, message", [
    (["--job", "Bad_Job"], "does not match"),
    (["--nodes", "10.0.1.7,ip-10-0-1-12"], "'ip-10-0-1-12' is not an IPv4 address"),
    (["--nodes", "10.0.1.7,10.0.1.7"], "names a node twice"),
    (["--command-b64", "not base64!"], "--command-b64 is not base64 of JSON"),
    (["--command-b64", encode_command([])], "non-empty JSON list of strings"),
    (["--gpus-per-node", "0"], "--gpus-per-node must be at least 1"),
])
def test_bad_values_exit_64_naming_the_flag(node, monkeypatch, caplog, change, message):
    monkeypatch.setenv(launcher.NODE_IPV4_ENV, "10.0.1.7")
    arguments = launch_args(["true"])
    for flag, value in zip(change[::2], change[1::2]):
        if flag in arguments:
            arguments[arguments.index(flag) + 1] = value
        else:
            arguments += [flag, value]

    assert main(arguments) == 64
    assert message in caplog.text


class FakeSpawn:
    """Stands in for subprocess.Popen: records argv and environment, 'exits' with status."""

    def __init__(self, status: int = 0, effect=None) -> None:
        self.status, self.effect, self.calls = status, effect, []

    def __call__(self, argv, env, **options):
        self.calls.append((list(argv), dict(env)))
        if self.effect:
            self.effect(env)
        return self

    pid = 999999999

    def wait(self) -> int:
        return self.status


class NvidiaSmiList:
    def __init__(self, stdout: str, returncode: int = 0) -> None:
        self.stdout, self.returncode, self.calls = stdout, returncode, []

    def __call__(self, argv, timeout_s, env=None):
        self.calls.append(tuple(argv))
        return CommandResult(tuple(argv), self.returncode, stdout=self.stdout)


def make_launch(tmp_path: Path, spec: JobSpec, spawn: FakeSpawn, run=None, store_for=None, address="10.0.1.7") -> Launch:
    return Launch(spec, metadata=None, run=run or NvidiaSmiList(""), checkpoint_root=tmp_path / "checkpoints",
                  store_for=store_for or (lambda uri: DirectoryCheckpoints(uri)), root=tmp_path / "root",
                  environ={"PATH": "/usr/bin:/bin", launcher.NODE_IPV4_ENV: address}, spawn=spawn)


def test_the_jobs_dollar_words_in_the_argv_become_this_nodes_values_and_no_other_dollar_does(tmp_path):
    spawn = FakeSpawn()
    command = ("torchrun", "--nnodes", "$NNODES", "--node-rank", "${NODE_RANK}", "--rdzv-endpoint",
               "$MASTER_ADDR:$MASTER_PORT", "--rdzv-id", "$GPUCLOUD_JOB_ID", "train.py", "--out", "$HOME/$NNODESX", "$")

    make_launch(tmp_path, JobSpec(JOB, ("10.0.1.7", "10.0.1.8"), command, gpus_per_node=8), spawn, address="10.0.1.8")()

    assert spawn.calls[0][0] == ["torchrun", "--nnodes", "2", "--node-rank", "1", "--rdzv-endpoint", "10.0.1.7:29500",
                                 "--rdzv-id", JOB, "train.py", "--out", "$HOME/$NNODESX", "$"]


def test_processes_per_node_default_to_the_gpus_nvidia_smi_lists(tmp_path):
    listing = "".join(f"GPU {index}: NVIDIA H100 80GB HBM3 (UUID: GPU-{index})\n" for index in range(8))
    spawn, smi = FakeSpawn(), NvidiaSmiList(listing)

    status = make_launch(tmp_path, JobSpec(JOB, ("10.0.1.7", "10.0.1.8"), ("train",)), spawn, run=smi)()

    assert status == 0
    assert smi.calls == [("nvidia-smi", "-L")]
    assert (spawn.calls[0][1]["NPROC_PER_NODE"], spawn.calls[0][1]["WORLD_SIZE"]) == ("8", "16")


def test_no_gpu_to_count_exits_64_asking_for_gpus_per_node(tmp_path, caplog):
    spawn = FakeSpawn()

    status = make_launch(tmp_path, JobSpec(JOB, ("10.0.1.7",), ("train",)), spawn, run=NvidiaSmiList("", 9))()

    assert status == 64 and spawn.calls == []
    assert "pass --gpus-per-node" in caplog.text


def test_an_image_runs_in_docker_with_host_network_gpus_efa_and_values_by_name_only(tmp_path):
    root = tmp_path / "root"
    for device in ("uverbs0", "uverbs1"):
        (root / "dev/infiniband").mkdir(parents=True, exist_ok=True)
        (root / "dev/infiniband" / device).touch()
    (root / EFA_ENVIRONMENT_PATH).parent.mkdir(parents=True)
    (root / EFA_ENVIRONMENT_PATH).write_text("FI_PROVIDER=efa\n")
    spawn = FakeSpawn()
    spec = JobSpec(JOB, ("10.0.1.7", "10.0.1.8"), ("torchrun", "--nnodes", "$NNODES", "train.py"), gpus_per_node=8,
                   image="123456789012.dkr.ecr.us-east-1.amazonaws.com/train:1")

    assert make_launch(tmp_path, spec, spawn)() == 0

    argv, environment = spawn.calls[0]
    job_dir, checkpoints = root / "run/gpucloud/jobs" / JOB, tmp_path / "checkpoints/jobs" / JOB
    names = sorted(["FI_PROVIDER", "MASTER_ADDR", "MASTER_PORT", "NODE_RANK", "NNODES", "NPROC_PER_NODE", "WORLD_SIZE",
                    "GPUCLOUD_JOB_ID", "GPUCLOUD_ATTEMPT", "GPUCLOUD_HOSTFILE", "GPUCLOUD_CHECKPOINT_DIR"])
    assert argv == [
        "docker", "run", "--rm", "--name", f"gpucloud-{JOB}", "--gpus", "all", "--network", "host", "--ipc", "host",
        "--ulimit", "memlock=-1:-1", "--device", "/dev/infiniband/uverbs0", "--device", "/dev/infiniband/uverbs1",
        "--volume", f"{job_dir}:{job_dir}", "--volume", f"{checkpoints}:{checkpoints}",
        *[part for name in names for part in ("--env", name)],
        spec.image, "torchrun", "--nnodes", "2", "train.py",
    ]
    assert environment["FI_PROVIDER"] == "efa" and environment["MASTER_ADDR"] == "10.0.1.7"
    assert (job_dir / "container").read_text() == f"gpucloud-{JOB}\n"


class Docker:
    """Stands in for the command runner: answers `nvidia-smi` and `docker pull`, recording each argv."""

    def __init__(self, pull_status: int = 0) -> None:
        self.pull_status, self.calls = pull_status, []

    def __call__(self, argv, timeout_s, env=None):
        self.calls.append(list(argv))
        status = self.pull_status if "pull" in argv else 0
        return CommandResult(tuple(argv), status, stderr="denied: not authorized" if status else "")


@pytest.mark.node_aws_calls("jobEcrImage")
def test_a_private_ecr_image_is_pulled_after_an_ecr_login_before_the_job_starts(aws, tmp_path):
    docker, spawn = Docker(), FakeSpawn()
    image = "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/train:1"
    launch = make_launch(tmp_path, JobSpec(JOB, ("10.0.1.7",), ("train",), gpus_per_node=1, image=image), spawn, run=docker)
    launch.ecr_client = lambda region: boto3_client("ecr", region)

    assert launch() == 0

    config_dir = tmp_path / "root/run/gpucloud/docker" / f"job-{JOB}"
    config = config_dir / "config.json"
    auth = json.loads(config.read_text())["auths"]["123456789012.dkr.ecr.us-east-1.amazonaws.com"]["auth"]
    assert config.stat().st_mode & 0o077 == 0
    assert docker.calls == [["docker", "--config", str(config_dir), "pull", "--quiet", image]]
    argv, environment = spawn.calls[0]
    assert argv[:2] == ["docker", "run"] and image in argv
    assert not any(str(config_dir) in part for part in argv), "the login stays out of the container's mounts"
    assert auth not in json.dumps(spawn.calls)


def test_an_ecr_image_that_cannot_be_pulled_exits_69_and_runs_nothing(tmp_path, caplog):
    docker, spawn = Docker(pull_status=1), FakeSpawn()
    image = "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/train:1"

    class Ecr:
        def get_authorization_token(self):
            return {"authorizationData": [{"authorizationToken": "QVdTOnNlY3JldA=="}]}

    launch = make_launch(tmp_path, JobSpec(JOB, ("10.0.1.7",), ("train",), gpus_per_node=1, image=image), spawn, run=docker)
    launch.ecr_client = lambda region: Ecr()

    assert launch() == 69
    assert spawn.calls == []
    assert f"docker pull {image}" in caplog.text


def test_a_public_image_is_left_to_docker_run_to_pull(tmp_path):
    docker, spawn = Docker(), FakeSpawn()
    launch = make_launch(tmp_path, JobSpec(JOB, ("10.0.1.7",), ("serve",), gpus_per_node=1, image="vllm/vllm-openai:v0"),
                         spawn, run=docker)
    launch.ecr_client = lambda region: pytest.fail("no ECR login for a public image")

    assert launch() == 0
    assert docker.calls == [] and spawn.calls[0][0][:2] == ["docker", "run"]


def test_without_efa_the_container_gets_no_devices_and_no_locked_memory_limit(tmp_path):
    spawn = FakeSpawn()
    make_launch(tmp_path, JobSpec(JOB, ("10.0.1.7",), ("serve",), gpus_per_node=1, image="vllm/vllm-openai:v0"), spawn)()

    argv = spawn.calls[0][0]
    assert "--device" not in argv and "--ulimit" not in argv
    assert argv[argv.index("--network") + 1] == "host"


def test_efa_libraries_and_tools_join_the_hosts_search_paths_only_on_an_efa_node():
    base = {"PATH": "/usr/bin", "LD_LIBRARY_PATH": "/usr/local/cuda/lib64"}
    present = {"/opt/amazon/efa/lib", "/opt/aws-ofi-nccl/lib", "/opt/amazon/efa/bin"}

    efa = host_environment(base, {"FI_PROVIDER": "efa"}, {"NNODES": "2"}, exists=present.__contains__)
    plain = host_environment(base, {}, {"NNODES": "2"}, exists=present.__contains__)

    assert efa["LD_LIBRARY_PATH"] == "/opt/amazon/efa/lib:/opt/aws-ofi-nccl/lib:/usr/local/cuda/lib64"
    assert efa["PATH"] == "/opt/amazon/efa/bin:/usr/bin"
    assert plain == {**base, "NNODES": "2"}


@pytest.mark.parametrize("returncode, status", [(0, 0), (3, 3), (-signal.SIGTERM, 143), (-signal.SIGKILL, 137)])
def test_the_exit_status_is_the_commands_and_a_signal_reads_as_the_shell_reports_it(tmp_path, returncode, status):
    spec = JobSpec(JOB, ("10.0.1.7",), ("train",), gpus_per_node=1)
    assert make_launch(tmp_path, spec, FakeSpawn(returncode))() == status


def test_a_missing_command_exits_127(tmp_path):
    spec = JobSpec(JOB, ("10.0.1.7",), ("/nonexistent/train",), gpus_per_node=1)
    assert make_launch(tmp_path, spec, subprocess.Popen)() == 127


def test_a_resumed_attempt_restores_before_the_command_and_syncs_after_it(tmp_path):
    store = tmp_path / "store"
    (store / "step-10").mkdir(parents=True)
    (store / "step-10" / "model.pt").write_bytes(b"weights at 10")
    checkpoints = tmp_path / "checkpoints/jobs" / JOB

    def train(environment):
        directory = Path(environment["GPUCLOUD_CHECKPOINT_DIR"])
        assert (directory / "step-10" / "model.pt").read_bytes() == b"weights at 10"
        (directory / "step-20").mkdir()
        (directory / "step-20" / "model.pt").write_bytes(b"weights at 20")

    spec = JobSpec(JOB, ("10.0.1.7",), ("train",), gpus_per_node=1, attempt=1, checkpoint_uri=store.as_uri() + "/")
    spawn = FakeSpawn(effect=train)

    assert make_launch(tmp_path, spec, spawn)() == 0
    assert spawn.calls[0][1]["GPUCLOUD_ATTEMPT"] == "1"
    assert spawn.calls[0][1]["GPUCLOUD_CHECKPOINT_URI"] == store.as_uri() + "/"
    assert (store / "step-20" / "model.pt").read_bytes() == b"weights at 20"
    assert sorted(path.relative_to(checkpoints).as_posix() for path in checkpoints.rglob("*.pt")) == [
        "step-10/model.pt", "step-20/model.pt"]


def test_a_first_attempt_restores_nothing(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    (store / "stale.pt").write_bytes(b"from another run")
    spec = JobSpec(JOB, ("10.0.1.7",), ("train",), gpus_per_node=1, checkpoint_uri=store.as_uri() + "/")

    assert make_launch(tmp_path, spec, FakeSpawn())() == 0
    assert not (tmp_path / "checkpoints/jobs" / JOB / "stale.pt").exists()


@pytest.mark.node_aws_calls("checkpointToS3")
def test_s3_checkpoints_restore_on_resume_and_sync_after_exit_leaving_the_job_record_alone(aws, tmp_path):
    s3 = aws_client("s3")
    s3.create_bucket(Bucket="ml-artifacts")
    prefix = f"runs/jobs/{JOB}/"
    s3.put_object(Bucket="ml-artifacts", Key=prefix + "latest", Body=b"step-10")
    s3.put_object(Bucket="ml-artifacts", Key=prefix + "step-10/model.pt", Body=b"weights at 10")
    s3.put_object(Bucket="ml-artifacts", Key=prefix + "job.json", Body=b'{"attempts": [0, 1, 2]}')  # gpucloud run's record
    seen = {}

    def train(environment):
        directory = Path(environment["GPUCLOUD_CHECKPOINT_DIR"])
        seen.update({path.relative_to(directory).as_posix(): path.read_bytes() for path in directory.rglob("*") if path.is_file()})
        (directory / "latest").write_bytes(b"step-20")
        (directory / "job.json").write_bytes(b"{}")
        for name in ("latest", "job.json"):
            os.utime(directory / name, (time.time() + 60,) * 2)

    spec = JobSpec(JOB, ("10.0.1.7",), ("train",), gpus_per_node=1, attempt=2, checkpoint_uri=f"s3://ml-artifacts/{prefix}")
    launch = make_launch(tmp_path, spec, FakeSpawn(effect=train), store_for=lambda uri: checkpoint_store(uri, lambda: boto3_client("s3", REGION)))

    assert launch() == 0
    assert seen == {"latest": b"step-10", "step-10/model.pt": b"weights at 10"}
    assert s3.get_object(Bucket="ml-artifacts", Key=prefix + "latest")["Body"].read() == b"step-20"
    assert s3.get_object(Bucket="ml-artifacts", Key=prefix + "job.json")["Body"].read() == b'{"attempts": [0, 1, 2]}'


@pytest.mark.node_aws_calls("checkpointToS3")
def test_a_checkpoint_that_cannot_be_restored_exits_74_and_runs_nothing(aws, tmp_path, caplog):
    spawn = FakeSpawn()
    spec = JobSpec(JOB, ("10.0.1.7",), ("train",), gpus_per_node=1, attempt=1, checkpoint_uri="s3://no-such-bucket/jobs/x/")
    launch = make_launch(tmp_path, spec, spawn, store_for=lambda uri: checkpoint_store(uri, lambda: boto3_client("s3", REGION)))

    assert launch() == 74
    assert spawn.calls == []
    assert "cannot restore the checkpoint from s3://no-such-bucket/jobs/x/" in caplog.text


@pytest.mark.parametrize("command_status, status", [(0, 74), (1, 1)])
def test_a_failed_sync_turns_success_into_74_and_keeps_a_failure(tmp_path, command_status, status):
    blocked = tmp_path / "store"
    blocked.write_text("a file where the store's directory should be")

    def train(environment):
        (Path(environment["GPUCLOUD_CHECKPOINT_DIR"]) / "latest").write_text("step-1")

    spec = JobSpec(JOB, ("10.0.1.7",), ("train",), gpus_per_node=1, checkpoint_uri=blocked.as_uri() + "/")
    assert make_launch(tmp_path, spec, FakeSpawn(command_status, effect=train))() == status


def test_an_s3_key_that_would_land_outside_the_checkpoint_dir_is_refused(tmp_path):
    class Listing:
        """An S3 client listing one key that climbs out of the prefix; nothing may be downloaded."""

        def get_paginator(self, operation):
            assert operation == "list_objects_v2"
            return self

        def paginate(self, Bucket, Prefix):
            return [{"Contents": [{"Key": Prefix + "../../../etc/cron.d/job", "Size": 1, "LastModified": None}]}]

        def download_file(self, *arguments):
            raise AssertionError("downloaded a key outside the checkpoint directory")

    store = checkpoint_store("s3://ml-artifacts/runs/jobs/j/", lambda: Listing())
    with pytest.raises(CheckpointError, match="outside"):
        store.restore(tmp_path / "checkpoints")


def start_job(node: Path, command: list[str]) -> subprocess.Popen:
    """The launcher as SSM runs it: its own process, stdout and stderr passed through."""
    environment = dict(os.environ, PYTHONPATH=str(Path(launcher.__file__).resolve().parents[2]),
                       **{launcher.NODE_IPV4_ENV: "10.0.1.7"})
    process = subprocess.Popen([sys.executable, "-m", "gpucloud.node", *launch_args(command, "--gpus-per-node", "1")],
                               env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready = node / "ready"
    deadline = time.monotonic() + 10
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ready.exists(), process.communicate(timeout=10)
    return process


def sleeper(node: Path, ignore_term: bool) -> list[str]:
    handler = "signal.signal(signal.SIGTERM, signal.SIG_IGN); " if ignore_term else ""
    return [sys.executable, "-c", f"import pathlib, signal, time; {handler}pathlib.Path({str(node / 'ready')!r}).touch(); time.sleep(60)"]


def test_stop_ends_the_job_with_sigterm_and_the_launcher_reports_143(node):
    process = start_job(node, sleeper(node, ignore_term=False))

    assert stop(JOB, run=None, grace_s=10) == 0
    assert process.wait(timeout=10) == 143
    assert not (node / "root/run/gpucloud/jobs" / JOB / "pid").exists()
    assert stop(JOB, run=None) == 0  # nothing left to stop


def test_stop_kills_a_job_that_ignores_sigterm_after_the_grace(node):
    process = start_job(node, sleeper(node, ignore_term=True))
    started = time.monotonic()
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        time.sleep(seconds)

    assert stop(JOB, run=None, grace_s=0.5, sleep=pause) == 0
    assert process.wait(timeout=10) == 137
    assert time.monotonic() - started < 5
    assert len(pauses) >= 4 and all(0 <= seconds <= 0.1 for seconds in pauses), (
        f"looked for the job's end after {pauses}: a job that ends sooner must be seen sooner")


def test_sigterm_to_the_launcher_reaches_the_job(node):
    process = start_job(node, sleeper(node, ignore_term=False))

    process.send_signal(signal.SIGTERM)

    assert process.wait(timeout=10) == 143
    assert "passing SIGTERM to the job" in process.stderr.read()


def test_a_pid_file_naming_another_process_is_left_alone(node):
    job_dir = node / "root/run/gpucloud/jobs" / JOB
    job_dir.mkdir(parents=True)
    (job_dir / "pid").write_text(f"{os.getpid()}\n")  # this test's own process, not the job

    assert main(["launch-stop", "--job", JOB]) == 0


def test_the_agent_bundle_runs_launch_on_python_3_9_without_site_packages(tmp_path):
    """The AMI's Python runs the agent; Amazon Linux 2023's is 3.9."""
    from test_agent_bundle import find_python

    interpreter = find_python("python3.9")
    lib = tmp_path / "lib"
    zipfile.ZipFile(io.BytesIO(bundle.build_agent_bundle().data)).extractall(lib)
    seen = tmp_path / "seen.json"
    (tmp_path / "node.json").write_text(json.dumps({"checkpoint_dir": str(tmp_path / "checkpoints")}))
    environment = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(lib), "GPUCLOUD_NODE_CONFIG": str(tmp_path / "node.json"),
                   "GPUCLOUD_ROOT": str(tmp_path / "root"), launcher.NODE_IPV4_ENV: "10.0.2.3"}

    result = subprocess.run([interpreter, "-S", "-m", "gpucloud.node", *launch_args(
        [interpreter, "-S", "-c", f"import json, os; json.dump(dict(os.environ), open({str(seen)!r}, 'w'))"],
        "--gpus-per-node", "4")], env=environment, capture_output=True, text=True, timeout=60)

    assert result.returncode == 0, result.stderr
    assert json.loads(seen.read_text())["NODE_RANK"] == "2"
