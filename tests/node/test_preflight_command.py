"""`gpucloud-node preflight` and `preflight-decide` as the job document runs them
(node/preflight_command.py): what of the command line reaches the node's preflight and the job
launcher, the exit status and readings that come back, and the answer the supervisor reads when
its input is bad or its verdict too long. The launcher, metadata and fi_info are faked."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import gpucloud.node.preflight_command as command
from gpucloud.node.cli import build_parser
from gpucloud.node.commands import CommandResult
from gpucloud.node.config import NodeConfig
from gpucloud.node.launcher import EXIT_USAGE, encode_command
from gpucloud.node.preflight import RESULT_MARKER
from gpucloud.node.preflight_search import EXIT_BELOW_FLOOR
from node_fakes import write_rank_files

NODES = "10.0.1.11,10.0.1.12"


class Metadata:
    def __init__(self, endpoint) -> None:
        self.endpoint = endpoint

    def instance_type(self) -> str:
        return "p5.48xlarge"


@dataclass
class Launches:
    """Stands in for the job launcher: records each launch and writes the worker's rank files."""

    ranks: list[dict]
    status: int = 0
    nccl_log: str = ""
    made: list = field(default_factory=list)

    def __call__(self, spec, metadata, run, checkpoint_root, store_for, **options):
        self.made.append((spec, metadata, checkpoint_root, options))
        write_rank_files(Path(spec.command[spec.command.index("--out") + 1]), self.ranks, self.nccl_log, "nccl.node.1.log")
        return lambda: self.status


def rank(index: int, busbw: float = 350.0) -> dict:
    return {"rank": index, "local_rank": index, "world_size": 16, "gpu": "NVIDIA H100 80GB HBM3", "matmul_tflops": 700.0,
            "copy_gbps": 3000.0, "seconds": 3.0, "correct": True, "sweep": [{"bytes": 1 << 30, "busbw_gbps": busbw}]}


@pytest.fixture
def node(monkeypatch, tmp_path):
    """A p5.48xlarge at 10.0.1.11 with 32 EFA devices, whose NCCL picks the OFI plugin."""
    monkeypatch.setattr(command, "InstanceMetadata", Metadata)
    monkeypatch.setattr(command, "local_ipv4", lambda metadata: "10.0.1.11")
    monkeypatch.setattr(command, "job_dir", lambda job_id: tmp_path / "jobs" / job_id)
    efa = Path(__file__).resolve().parents[1] / "fixtures" / "efa"
    fi_info = (efa / "fi_info_p5_32_devices.txt").read_text()
    monkeypatch.setattr(command, "run_command", lambda argv, timeout_s, env=None: CommandResult(tuple(argv), 0, stdout=fi_info))
    monkeypatch.delenv(command.INSTANCE_TYPE_ENV, raising=False)
    monkeypatch.setenv("GPUCLOUD_TEST_MARK", "kept")
    launches = Launches([rank(0), rank(1)], nccl_log=(efa / "nccl_init_ofi.log").read_text())
    monkeypatch.setattr(command, "Launch", launches)
    return launches


def config(tmp_path) -> NodeConfig:
    return NodeConfig(project="vision", group_name="gpu-cloud-vision-train-train", checkpoint_dir=str(tmp_path / "ckpt"),
                      nvidia_smi="/usr/bin/nvidia-smi", command_timeout_s=12.0)


def run(tmp_path, *argv: str, gate_problems=()) -> tuple[int, dict]:
    arguments = build_parser().parse_args(["preflight", "--job", "train-20261128000000-a1b2", "--nodes", NODES,
                                           "--textfile", str(tmp_path / "readings.prom"), *argv])
    checked = []

    def node_check(node_config, quiet):
        checked.append(quiet)
        return type("Report", (), {"problems": list(gate_problems)})()

    status = command._preflight(config(tmp_path), command._with_options(arguments), node_check)
    assert checked in ([True], []), "the gate's check runs quietly, once, in a round with local checks"
    result = json.loads((tmp_path / "jobs" / "train-20261128000000-a1b2" / "preflight.json").read_text())
    return status, result


def test_the_command_line_reaches_the_launcher_and_the_result_names_the_node_and_its_type(node, tmp_path, capsys):
    status, result = run(tmp_path, "--port", "29611", "--gpus-per-node", "2", "--image", "repo/train:1")
    assert status == 0, result
    assert (result["node"], result["set"], result["instance_type"]) == ("10.0.1.11", ["10.0.1.11", "10.0.1.12"], "p5.48xlarge")
    assert (result["level"], result["checks"], result["efa_devices"]) == ("quick", ["local", "fabric"], 32)
    [(spec, metadata, checkpoint_root, options)] = node.made
    assert (spec.job_id, spec.nodes, spec.port, spec.gpus_per_node, spec.image) == (
        "train-20261128000000-a1b2", ("10.0.1.11", "10.0.1.12"), 29611, 2, "repo/train:1")
    assert spec.command[:4] == ("timeout", "-k", "10", "100")
    assert checkpoint_root == tmp_path / "ckpt"
    assert (options["nvidia_smi"], options["command_timeout_s"]) == ("/usr/bin/nvidia-smi", 12.0)
    environment = options["environ"]
    assert environment["NCCL_DEBUG"] == "INFO" and environment["GPUCLOUD_TEST_MARK"] == "kept"
    assert callable(options["ecr_client"])
    assert ('gpucloud_preflight_ok{project="vision",group="gpu-cloud-vision-train-train",instance_type="p5.48xlarge",'
            'job="train-20261128000000-a1b2",level="quick"} 1') in (tmp_path / "readings.prom").read_text()
    assert capsys.readouterr().out.startswith(RESULT_MARKER)


def test_the_type_comes_from_the_environment_where_there_is_no_metadata_and_options_come_base64(node, tmp_path, monkeypatch):
    monkeypatch.setenv(command.INSTANCE_TYPE_ENV, "g5.2xlarge")
    options = encode_command(["--level", "full", "--checks", "fabric", "--efa-devices", "0"])
    status, result = run(tmp_path, "--options-b64", options, gate_problems=["never asked in a fabric round"])
    assert status == 0
    assert (result["instance_type"], result["level"], result["checks"], result["efa_devices"]) == (
        "g5.2xlarge", "full", ["fabric"], None)
    assert node.made[0][0].command[:4] == ("timeout", "-k", "10", "600")


def test_the_exit_status_and_readings_say_what_failed(node, tmp_path, capsys):
    status, result = run(tmp_path, "--efa-devices", "33", gate_problems=["GPU 3: ECC errors"])
    assert status == 1
    assert result["problems"] == ["GPU gate: GPU 3: ECC errors", "fi_info -p efa lists 32 EFA device(s); p5.48xlarge has 33"]
    assert ('gpucloud_preflight_ok{project="vision",group="gpu-cloud-vision-train-train",instance_type="p5.48xlarge",'
            'job="train-20261128000000-a1b2",level="quick"} 0') in (tmp_path / "readings.prom").read_text()


def test_a_node_list_that_is_not_addresses_is_the_launcher_s_usage_error(node, tmp_path, caplog):
    arguments = build_parser().parse_args(["preflight", "--job", "j", "--nodes", "10.0.1.11,node-b"])
    with caplog.at_level(logging.ERROR, logger="gpucloud.node"):
        assert command._preflight(config(tmp_path), arguments, lambda *args: pytest.fail("no check")) == EXIT_USAGE
    assert "preflight: --nodes: 'node-b' is not an IPv4 address" in caplog.text
    assert node.made == []


def test_bad_options_b64_is_a_usage_error():
    arguments = build_parser().parse_args(["preflight", "--job", "j", "--nodes", "10.0.1.11", "--options-b64", "!!"])
    with pytest.raises(SystemExit) as exited:
        command._with_options(arguments)
    assert exited.value.code == 2


def test_preflight_replace_exits_0_when_the_node_was_replaced(monkeypatch, capsys):
    monkeypatch.setattr(command, "InstanceMetadata", Metadata)
    monkeypatch.setattr(command, "identify", lambda config, metadata: ("i-0abc", "us-east-1"))
    monkeypatch.setattr(command, "replace_node", lambda *args: "replaced")
    arguments = build_parser().parse_args(["preflight-replace", "--job", "j"])
    assert arguments.handler(NodeConfig(group_name="g"), arguments) == 0
    assert capsys.readouterr().out == "replaced\n"


def decide_options(rounds) -> str:
    return encode_command(["--instance-ids", json.dumps(["i-1", "i-2"]), "--rounds", json.dumps(rounds)])


def test_preflight_decide_prints_the_verdict_alone_and_exits_2_on_input_it_cannot_read(capsys, caplog):
    parse = build_parser().parse_args
    arguments = parse(["preflight-decide", "--job", "j", "--nodes", "10.0.1.1,10.0.1.2",
                       "--options-b64", decide_options([["i-1=0", "i-2=0"]])])
    assert arguments.handler(NodeConfig(), arguments) == 0
    printed = capsys.readouterr().out
    assert json.loads(printed)["action"] == "pass" and not printed.endswith("\n")
    unreadable = [("10.0.1.1,10.0.1.2", "!!"), ("10.0.1.1,node-b", decide_options([])),
                  ("10.0.1.1,10.0.1.2", encode_command(["--instance-ids", "[", "--rounds", "[]"]))]
    for nodes, bad in unreadable:
        arguments = parse(["preflight-decide", "--job", "j", "--nodes", nodes, "--options-b64", bad])
        with caplog.at_level(logging.ERROR, logger="gpucloud.node"):
            assert arguments.handler(NodeConfig(), arguments) == 2
        assert capsys.readouterr().out == ""
    assert caplog.text.count("preflight-decide: ") == 3


def test_a_verdict_longer_than_the_output_the_supervisor_reads_becomes_a_stop_that_fits(monkeypatch):
    rounds = [[f"i-1={EXIT_BELOW_FLOOR}", f"i-2={EXIT_BELOW_FLOOR}"]]
    answer = command.decision("10.0.1.1,10.0.1.2", decide_options(rounds))
    monkeypatch.setattr(command, "STDOUT_LIMIT", len(answer))
    assert command.decision("10.0.1.1,10.0.1.2", decide_options(rounds)) == answer, "exactly at the limit: kept"
    monkeypatch.setattr(command, "STDOUT_LIMIT", len(answer) - 1)
    stopped = json.loads(command.decision("10.0.1.1,10.0.1.2", decide_options(rounds)))
    assert stopped == {"action": "stop", "reason": f"the preflight's verdict ({len(answer)} characters) is longer than "
                       f"the {len(answer) - 1} of a command's output the supervisor reads",
                       "culprits": {}, "sets": [], "replace": []}


def test_a_later_round_of_the_same_job_runs_in_the_job_s_directory_again(node, tmp_path):
    """A node tested in the first round and again in a bisection round: the job's directory is there."""
    assert run(tmp_path)[0] == 0
    status, result = run(tmp_path, "--checks", "fabric")
    assert status == 0 and result["checks"] == ["fabric"] and len(node.made) == 2


def exit_status(call) -> int:
    try:
        return call()
    except SystemExit as exited:
        return exited.code


@pytest.mark.parametrize("argv", [
    ["preflight", "--nodes", NODES], ["preflight", "--job", "j"], ["preflight-replace"],
    ["preflight-decide", "--nodes", NODES, "--options-b64", "e30="], ["preflight-decide", "--job", "j", "--options-b64", "e30="],
    ["preflight-decide", "--job", "j", "--nodes", NODES]])
def test_each_command_without_a_required_option_is_a_usage_error(argv):
    assert exit_status(lambda: build_parser().parse_args(argv)) == 2


@pytest.mark.parametrize("options", [["--rounds", "[]"], ["--instance-ids", '["i-1", "i-2"]']])
def test_preflight_decide_without_its_ids_or_rounds_exits_2(options):
    arguments = build_parser().parse_args(["preflight-decide", "--job", "j", "--nodes", "10.0.1.1,10.0.1.2",
                                           "--options-b64", encode_command(options)])
    assert exit_status(lambda: arguments.handler(NodeConfig(), arguments)) == 2
