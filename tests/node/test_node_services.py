"""The services a group's nodes run after the gate: JupyterLab (its token in Parameter Store),
TensorBoard and container services, and the unit that starts only what the group asks for."""

from __future__ import annotations

import base64
import concurrent.futures
import functools
import json
import threading
from pathlib import Path

import boto3
import pytest
from gpucloud.components.node_services import TOKEN_PLACEHOLDER as STACK_PLACEHOLDER
from gpucloud.node import containers, jupyter, services, tensorboard
from gpucloud.node.commands import CommandResult
from gpucloud.node.packages import Installer
from gpucloud.userdata.bundle import BOOT_STEPS, build_agent_bundle
from gpucloud.userdata.layout import GATE_UNIT, SERVICES_UNIT
from node_fakes import REGION

PARAMETER = "/gpu-cloud/notebooks/workbench/jupyter-token"


class Runner:
    """Records argv; answers every command with success unless told otherwise."""

    def __init__(self, failing: tuple[str, ...] = ()):
        self.calls: list[list[str]] = []
        self.failing = failing

    def __call__(self, argv, timeout_s, env=None):
        self.calls.append(list(argv))
        failed = any(word in argv for word in self.failing)
        return CommandResult(tuple(argv), returncode=1 if failed else 0, stderr="boom" if failed else "")


def write_services(tmp_path: Path, document: dict) -> str:
    path = tmp_path / "services.json"
    path.write_text(json.dumps(document))
    return str(path)


VLLM = {"name": "vllm", "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/vllm:v0.6.3", "command": ["--model", "m"],
        "env": {"HF_HOME": "/data/hf"}, "gpus": "all", "port": 8000, "restart": "on-failure", "ecr_region": REGION,
        "health": {"path": "/health", "interval_seconds": 30, "timeout_seconds": 5, "unhealthy_threshold": 3,
                   "start_period_seconds": 600}}


def test_a_group_that_serves_nothing_starts_nothing(tmp_path):
    run = Runner()
    assert services.start_services(run, path=str(tmp_path / "absent.json"), runtime_dir=str(tmp_path)) == 0
    assert run.calls == []


def test_the_services_unit_starts_what_the_group_asks_with_each_containers_restart_policy(tmp_path):
    run = Runner()
    path = write_services(tmp_path, {"region": REGION, "jupyter": {"install": "pip"}, "containers": [VLLM]})
    assert services.start_services(run, path=path, runtime_dir=str(tmp_path / "run")) == 0
    assert run.calls == [["systemctl", "daemon-reload"],
                         ["systemctl", "start", "--no-block", "gpucloud-jupyter.service", "gpucloud-container@vllm.service"]]
    drop_in = tmp_path / "run" / "gpucloud-container@vllm.service.d" / "restart.conf"
    assert drop_in.read_text() == "[Service]\nRestart=on-failure\n"


def test_a_failed_start_is_reported(tmp_path):
    path = write_services(tmp_path, {"region": REGION, "tensorboard": {"install": "pip", "log_dir": "/logs"}})
    assert services.start_services(Runner(failing=("start",)), path=path, runtime_dir=str(tmp_path)) == 1


def test_the_bundle_installs_every_service_unit_and_starts_them_after_the_gate():
    bundle = build_agent_bundle()
    import io
    import zipfile

    archive = zipfile.ZipFile(io.BytesIO(bundle.data))
    manifest = json.loads(archive.read("boot/manifest.json"))
    paths = {item["path"] for item in manifest["files"]}
    for unit in ("gpucloud-jupyter.service", "gpucloud-tensorboard.service", "gpucloud-container@.service", SERVICES_UNIT):
        assert f"/etc/systemd/system/{unit}" in paths
        text = archive.read(f"boot/files/etc/systemd/system/{unit}").decode()
        assert f"Requires={GATE_UNIT}" in text.replace(" docker.service", "") and f"After={GATE_UNIT}" in text
        assert ("[Install]" in text) == (unit == SERVICES_UNIT), "only the starter is enabled; services start through it"
    assert SERVICES_UNIT in BOOT_STEPS[1] and SERVICES_UNIT in BOOT_STEPS[-1]


def test_the_node_keeps_the_placeholder_the_stack_writes():
    assert jupyter.TOKEN_PLACEHOLDER == STACK_PLACEHOLDER


@pytest.fixture
def token_parameter(aws):
    kms = boto3.client("kms", region_name=REGION)
    key = kms.create_key()["KeyMetadata"]["KeyId"]
    kms.create_alias(AliasName="alias/gpu-cloud/notebooks", TargetKeyId=key)
    boto3.client("ssm", region_name=REGION).put_parameter(
        Name=PARAMETER, Value=STACK_PLACEHOLDER, Type="SecureString", KeyId="alias/gpu-cloud/notebooks")
    return key


@pytest.mark.node_aws_calls("jupyterToken")
def test_the_first_node_makes_the_token_and_later_ones_read_the_same(token_parameter):
    ssm = boto3.client("ssm", region_name=REGION)
    first = jupyter.jupyter_token(ssm, PARAMETER, "alias/gpu-cloud/notebooks")
    again = jupyter.jupyter_token(ssm, PARAMETER, "alias/gpu-cloud/notebooks")
    assert first == again and first != STACK_PLACEHOLDER and len(first) >= 40
    stored = ssm.get_parameter(Name=PARAMETER)["Parameter"]
    assert stored["Type"] == "SecureString" and stored["Value"] != first, "stored encrypted"
    described = ssm.describe_parameters(ParameterFilters=[{"Key": "Name", "Values": [PARAMETER]}])["Parameters"][0]
    assert described["KeyId"] == "alias/gpu-cloud/notebooks"


@pytest.mark.node_aws_calls("jupyterToken")
def test_nodes_that_start_together_all_run_with_the_first_token_written(token_parameter):
    nodes = 3
    everyone_read = threading.Barrier(nodes, timeout=10)

    def start_node() -> str:
        ssm = boto3.client("ssm", region_name=REGION)
        answered = []

        def wait_until_every_node_has_read(**_):
            if not answered:  # so each node reads the placeholder before any of them writes
                answered.append(True)
                everyone_read.wait()

        ssm.meta.events.register("after-call.ssm", wait_until_every_node_has_read)
        return jupyter.jupyter_token(ssm, PARAMETER, "alias/gpu-cloud/notebooks")

    with concurrent.futures.ThreadPoolExecutor(nodes) as pool:
        tokens = [future.result() for future in [pool.submit(start_node) for _ in range(nodes)]]
    ssm = boto3.client("ssm", region_name=REGION)
    versions = ssm.get_parameter_history(Name=PARAMETER, WithDecryption=True)["Parameters"]
    first = next(version["Value"] for version in versions if version["Version"] == 2)
    assert tokens == [first] * nodes
    assert ssm.get_parameter(Name=PARAMETER, WithDecryption=True)["Parameter"]["Value"] == first, "what connect prints"
    assert jupyter.jupyter_token(ssm, PARAMETER, "alias/gpu-cloud/notebooks") == first, "a later node"


def test_putting_the_placeholder_back_makes_the_next_node_write_a_new_token():
    history = [{"Version": 1, "Value": "unset"}, {"Version": 2, "Value": "a"}, {"Version": 3, "Value": "b"},
               {"Version": 4, "Value": "a"}]
    assert jupyter.first_token(history) == "a"
    assert jupyter.first_token([*history, {"Version": 5, "Value": "unset"}]) is None
    assert jupyter.first_token([*history, {"Version": 5, "Value": "unset"}, {"Version": 6, "Value": "c"}]) == "c"
    assert jupyter.first_token(history[1:]) == "a", "no placeholder kept: the latest"


def test_jupyter_runs_as_the_user_with_its_token_only_in_the_environment(tmp_path):
    path = write_services(tmp_path, {"region": REGION, "jupyter": {
        "install": "pip", "root_dir": "/persist/home", "token_parameter": PARAMETER, "kms_key_id": "alias/k"}})

    class Ssm:
        def get_parameter_history(self, **request):
            return {"Parameters": [{"Version": 1, "Value": "unset"}, {"Version": 2, "Value": "the-token"}]}

    run, became, prepared = Runner(), [], []
    result = jupyter.serve_jupyter(run, lambda region: Ssm(), path=path,
                                   become=lambda *call: became.append(call),
                                   prepare=lambda *call: prepared.append(call), venv=str(tmp_path / "venv"),
                                   host=image_host(tmp_path, UBUNTU_22_04, (3, 10)))
    assert result == 1, "returns only when it could not become JupyterLab"
    assert run.calls[0][:4] == ["/usr/bin/python3", "-m", "venv", "--system-site-packages"]
    assert run.calls[1][-1] == jupyter.REQUIREMENTS[0]
    user, argv, env, cwd = became[0]
    assert user == "ubuntu" and cwd == "/persist/home" and prepared == [("/persist/home", "ubuntu")]
    assert argv[0] == f"{tmp_path}/venv/bin/jupyter-lab" and "--port=8888" in argv
    assert "--ServerApp.root_dir=/persist/home" in argv
    assert env["JUPYTER_TOKEN"] == "the-token" and not any("the-token" in word for word in argv)
    assert env["AWS_REGION"] == REGION and env["HOME"] == "/persist/home"


def test_a_failed_install_stops_jupyter_before_any_token_is_read(tmp_path):
    path = write_services(tmp_path, {"region": REGION, "jupyter": {
        "install": "pip", "root_dir": "/home/ubuntu", "token_parameter": PARAMETER, "kms_key_id": "alias/k"}})
    asked = []
    result = jupyter.serve_jupyter(Runner(failing=("pip",)), lambda region: asked.append(region), path=path,
                                   become=lambda *call: pytest.fail("must not start"), venv=str(tmp_path / "venv"),
                                   host=image_host(tmp_path, UBUNTU_22_04, (3, 10)))
    assert result == 1 and asked == []


def test_tensorboard_reads_the_configured_log_dir_from_an_image_install(tmp_path):
    path = write_services(tmp_path, {"region": REGION, "tensorboard": {"install": "image", "log_dir": "s3://b/scratch/"}})
    run, became = Runner(), []
    tensorboard.serve_tensorboard(run, path=path, become=lambda *call: became.append(call),
                                  host=image_host(tmp_path, UBUNTU_22_04, (3, 10)))
    assert run.calls == [], "install: image installs nothing"
    argv = became[0][1]
    assert "--logdir=s3://b/scratch/" in argv and "--port=6006" in argv and "--host=0.0.0.0" in argv


UBUNTU_22_04 = 'PRETTY_NAME="Ubuntu 22.04.5 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\nID=ubuntu\nID_LIKE=debian\n'
AL2023 = 'NAME="Amazon Linux"\nVERSION="2023"\nID="amzn"\nID_LIKE="fedora"\nVERSION_ID="2023"\nPRETTY_NAME="Amazon Linux 2023.9.20251110"\n'
"""/etc/os-release as the default image and an AL2023 image write it (os-release(5))."""


def image_host(tmp_path: Path, os_release: str, python: tuple[int, int], installed: tuple[str, ...] = ()):
    """services.service_host on an image with this os-release, system Python and extra interpreters."""
    release = tmp_path / "os-release"
    release.write_text(os_release)
    return functools.partial(services.service_host, os_release=str(release), system=python,
                             exists=lambda candidate: candidate in installed, home_of=lambda user: f"/home/{user}")


def test_on_amazon_linux_2023_jupyter_runs_as_ec2_user_in_its_home_on_a_newer_python(tmp_path):
    path = write_services(tmp_path, {"region": REGION, "jupyter": {
        "install": "pip", "root_dir": None, "token_parameter": PARAMETER, "kms_key_id": "alias/k"}})

    class Ssm:
        def get_parameter_history(self, **request):
            return {"Parameters": [{"Version": 1, "Value": "unset"}, {"Version": 2, "Value": "the-token"}]}

    run, became, prepared = Runner(), [], []
    result = jupyter.serve_jupyter(run, lambda region: Ssm(), path=path, become=lambda *call: became.append(call),
                                   prepare=lambda *call: prepared.append(call), venv=str(tmp_path / "venv"),
                                   host=image_host(tmp_path, AL2023, (3, 9), installed=("/usr/bin/python3.11",)))
    assert result == 1
    assert run.calls[0][0] == "/usr/bin/python3.11", "AL2023's system Python 3.9 is older than JupyterLab takes"
    user, argv, env, cwd = became[0]
    assert (user, cwd, env["HOME"]) == ("ec2-user", "/home/ec2-user", "/home/ec2-user")
    assert prepared == [("/home/ec2-user", "ec2-user")]


def test_a_service_the_image_cannot_run_stops_with_the_reason_and_is_not_restarted(tmp_path, caplog):
    path = write_services(tmp_path, {"region": REGION, "jupyter": {
        "install": "pip", "root_dir": None, "token_parameter": PARAMETER, "kms_key_id": "alias/k"},
        "tensorboard": {"install": "pip", "log_dir": "/logs"}})
    never = dict(become=lambda *call: pytest.fail("must not start"), venv=str(tmp_path / "venv"))
    run = Runner()
    assert jupyter.serve_jupyter(run, lambda region: pytest.fail("no token"), path=path,
                                 host=image_host(tmp_path, AL2023, (3, 9)), **never) == services.UNSUPPORTED_IMAGE
    assert "JupyterLab needs Python 3.10 or later, and this image has /usr/bin/python3 3.9" in caplog.text
    debian = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n'
    assert tensorboard.serve_tensorboard(run, path=path, host=image_host(tmp_path, debian, (3, 11)),
                                         **never) == services.UNSUPPORTED_IMAGE
    assert "services run on Ubuntu and Amazon Linux 2023 images, and this one is Debian GNU/Linux 12" in caplog.text
    assert run.calls == [], "nothing installed"
    for unit in ("gpucloud-jupyter.service", "gpucloud-tensorboard.service"):
        text = (Path(services.__file__).parent / unit).read_text()
        assert f"RestartPreventExitStatus={services.UNSUPPORTED_IMAGE}" in text


def test_docker_run_takes_env_names_not_values_and_publishes_the_port():
    argv = containers.docker_run_argv(VLLM)
    assert argv[:5] == ["docker", "run", "--rm", "--name", "gpucloud-vllm"]
    assert argv[argv.index("--gpus") + 1] == "all"
    assert argv[argv.index("--publish") + 1] == "8000:8000"
    assert "HF_HOME" in argv and not any("/data/hf" in word for word in argv)
    assert argv[-3:] == [VLLM["image"], "--model", "m"]
    assert "--network" not in argv, "the default bridge network: the reason for hop limit 2"
    env = containers.container_environment(VLLM, REGION)
    assert env["HF_HOME"] == "/data/hf" and env["AWS_REGION"] == REGION
    assert containers.docker_run_argv({**VLLM, "gpus": 2})[containers.docker_run_argv({**VLLM, "gpus": 2}).index("--gpus") + 1] == "2"
    assert "--gpus" not in containers.docker_run_argv({**VLLM, "gpus": 0})


@pytest.mark.node_aws_calls("ecrImage")
def test_an_ecr_image_is_pulled_with_a_token_kept_in_a_root_only_config(aws, tmp_path):
    path = write_services(tmp_path, {"region": REGION, "containers": [VLLM]})
    run = Runner()

    class Process:
        returncode = 0

        def poll(self):
            return 0

        def wait(self):
            return 0

    started = []
    result = containers.serve_container(
        "vllm", run, lambda region: boto3.client("ecr", region_name=region), path=path,
        popen=lambda argv, env: started.append((argv, env)) or Process(), config_dir=str(tmp_path / "docker"))
    assert result == 0
    config = tmp_path / "docker" / "config.json"
    auth = json.loads(config.read_text())["auths"]["123456789012.dkr.ecr.us-east-1.amazonaws.com"]["auth"]
    assert base64.b64decode(auth).decode().startswith("AWS:")
    assert config.stat().st_mode & 0o077 == 0
    assert run.calls[0] == ["docker", "--config", str(tmp_path / "docker"), "pull", "--quiet", VLLM["image"]]
    assert not any(auth in " ".join(call) for call in run.calls)
    assert started[0][0] == containers.docker_run_argv(VLLM)


def test_a_registry_image_is_pulled_without_ecr(tmp_path):
    image = {**VLLM, "image": "vllm/vllm-openai:v0.6.3", "ecr_region": None, "health": None}
    path = write_services(tmp_path, {"region": REGION, "containers": [image]})
    run = Runner()

    class Process:
        returncode = 3

        def wait(self):
            return 3

    result = containers.serve_container("vllm", run, lambda region: pytest.fail("no ECR"), path=path,
                                        popen=lambda argv, env: Process())
    assert result == 3, "the container's exit status passes through for systemd's Restart="
    assert run.calls[0] == ["docker", "pull", "--quiet", "vllm/vllm-openai:v0.6.3"]


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


class Running:
    def __init__(self):
        self.returncode = None
        self.stopped = False

    def poll(self):
        return self.returncode

    def wait(self):
        self.returncode = 137 if self.stopped else 0
        return self.returncode

    def terminate(self):
        self.stopped = True


def test_failures_in_the_start_period_do_not_count_and_three_in_a_row_after_it_stop_the_container():
    clock, process = Clock(), Running()
    probes = []

    def probe(port, path, timeout):
        probes.append(clock.now)
        return False

    assert containers.supervise(process, VLLM, probe=probe, clock=clock, sleep=clock.sleep) == containers.EXIT_UNHEALTHY
    assert process.stopped
    counted = [moment for moment in probes if moment >= 600]
    assert len(counted) == 3 and len(probes) == 20 + 2


def test_a_healthy_answer_resets_the_count():
    clock, process = Clock(), Running()
    answers = iter([False, False, True, False, False, True] * 5)

    def probe(port, path, timeout):
        try:
            return next(answers)
        except StopIteration:
            process.returncode = 0
            return True

    health = {**VLLM["health"], "start_period_seconds": 0}
    assert containers.supervise(process, {**VLLM, "health": health}, probe=probe, clock=clock, sleep=clock.sleep) == 0
    assert not process.stopped


def test_user_data_carries_a_services_file_only_for_a_group_that_serves_something():
    import dataclasses

    import yaml
    from gpucloud.userdata.layout import SERVICES_CONFIG_PATH
    from gpucloud.userdata.render import render_user_data
    from userdata_samples import TYPICAL

    def files(params):
        return {entry["path"]: entry["content"] for entry in yaml.safe_load(render_user_data(params))["write_files"]}

    document = {"region": REGION, "containers": [VLLM]}
    assert SERVICES_CONFIG_PATH not in files(TYPICAL)
    assert json.loads(files(dataclasses.replace(TYPICAL, services=document))[SERVICES_CONFIG_PATH]) == document


def test_a_system_python_without_venv_support_gets_python3_venv_first(tmp_path):
    class NoEnsurepipOnce(Runner):
        def __call__(self, argv, timeout_s, env=None):
            self.calls.append(list(argv))
            first_venv = argv[1:3] == ["-m", "venv"] and sum(call[1:3] == ["-m", "venv"] for call in self.calls) == 1
            return CommandResult(tuple(argv), returncode=1 if first_venv else 0)

    run = NoEnsurepipOnce()
    installer = Installer(run, root=tmp_path, which={"apt-get": "/usr/bin/apt-get"}.get)
    assert services.install_venv(run, str(tmp_path / "venv"), ["jupyterlab==4.6.6"], installer=installer) == f"{tmp_path}/venv/bin"
    assert [call[0] for call in run.calls] == ["/usr/bin/python3", "apt-get", "apt-get", "/usr/bin/python3",
                                              f"{tmp_path}/venv/bin/python"]
    assert run.calls[1][-2:] == ["update", "-q"] and run.calls[2][-1] == "python3-venv"
    assert services.install_venv(run, str(tmp_path / "venv"), ["jupyterlab==4.6.6"]) and len(run.calls) == 5, "installed once"
