"""`gpucloud-node preflight`: one node's checks on recorded figures and sample EFA and NCCL output.

The torchrun step is replaced by a launch that writes what the real worker wrote on four H200s
(tests/fixtures/gpu/preflight_*.json, recorded by tests/node/gpu/record_preflight.py); the EFA
branch runs on tests/fixtures/efa/ samples, since one host shows no EFA.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from gpucloud.node.cli import build_parser
from gpucloud.node.commands import CommandResult
from gpucloud.node.preflight import (
    RESULT_MARKER,
    Preflight,
    PreflightSpec,
    efa_device_count,
    load_floors,
    nccl_network,
    network_problem,
    render_readings,
    report,
    worker_argv,
)
from node_fakes import write_rank_files

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NODES = ("10.0.1.11", "10.0.1.12")


def recorded(name: str) -> dict:
    return json.loads((FIXTURES / "gpu" / f"preflight_{name}.json").read_text())


def efa_sample(name: str) -> str:
    return (FIXTURES / "efa" / name).read_text()


@dataclass
class Gate:
    problems: list[str] = field(default_factory=list)


@dataclass
class FakeLaunch:
    """Writes rank files and an NCCL log as the worker and NCCL would, and records the call."""

    ranks: list[dict]
    status: int = 0
    nccl_log: str = ""
    calls: list = field(default_factory=list)

    def __call__(self, argv, environment):
        self.calls.append((argv, dict(environment)))
        write_rank_files(Path(argv[argv.index("--out") + 1]), self.ranks, self.nccl_log, "nccl.host.1.log")
        return self.status


def fi_info(stdout: str = "", returncode: int = 0):
    def run(argv, timeout_s, env=None):
        return CommandResult(tuple(argv), returncode, stdout=stdout)
    return run


def recorded_ranks(record: dict, node: str, run: int = 0) -> list[dict]:
    """A node's ranks as the worker wrote them, rebuilt from a recorded first round."""
    result = next(item for item in record["runs"][run]["rounds"][0] if item["node"] == node)
    return [{**gpu, "world_size": result["world_size"], "sweep": result["sweep"], "correct": result["correct"]}
            for gpu in result["gpus"]]


def preflight(tmp_path, launch, spec=None, gate=None, run=None) -> dict:
    tmp_path.mkdir(parents=True, exist_ok=True)
    spec = spec or PreflightSpec("train-20261128000000-a1b2", NODES, 29500, instance_type="p5.48xlarge")
    return Preflight(spec, NODES[0], tmp_path, lambda: gate or Gate(), run or fi_info(efa_sample("fi_info_p5_32_devices.txt")),
                     launch, load_floors())()


def test_fi_info_counts_one_device_per_rdm_domain():
    assert efa_device_count(efa_sample("fi_info_p5_32_devices.txt")) == 32
    assert efa_device_count(efa_sample("fi_info_p5_31_devices.txt")) == 31
    assert efa_device_count("") == 0


def test_nccl_network_is_read_from_its_init_log():
    assert nccl_network(efa_sample("nccl_init_ofi.log")) == "Libfabric"
    assert nccl_network(efa_sample("nccl_init_socket.log")) == "Socket"
    assert nccl_network(efa_sample("nccl_channels_old_plugin.log")) == "AWS Libfabric"
    assert nccl_network("NCCL INFO Init COMPLETE") is None


def test_sockets_fail_an_efa_node_between_nodes_only():
    assert "NET/Socket" in network_problem("Socket", 32, 2)
    assert network_problem("Libfabric", 32, 2) is None
    assert network_problem("AWS Libfabric", 4, 2) is None
    assert network_problem("Socket", 32, 1) is None, "one node's GPUs talk over NVLink, not the network"
    assert network_problem("Socket", 0, 4) is None, "a type without EFA has only sockets"
    assert "no network choice" in network_problem(None, 32, 2)


def test_efa_node_on_sockets_with_a_missing_device_fails_with_both_reasons(tmp_path):
    ranks = recorded_ranks(recorded("nvlink"), "127.0.0.1")
    result = preflight(tmp_path, FakeLaunch(ranks, nccl_log=efa_sample("nccl_init_socket.log")),
                       run=fi_info(efa_sample("fi_info_p5_31_devices.txt")))
    assert not result["ok"]
    assert result["efa_devices"] == 31
    assert any("lists 31 EFA device(s); p5.48xlarge has 32" in problem for problem in result["problems"])
    assert any("NCCL chose NET/Socket" in problem for problem in result["problems"])


def test_efa_node_with_every_device_and_the_ofi_plugin_passes_on_recorded_h200_figures(tmp_path):
    ranks = recorded_ranks(recorded("nvlink"), "127.0.0.1")
    launch = FakeLaunch(ranks, nccl_log=efa_sample("nccl_init_ofi.log"))
    result = preflight(tmp_path, launch)
    assert result["ok"], result["problems"]
    assert (result["efa_devices"], result["network"]) == (32, "Libfabric")
    assert result["busbw_gbps"] == ranks[0]["sweep"][-1]["busbw_gbps"] > 300
    argv, environment = launch.calls[0]
    assert environment["NCCL_DEBUG"] == "INFO" and environment["NCCL_DEBUG_FILE"].startswith(str(tmp_path))
    assert argv[:4] == ["timeout", "-k", "10", "100"], "every step has a time limit"


def test_a_gpu_below_its_model_floor_fails_the_node_as_recorded_under_a_competing_process(tmp_path):
    record = recorded("loaded")
    ranks = recorded_ranks(record, "127.0.0.3")
    spec = PreflightSpec("train-20261128000000-a1b2", ("127.0.0.1", "127.0.0.3"), 29500, instance_type="nvidia-h200-x4")
    result = preflight(tmp_path, FakeLaunch(ranks), spec=spec)
    assert ranks[0]["matmul_tflops"] < 450
    assert result["problems"] == [f"GPU 0 (NVIDIA H200): {ranks[0]['matmul_tflops']:g} TFLOP/s bf16 matmul, below "
                                  "the H200 floor of 450 (throttled, degraded or mis-clocked)",
                                  f"GPU 0 (NVIDIA H200): {ranks[0]['copy_gbps']:g} GB/s device copy, below the H200 "
                                  "floor of 2800 (throttled, degraded or mis-clocked)"]


def test_gate_problems_come_first_and_the_type_without_efa_runs_no_fi_info(tmp_path):
    calls = []

    def run(argv, timeout_s, env=None):
        calls.append(argv)
        return CommandResult(tuple(argv), 0)

    spec = PreflightSpec("train-20261128000000-a1b2", NODES, 29500, instance_type="g5.2xlarge")
    result = preflight(tmp_path, FakeLaunch(recorded_ranks(recorded("nvlink"), "127.0.0.1")), spec=spec,
                       gate=Gate(["GPU 3: ECC errors"]), run=run)
    assert result["problems"] == ["GPU gate: GPU 3: ECC errors"]
    assert calls == []


@pytest.mark.parametrize(("status", "expected"), [
    (127, "torchrun not found: no PyTorch on this node"),
    (124, "did not end within 100 s"),
    (1, "exited with status 1"),
])
def test_a_torchrun_step_that_cannot_run_is_a_set_problem_not_a_hang(tmp_path, status, expected):
    result = preflight(tmp_path, FakeLaunch([], status=status))
    assert not result["ok"]
    assert expected in result["set_problems"][0]
    assert result["busbw_gbps"] is None


def test_bisection_rounds_run_the_fabric_alone(tmp_path):
    spec = PreflightSpec("train-20261128000000-a1b2", NODES, 29500, checks=("fabric",), instance_type="p5.48xlarge")
    calls = []
    result = Preflight(spec, NODES[0], tmp_path, lambda: pytest.fail("no gate in a fabric round"),
                       lambda argv, timeout_s, env=None: calls.append(argv), FakeLaunch([]), load_floors())()
    assert calls == [] and result["checks"] == ["fabric"]
    assert worker_argv(spec, tmp_path, Path("w.py"))[-6:-4] == ["--checks", "fabric"]


def test_result_goes_to_stdout_the_job_directory_and_prometheus_readings(tmp_path, capsys):
    result = preflight(tmp_path, FakeLaunch(recorded_ranks(recorded("nvlink"), "127.0.0.1"),
                                            nccl_log=efa_sample("nccl_init_ofi.log")))
    textfile = tmp_path / "textfile" / "gpucloud_preflight.prom"
    assert report(result, {"project": "vision", "group": "train", "instance_type": "p5.48xlarge"}, tmp_path, textfile) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    assert json.loads(line.removeprefix(RESULT_MARKER)) == result == json.loads((tmp_path / "preflight.json").read_text())
    readings = textfile.read_text()
    assert 'gpucloud_preflight_ok{project="vision",group="train",instance_type="p5.48xlarge",job="train-20261128000000-a1b2",level="quick"} 1' in readings
    assert "gpucloud_preflight_efa_devices{" in readings and "gpucloud_preflight_matmul_tflops{" in readings
    promtool = shutil.which("promtool")
    if promtool:
        checked = subprocess.run([promtool, "check", "metrics"], input=readings, capture_output=True, text=True)
        assert "error" not in (checked.stdout + checked.stderr).lower(), checked.stdout + checked.stderr


def test_readings_of_a_failed_node_say_zero():
    text = render_readings({"level": "quick", "ok": False, "gpus": [], "set": ["a", "b"], "busbw_gbps": 3.1}, {})
    assert "gpucloud_preflight_ok{job=\"\",level=\"quick\"} 0" in text
    assert 'gpucloud_preflight_busbw_gbps{job="",level="quick",nodes="2"} 3.1' in text


def test_node_cli_takes_the_preflight_and_its_replacement():
    arguments = build_parser().parse_args(["preflight", "--job", "j", "--nodes", "10.0.1.11", "--checks", "fabric",
                                           "--level", "full"])
    assert (arguments.level, arguments.checks) == ("full", "fabric")
    arguments = build_parser().parse_args(["preflight-replace", "--job", "j", "--reason", "slow"])
    assert arguments.reason == "slow"


def test_efa_counts_are_the_ones_the_stack_gives_each_type():
    """The floors file's EFA devices per type equal InstanceTypeFacts.efa_interfaces on EC2's
    catalogue as moto carries it (DescribeInstanceTypes: MaximumEfaInterfaces, MaximumNetworkCards)."""
    import moto
    from gpucloud.lookups.facts import InstanceTypeFacts

    catalogue = json.loads(gzip.open(Path(moto.__file__).parent / "ec2/resources/instance_types.json.gz").read())
    for name, entry in load_floors()["instance_types"].items():
        network = catalogue[name]["NetworkInfo"]
        facts = InstanceTypeFacts(name, 8, "", 0, True, network["EfaInfo"]["MaximumEfaInterfaces"],
                                  network["MaximumNetworkCards"], 0, ("x86_64",))
        assert entry["efa_devices"] == facts.efa_interfaces, name


def test_each_node_judges_the_set_s_bus_bandwidth_so_a_supervisor_reading_exit_statuses_stops_on_sockets(tmp_path):
    """The recorded sockets run (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1) fails every node; NVLink passes."""
    spec = PreflightSpec("train-20261128000000-a1b2", ("127.0.0.1", "127.0.0.2"), 29500, instance_type="nvidia-h200-x4")
    sockets = preflight(tmp_path / "s", FakeLaunch(recorded_ranks(recorded("sockets"), "127.0.0.1")), spec=spec)
    nvlink = preflight(tmp_path / "n", FakeLaunch(recorded_ranks(recorded("nvlink"), "127.0.0.1")), spec=spec)
    measured = sockets["busbw_gbps"]
    assert measured < 5
    assert sockets["fabric_problems"] == [f"all_reduce bus bandwidth {measured:g} GB/s across 2 node(s) is below the "
                                          "nvidia-h200-x4 floor of 200 GB/s"]
    assert not sockets["ok"] and sockets["problems"] == []
    assert nvlink["ok"] and nvlink["fabric_problems"] == []


def test_preflight_replace_goes_through_the_watch_s_replacement_and_the_group_s_breaker(monkeypatch, capsys):
    import gpucloud.node.preflight_command as command
    from gpucloud.node.config import NodeConfig
    from gpucloud.node.launcher import encode_command

    calls = []
    monkeypatch.setattr(command, "identify", lambda config, metadata: ("i-0abc", "us-east-1"))
    monkeypatch.setattr(command, "replace_node", lambda *args: calls.append(args) or "held")
    config = NodeConfig(group_name="gpu-cloud-vision-train-train", max_replacements_per_hour=2)
    arguments = build_parser().parse_args(["preflight-replace", "--job", "train-20261128000000-a1b2", "--options-b64",
                                           encode_command(["--reason", "all_reduce with 10.0.1.11 below its floor"])])

    assert arguments.handler(config, arguments) == 1, "held by the breaker: not replaced"
    [(_, instance, region, group, faults, limit, *_)] = calls
    assert (instance, region, group, limit) == ("i-0abc", "us-east-1", "gpu-cloud-vision-train-train", 2)
    assert faults[0].reason == "job train-20261128000000-a1b2: all_reduce with 10.0.1.11 below its floor"
    assert capsys.readouterr().out == "held\n"


def test_an_explicit_efa_count_wins_over_the_type_s_and_a_failed_node_exits_1(tmp_path, capsys):
    ranks = recorded_ranks(recorded("nvlink"), "127.0.0.1")
    spec = PreflightSpec("train-20261128000000-a1b2", NODES, 29500, instance_type="p5.48xlarge", efa_devices=33)
    result = preflight(tmp_path, FakeLaunch(ranks, nccl_log=efa_sample("nccl_init_ofi.log")), spec=spec)
    assert result["problems"] == ["fi_info -p efa lists 32 EFA device(s); p5.48xlarge has 33"]
    assert report(result, {}, tmp_path, tmp_path / "readings.prom") == 1
    assert 'gpucloud_preflight_ok{job="train-20261128000000-a1b2",level="quick"} 0' in (tmp_path / "readings.prom").read_text()


def test_the_watch_serves_the_preflight_readings_beside_its_own(tmp_path):
    """The collector scrapes only the watch's /metrics, so the preflight's textfile is served there too."""
    import urllib.request

    from gpucloud.node.exporter import serve_textfile
    from gpucloud.node.preflight import TEXTFILE
    from gpucloud.node.watch import WatchSettings

    assert TEXTFILE.parent == WatchSettings.textfile.parent
    (tmp_path / "gpucloud.prom").write_text('DCGM_FI_DEV_GPU_UTIL{gpu="0"} 97\n')
    (tmp_path / TEXTFILE.name).write_text(render_readings({"level": "quick", "ok": True, "gpus": [], "set": ["a"]}, {}))
    server = serve_textfile(tmp_path / "gpucloud.prom", "127.0.0.1:0")
    try:
        body = urllib.request.urlopen(f"http://127.0.0.1:{server.server_address[1]}/metrics", timeout=5).read().decode()
    finally:
        server.shutdown()
    assert body.startswith('DCGM_FI_DEV_GPU_UTIL{gpu="0"} 97\n')
    assert 'gpucloud_preflight_ok{job="",level="quick"} 1' in body
