"""`gpucloud-node tune` and what `check` reads back: held driver and kernel packages, TCP BBR
with fq, and on EFA nodes the NCCL/EFA environment and a visible efa provider."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from gpucloud.node import tuning
from gpucloud.node.commands import CommandResult
from userdata_checks import require_tool

INSTALLED = """\
nvidia-driver-550-server installed
libnvidia-compute-550-server installed
nvidia-fabricmanager-550 installed
cuda-drivers-550 installed
linux-image-6.8.0-1015-aws installed
linux-aws installed
linux-headers-6.8.0-1015-aws installed
linux-modules-extra-6.8.0-1015-aws installed
python3-boto3 installed
linux-firmware installed
nvidia-container-toolkit config-files
openssh-server installed
"""
FI_INFO_EFA = """\
provider: efa
    fabric: efa
    domain: rdmap16s27-rdm
    version: 122.0
    type: FI_EP_RDM
    protocol: FI_PROTO_EFA
"""


class FakeSystem:
    """Answers the commands tune and check run, and records them."""

    def __init__(self, **failing: str) -> None:
        self.failing = failing
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, argv: Sequence[str], timeout_s: float, env: Mapping[str, str] | None = None) -> CommandResult:
        argv = tuple(argv)
        self.calls.append(argv)
        program = Path(argv[0]).name
        if program in self.failing:
            return CommandResult(argv, returncode=1, stderr=self.failing[program])
        stdout = {"dpkg-query": INSTALLED, "fi_info": FI_INFO_EFA}.get(program, "")
        return CommandResult(argv, returncode=0, stdout=stdout)

    def called(self, program: str) -> list[tuple[str, ...]]:
        return [argv for argv in self.calls if Path(argv[0]).name == program]


def test_driver_fabric_manager_and_kernel_packages_are_held_and_nothing_else(tmp_path):
    system = FakeSystem()

    assert tuning.tune(system, efa_expected=False, instance_type="g6e.xlarge", root=tmp_path) == 0

    [hold] = system.called("apt-mark")
    assert hold[:2] == ("apt-mark", "hold")
    assert sorted(hold[2:]) == [
        "cuda-drivers-550", "libnvidia-compute-550-server", "linux-aws", "linux-headers-6.8.0-1015-aws",
        "linux-image-6.8.0-1015-aws", "linux-modules-extra-6.8.0-1015-aws", "nvidia-driver-550-server",
        "nvidia-fabricmanager-550",
    ]
    blacklist = (tmp_path / tuning.UNATTENDED_BLACKLIST_PATH).read_text()
    assert blacklist.startswith("Unattended-Upgrade::Package-Blacklist {\n")
    for pattern in ("nvidia-", "libnvidia-", "fabricmanager", "linux-"):
        assert f'    "{pattern}";\n' in blacklist


def test_bbr_with_fq_is_written_for_every_boot_and_applied_now(tmp_path):
    system = FakeSystem()

    tuning.tune(system, efa_expected=False, instance_type="g5.xlarge", root=tmp_path)

    settings = tmp_path / tuning.SYSCTL_PATH
    assert settings.read_text() == "net.core.default_qdisc = fq\nnet.ipv4.tcp_congestion_control = bbr\n"
    assert (tmp_path / tuning.MODULES_LOAD_PATH).read_text() == "tcp_bbr\n"
    assert system.called("modprobe") == [("modprobe", "tcp_bbr")]
    assert system.called("sysctl") == [("sysctl", "-p", str(settings))]
    assert not (tmp_path / tuning.EFA_PROFILE_PATH).exists(), "single-node groups get no EFA environment"


def test_a_failed_part_fails_tune_but_every_other_part_still_runs(tmp_path):
    system = FakeSystem(**{"dpkg-query": "dpkg database locked", "modprobe": "module tcp_bbr not found"})

    assert tuning.tune(system, efa_expected=True, instance_type="p5.48xlarge", root=tmp_path) == 1

    assert system.called("apt-mark") == []
    assert system.called("sysctl") and (tmp_path / tuning.EFA_PROFILE_PATH).is_file()


@pytest.mark.parametrize(
    "instance_type, rdma", [("p5.48xlarge", True), ("p4d.24xlarge", True), ("g6e.48xlarge", False), ("g5.48xlarge", False)]
)
def test_efa_nodes_get_the_nccl_environment_with_device_rdma_only_where_the_type_has_it(tmp_path, instance_type, rdma):
    tuning.tune(FakeSystem(), efa_expected=True, instance_type=instance_type, root=tmp_path)

    environment = dict(
        line.split("=", 1) for line in (tmp_path / tuning.EFA_ENVIRONMENT_PATH).read_text().splitlines()
    )
    assert environment["FI_PROVIDER"] == "efa" and environment["FI_EFA_FORK_SAFE"] == "1"
    assert ("FI_EFA_USE_DEVICE_RDMA" in environment) is rdma


def test_efa_profile_passes_shellcheck_and_a_login_shell_gets_the_environment(tmp_path):
    tuning.tune(FakeSystem(), efa_expected=True, instance_type="p5.48xlarge", root=tmp_path)
    profile = tmp_path / tuning.EFA_PROFILE_PATH

    lint = subprocess.run([require_tool("shellcheck"), "--shell=sh", str(profile)], capture_output=True, text=True)
    shell = subprocess.run(
        ["sh", "-c", '. "$1"; printf "%s|%s|%s" "$FI_PROVIDER" "$FI_EFA_USE_DEVICE_RDMA" "$LD_LIBRARY_PATH"', "sh", str(profile)],
        capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": "/usr/local/cuda/lib64"},
    )

    assert lint.returncode == 0, lint.stdout
    provider, rdma, libraries = shell.stdout.split("|")
    assert (provider, rdma) == ("efa", "1")
    assert libraries.split(":") == [*tuning.EFA_LIBRARY_DIRS, "/usr/local/cuda/lib64"]


def proc_sys(root: Path, qdisc: str, congestion: str) -> Path:
    for key, value in (("net/core/default_qdisc", qdisc), ("net/ipv4/tcp_congestion_control", congestion)):
        path = root / "proc/sys" / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value + "\n")
    return root


def test_check_accepts_bbr_with_fq_and_names_any_other_setting(tmp_path):
    assert tuning.network_problems(proc_sys(tmp_path / "tuned", "fq", "bbr")) == []

    problems = tuning.network_problems(proc_sys(tmp_path / "stock", "fq_codel", "cubic"))

    assert problems == [
        "net.core.default_qdisc is 'fq_codel', not 'fq' (gpucloud-node tune sets it at boot)",
        "net.ipv4.tcp_congestion_control is 'cubic', not 'bbr' (gpucloud-node tune sets it at boot)",
    ]


def test_check_on_an_efa_node_wants_the_efa_provider_and_the_profile(tmp_path):
    tuning.tune(FakeSystem(), efa_expected=True, instance_type="p5.48xlarge", root=tmp_path)
    system = FakeSystem()

    assert tuning.efa_problems(system, root=tmp_path) == []
    assert system.calls == [(tuning.FI_INFO, "-p", "efa")]
    assert tuning.efa_problems(FakeSystem(fi_info="fi_getinfo: -61 (No data available)"), root=tmp_path) == [
        f"EFA provider not visible: {tuning.FI_INFO} failed with exit status 1: fi_getinfo: -61 (No data available)"
    ]
    (tmp_path / tuning.EFA_PROFILE_PATH).unlink()
    assert tuning.efa_problems(system, root=tmp_path) == [
        f"/{tuning.EFA_PROFILE_PATH} is missing (gpucloud-node tune writes it at boot)"
    ]


def test_check_command_reports_an_untuned_node_unhealthy(tmp_path, monkeypatch, capsys):
    """`check` (and so the gate) reads the settings back on nodes the stack tunes."""
    import json

    from gpucloud.node import cli, gate_commands
    from gpucloud.node.nvidia import HealthReport

    monkeypatch.setattr(gate_commands, "check_gpus", lambda expectations, **options: HealthReport(expectations))
    monkeypatch.setenv(tuning.ROOT_ENV, str(proc_sys(tmp_path, "fq_codel", "cubic")))
    config = tmp_path / "node.json"
    config.write_text(json.dumps({"expected_gpu_count": 1, "expected_gpu_model": "H100", "network_tuning": True}))

    status = cli.main(["--config", str(config), "check", "--json", "--read-only"])

    report = json.loads(capsys.readouterr().out)
    assert status == 1 and report["healthy"] is False
    assert any("tcp_congestion_control is 'cubic'" in problem for problem in report["problems"])
