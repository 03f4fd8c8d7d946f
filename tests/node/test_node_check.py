"""`gpucloud-node check` against nvidia-smi output recorded on real H100 / H200 machines and
hand-made failure cases (see tests/fixtures/nvidia_smi/*/README.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import gpucloud.node
import pytest
from gpucloud.node.cli import main
from gpucloud.node.commands import run_command
from gpucloud.node.nvidia import (
    Expectations,
    check_gpus,
    model_matches,
    parse_fabric,
    parse_gpu_query,
    parse_nvlink_status,
    parse_topology,
)
from node_fakes import FakeNvidiaSmi, Reply, fixture_text, recorded

H100 = Expectations(gpu_count=1, gpu_model="H100")
TWO_H200_NVLINK = Expectations(gpu_count=2, gpu_model="H200", nvlink=True)
TWO_H200_FABRIC = Expectations(gpu_count=2, gpu_model="H200", nvlink=True, fabric=True)
H100_FABRIC = Expectations(gpu_count=1, gpu_model="H100", fabric=True)


def two_h200(query: str = "h200x2/query-gpu.csv", **replies: Reply) -> FakeNvidiaSmi:
    defaults = {"nvlink": recorded("h200x2/nvlink-status.txt"), "topology": recorded("h200x2/topo-m.txt")}
    return FakeNvidiaSmi(query=recorded(query), **{**defaults, **replies})


def test_recorded_h100_is_healthy_without_touching_the_gpu():
    nvidia_smi = FakeNvidiaSmi(query=recorded("h100/query-gpu.csv"))

    report = check_gpus(H100, run=nvidia_smi)

    assert report.healthy, report.problems
    assert nvidia_smi.kinds_called() == ["query"]
    assert report.gpus[0].value("name") == "NVIDIA H100 80GB HBM3"
    assert report.gpus[0].value("retired_pages.pending") == "[N/A]"


def test_report_matches_what_the_agent_printed_on_the_h100():
    printed_there = json.loads(fixture_text("h100/check.json"))

    report = check_gpus(H100, run=FakeNvidiaSmi(query=recorded("h100/query-gpu.csv"))).to_dict()

    assert report.keys() == printed_there.keys()
    assert (report["healthy"], report["problems"], report["expected"]) == (
        printed_there["healthy"],
        printed_there["problems"],
        printed_there["expected"],
    )
    assert report["gpus"][0].keys() == printed_there["gpus"][0].keys()


def test_recorded_two_h200s_with_nvlink_are_healthy():
    nvidia_smi = two_h200()

    report = check_gpus(TWO_H200_NVLINK, run=nvidia_smi)

    assert report.healthy, report.problems
    assert nvidia_smi.kinds_called() == ["query", "nvlink", "topology"]
    assert report.nvlink == {gpu: {link: True for link in range(18)} for gpu in (0, 1)}
    assert report.topology == {0: {1: "NV18"}, 1: {0: "NV18"}}
    assert report.to_dict()["topology"] == json.loads(fixture_text("h200x2/check.json"))["topology"]


def test_missing_gpu_is_unhealthy():
    report = check_gpus(TWO_H200_NVLINK, run=two_h200("synthetic/missing_gpu.csv"))

    assert not report.healthy
    assert "found 1 GPUs, expected 2" in report.problems


def test_gpu_the_driver_cannot_reach_is_reported_verbatim():
    report = check_gpus(TWO_H200_NVLINK, run=two_h200("synthetic/unreachable_gpu.csv"))

    assert report.problems[:2] == [
        "nvidia-smi reported: Unable to determine the device handle for GPU0000:00:07.0: Unknown Error",
        "found 1 GPUs, expected 2",
    ]


def test_uncorrectable_ecc_errors_and_pending_row_remap_are_unhealthy():
    report = check_gpus(TWO_H200_NVLINK, run=two_h200("synthetic/ecc_errors.csv"))

    assert report.problems == [
        "GPU 1: 3 uncorrectable ECC errors since the driver loaded",
        "GPU 1: row remapping is pending (the GPU needs a reset)",
    ]


def test_gpu_at_or_over_the_temperature_limit_is_unhealthy():
    nvidia_smi = two_h200("synthetic/overheating.csv")

    too_hot = check_gpus(TWO_H200_NVLINK, run=nvidia_smi)
    tolerated = check_gpus(Expectations(gpu_count=2, max_temperature_c=95), run=nvidia_smi)

    assert too_hot.problems == ["GPU 1: temperature 91 C is at or above the 85 C limit"]
    assert tolerated.healthy


def test_gpu_requiring_reset_is_unhealthy_without_unreadable_noise():
    report = check_gpus(TWO_H200_NVLINK, run=two_h200("synthetic/requires_reset.csv"))

    assert report.problems == ["GPU 1: driver reports the GPU requires a reset"]


def test_wrong_model_is_unhealthy():
    report = check_gpus(
        Expectations(gpu_count=1, gpu_model="A100"), run=FakeNvidiaSmi(query=recorded("h100/query-gpu.csv"))
    )

    assert report.problems == ["GPU 0 is 'NVIDIA H100 80GB HBM3', expected 'A100'"]


@pytest.mark.parametrize(
    "reply, problem",
    [
        (
            Reply(stdout=fixture_text("synthetic/driver_unreachable.txt"), returncode=9),
            "nvidia-smi failed with exit status 9: NVIDIA-SMI has failed because it couldn't "
            "communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.",
        ),
        (Reply(timed_out=True), "nvidia-smi did not answer within 30 s"),
        (Reply(not_found=True), "nvidia-smi not found"),
    ],
    ids=["driver-not-loaded", "hung-driver", "no-binary"],
)
def test_driver_that_does_not_answer_is_unhealthy(reply, problem):
    nvidia_smi = FakeNvidiaSmi(query=reply)

    report = check_gpus(H100, run=nvidia_smi, timeout_s=30)

    assert report.problems == [problem]
    assert nvidia_smi.kinds_called() == ["query"]


def test_persistence_mode_off_is_turned_on_and_verified():
    nvidia_smi = two_h200(
        "synthetic/persistence_off.csv",
        enable_persistence=Reply(stdout="Enabled persistence mode for GPU 00000000:00:06.0.\n"),
        persistence=recorded("h200x2/query-persistence.csv"),
    )

    report = check_gpus(TWO_H200_NVLINK, run=nvidia_smi)

    assert report.healthy, report.problems
    assert report.actions == ["enabled persistence mode on GPU 0, GPU 1"]
    assert nvidia_smi.kinds_called() == ["query", "enable_persistence", "persistence", "nvlink", "topology"]
    assert ("nvidia-smi", "-pm", "1") in nvidia_smi.calls


def test_persistence_mode_that_cannot_be_enabled_is_unhealthy():
    nvidia_smi = two_h200(
        "synthetic/persistence_off.csv",
        enable_persistence=Reply(stdout=fixture_text("synthetic/persistence_denied.txt"), returncode=4),
    )

    report = check_gpus(TWO_H200_NVLINK, run=nvidia_smi)

    assert report.problems == [
        "persistence mode is off on GPU 0, GPU 1 and enabling it failed: nvidia-smi failed with exit "
        "status 4: Unable to set persistence mode for GPU 00000000:00:06.0: Insufficient Permissions"
    ]


def test_persistence_mode_still_off_after_enabling_is_unhealthy():
    nvidia_smi = two_h200(
        "synthetic/persistence_off.csv",
        enable_persistence=Reply(),
        persistence=recorded("synthetic/persistence_still_off.csv"),
    )

    report = check_gpus(TWO_H200_NVLINK, run=nvidia_smi)

    assert report.problems == ["persistence mode is still off on GPU 0, GPU 1 after nvidia-smi -pm 1"]


def test_read_only_check_reports_persistence_off_and_changes_nothing():
    nvidia_smi = two_h200("synthetic/persistence_off.csv")

    report = check_gpus(TWO_H200_NVLINK, run=nvidia_smi, enable_persistence=False)

    assert report.problems == ["persistence mode is off on GPU 0, GPU 1 (read-only check: left unchanged)"]
    assert "enable_persistence" not in nvidia_smi.kinds_called()


def test_inactive_nvlink_links_are_unhealthy_where_nvlink_is_expected():
    report = check_gpus(TWO_H200_NVLINK, run=two_h200(nvlink=recorded("synthetic/nvlink_degraded.txt")))

    assert report.problems == [
        "GPU 0: NVLink links 5, 11 inactive (of 18)",
        "GPU 1: NVLink links 5, 11 inactive (of 18)",
    ]
    assert report.to_dict()["nvlink"]["0"]["inactive"] == [5, 11]


def test_gpus_without_nvlink_links_or_peers_are_unhealthy_where_nvlink_is_expected():
    nvidia_smi = two_h200(
        nvlink=recorded("synthetic/nvlink_absent.txt"), topology=recorded("synthetic/topo_pcie.txt")
    )

    report = check_gpus(TWO_H200_NVLINK, run=nvidia_smi)

    assert report.problems == [
        "GPU 0: no active NVLink links",
        "GPU 1: no active NVLink links",
        "GPU 0: reaches no other GPU over NVLink (topology: SYS)",
        "GPU 1: reaches no other GPU over NVLink (topology: SYS)",
    ]


def test_nvlink_is_recorded_but_not_enforced_on_types_without_it():
    nvidia_smi = two_h200(
        nvlink=recorded("synthetic/nvlink_degraded.txt"), topology=recorded("synthetic/topo_pcie.txt")
    )

    report = check_gpus(Expectations(gpu_count=2, gpu_model="H200"), run=nvidia_smi)

    assert report.healthy
    assert report.topology == {0: {1: "SYS"}, 1: {0: "SYS"}}


def test_nvlink_status_failure_is_unhealthy_where_nvlink_is_expected():
    report = check_gpus(TWO_H200_NVLINK, run=two_h200(nvlink=Reply(returncode=3, stdout="Not Supported")))

    assert report.problems == ["GPU nvlink unavailable: nvidia-smi failed with exit status 3: Not Supported"]


def older_driver_without(field: str) -> FakeNvidiaSmi:
    """The H100 recording as a driver that does not know the last query field would print it."""
    rejected = Reply(stdout=fixture_text("h100/invalid-field.txt").replace("no.such.field", field), returncode=2)
    without_field = "\n".join(line.rsplit(",", 1)[0] for line in fixture_text("h100/query-gpu.csv").splitlines())
    return FakeNvidiaSmi(query=[rejected, Reply(stdout=without_field)])


def test_query_field_unknown_to_an_older_driver_is_dropped_and_retried():
    nvidia_smi = older_driver_without("remapped_rows.failure")

    report = check_gpus(H100, run=nvidia_smi)

    assert report.healthy, report.problems
    assert "remapped_rows.failure" in nvidia_smi.calls[0][1]
    assert "remapped_rows.failure" not in nvidia_smi.calls[1][1]


def test_check_skipped_for_an_older_driver_is_named_in_notes_and_json_but_stays_healthy():
    """Row remapping arrived with Ampere and driver R450: a driver without the field reports on a
    GPU without the feature, and failing it would abandon every node of that image forever."""
    report = check_gpus(H100, run=older_driver_without("remapped_rows.failure"))

    assert report.healthy
    assert report.notes == ["skipped the remapped_rows.failure check: this driver does not know that query field"]
    assert report.to_dict()["notes"] == report.notes


def test_fabric_is_not_queried_unless_the_type_has_nvswitches():
    nvidia_smi = two_h200()

    check_gpus(TWO_H200_NVLINK, run=nvidia_smi)

    assert "details" not in nvidia_smi.kinds_called()


def test_completed_fabric_registration_is_healthy():
    report = check_gpus(TWO_H200_FABRIC, run=two_h200(details=recorded("synthetic/fabric_completed.txt")))

    assert report.healthy, report.problems
    assert report.notes == []
    assert report.fabric == {
        "00000000:00:06.0": {"state": "Completed", "status": "Success"},
        "00000000:00:07.0": {"state": "Completed", "status": "Success"},
    }


@pytest.mark.parametrize(
    "recording, problem",
    [
        (
            "synthetic/fabric_in_progress.txt",
            "GPU 1: NVSwitch fabric registration is 'In Progress', not Completed (fabric manager)",
        ),
        ("synthetic/fabric_failed.txt", "GPU 1: NVSwitch fabric registration failed: Insufficient Resources"),
    ],
)
def test_fabric_still_registering_or_failed_is_unhealthy(recording, problem):
    report = check_gpus(TWO_H200_FABRIC, run=two_h200(details=recorded(recording)))

    assert report.problems == [problem]


def test_fabric_state_the_h100_does_not_report_is_a_note_not_a_fault():
    nvidia_smi = FakeNvidiaSmi(query=recorded("h100/query-gpu.csv"), details=recorded("h100/q.txt"))

    report = check_gpus(H100_FABRIC, run=nvidia_smi)

    assert report.healthy, report.problems
    assert report.notes == ["GPU 0: fabric state not reported (N/A); not checked"]


def test_driver_without_a_fabric_section_is_a_note_not_a_fault():
    before_fabric = fixture_text("h100/q.txt").split("    Fabric\n")[0]
    nvidia_smi = FakeNvidiaSmi(query=recorded("h100/query-gpu.csv"), details=Reply(stdout=before_fabric))

    report = check_gpus(H100_FABRIC, run=nvidia_smi)

    assert report.healthy, report.problems
    assert report.notes == ["nvidia-smi -q shows no Fabric section (driver before R535); fabric state not checked"]


def test_fabric_query_that_fails_is_unhealthy():
    nvidia_smi = FakeNvidiaSmi(query=recorded("h100/query-gpu.csv"), details=Reply(timed_out=True))

    report = check_gpus(H100_FABRIC, run=nvidia_smi)

    assert report.problems == ["GPU fabric state unavailable: nvidia-smi did not answer within 30 s"]


def test_unreadable_counter_is_unhealthy():
    row = fixture_text("h100/query-gpu.csv").replace(", 0, [N/A], No, No", ", [Unknown Error], [N/A], No, No")

    report = check_gpus(H100, run=FakeNvidiaSmi(query=Reply(stdout=row)))

    assert report.problems == ["GPU 0: cannot read ecc.errors.uncorrected.volatile.total ([Unknown Error])"]


def test_required_mount_missing_is_unhealthy():
    report = check_gpus(
        Expectations(gpu_count=1, required_mounts=("/scratch", "/persist")),
        run=FakeNvidiaSmi(query=recorded("h100/query-gpu.csv")),
        is_mount=lambda path: path == "/scratch",
    )

    assert report.problems == ["/persist is not mounted"]


@pytest.mark.parametrize(
    "expected, actual, matches",
    [
        ("H100", "NVIDIA H100 80GB HBM3", True),
        ("h100 80gb", "NVIDIA H100 80GB HBM3", True),
        ("NVIDIA H200", "NVIDIA H200", True),
        ("A100", "NVIDIA A100-SXM4-40GB", True),
        ("V100", "Tesla V100-SXM2-16GB", True),
        ("L4", "NVIDIA L40S", False),
        ("H100", "NVIDIA H200", False),
        ("A10G", "NVIDIA A100-SXM4-40GB", False),
        ("H100", "", False),
    ],
)
def test_model_match_is_tolerant_but_exact_per_word(expected, actual, matches):
    assert model_matches(expected, actual) is matches


def test_parsers_read_the_recorded_formats():
    gpus, stray = parse_gpu_query(fixture_text("h200x2/query-gpu.csv"))

    assert [gpu.value("uuid") for gpu in gpus] == [
        "GPU-e7ac267e-d08b-31b1-1018-449d742ffe14",
        "GPU-4c31adc7-9481-6665-4b8e-e3c6bb35b3cf",
    ]
    assert stray == []
    assert parse_topology(fixture_text("h100/topo-m.txt")) == {0: {}}
    assert parse_nvlink_status(fixture_text("h100/nvlink-status.txt")) == {}


def test_run_command_reports_timeout_missing_binary_and_exit_status():
    slow = run_command([sys.executable, "-c", "import time; time.sleep(10)"], timeout_s=0.2)
    missing = run_command(["/nonexistent/nvidia-smi"], timeout_s=1)
    failing = run_command([sys.executable, "-c", "import sys; print('no driver'); sys.exit(9)"], timeout_s=5)

    assert slow.timed_out and not slow.ok
    assert missing.not_found and missing.describe_failure() == "/nonexistent/nvidia-smi not found"
    assert failing.returncode == 9
    assert failing.describe_failure().endswith("failed with exit status 9: no driver")


def test_timeout_kills_the_commands_children_too(tmp_path):
    grandchild_pid = tmp_path / "grandchild.pid"
    script = f"sleep 60 & echo $! > {grandchild_pid}; wait"

    started = time.monotonic()
    result = run_command(["sh", "-c", script], timeout_s=0.5)

    pid = int(grandchild_pid.read_text())
    assert result.timed_out
    assert time.monotonic() - started < 1.5, "a surviving grandchild held the output pipes open"
    assert not process_is_running(pid)


def process_is_running(pid: int) -> bool:
    """False once the process is gone or a zombie (killed, but not yet reaped by its new parent)."""
    for _ in range(50):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return False
        if state == "Z":
            return False
        time.sleep(0.02)
    return True


@pytest.fixture
def nvidia_smi_on_path(tmp_path, monkeypatch):
    """A stand-in nvidia-smi executable that prints the H100 recording for any query."""
    program = tmp_path / "bin" / "nvidia-smi"
    program.parent.mkdir()
    recording = tmp_path / "query-gpu.csv"
    recording.write_text(fixture_text("h100/query-gpu.csv"))
    program.write_text(f'#!/bin/sh\ncase "$1" in --query-gpu=*) cat "{recording}" ;; *) exit 2 ;; esac\n')
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{program.parent}:/usr/bin:/bin")
    monkeypatch.setenv("GPUCLOUD_NODE_CONFIG", str(tmp_path / "node.json"))
    (tmp_path / "node.json").write_text(json.dumps({"expected_gpu_count": 8, "expected_gpu_model": "A100"}))
    return program


def test_cli_json_exits_zero_when_healthy_and_flags_override_the_config(nvidia_smi_on_path, capsys):
    status = main(["check", "--json", "--expect-gpus", "1", "--expect-model", "H100"])

    report = json.loads(capsys.readouterr().out)
    assert status == 0
    assert report["healthy"] is True
    assert report["expected"]["gpu_count"] == 1


def test_cli_prints_one_reason_per_line_and_exits_one_when_unhealthy(nvidia_smi_on_path, capsys):
    status = main(["check"])

    assert status == 1
    assert capsys.readouterr().out.splitlines() == [
        "found 1 GPUs, expected 8",
        "GPU 0 is 'NVIDIA H100 80GB HBM3', expected 'A100'",
    ]


def test_cli_prints_skipped_checks_as_notes_after_the_verdict(tmp_path, monkeypatch, capsys):
    program = tmp_path / "nvidia-smi"
    without_field = tmp_path / "query-gpu.csv"
    without_field.write_text(fixture_text("h100/query-gpu.csv").rsplit(",", 1)[0] + "\n")
    program.write_text(
        f'#!/bin/sh\ncase "$1" in *remapped_rows.failure*) echo \'Field "remapped_rows.failure" is not a valid '
        f'field to query.\'; exit 2 ;; --query-gpu=*) cat "{without_field}" ;; esac\n'
    )
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    (tmp_path / "node.json").write_text("{}")

    status = main(["--config", str(tmp_path / "node.json"), "check", "--expect-gpus", "1"])

    assert status == 0
    assert capsys.readouterr().out.splitlines() == [
        "healthy: 1 GPU(s) (NVIDIA H100 80GB HBM3), driver 580.159.04",
        "note: skipped the remapped_rows.failure check: this driver does not know that query field",
    ]


def test_cli_rejects_a_broken_config_file(tmp_path, monkeypatch, caplog):
    (tmp_path / "node.json").write_text(json.dumps({"expected_gpu_count": "eight"}))
    monkeypatch.setenv("GPUCLOUD_NODE_CONFIG", str(tmp_path / "node.json"))

    assert main(["check"]) == 2
    assert "expected_gpu_count must be int | None" in caplog.text


def test_python_dash_m_runs_the_agent():
    infra = Path(gpucloud.node.__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-m", "gpucloud.node", "check", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PYTHONPATH": str(infra)},
    )

    assert result.returncode == 0
    assert "--expect-model" in result.stdout


def test_gpu_whose_nvlink_links_are_all_down_lists_none_and_is_unhealthy():
    status = (
        "GPU 0: NVIDIA H200 (UUID: GPU-e7ac267e-d08b-31b1-1018-449d742ffe14)\n"
        "\t NVML: Unable to retrieve NVLink information as all links are inActive\n"
        "GPU 1: NVIDIA H200 (UUID: GPU-4c31adc7-9481-6665-4b8e-e3c6bb35b3cf)\n"
        "\t Link 0: 26.562 GB/s\n"
    )

    report = check_gpus(TWO_H200_NVLINK, run=two_h200(nvlink=Reply(stdout=status)))

    assert report.nvlink == {0: {}, 1: {0: True}}
    assert report.problems == ["GPU 0: no active NVLink links"]


def test_interconnect_is_checked_when_fewer_gpus_show_than_expected():
    nvidia_smi = two_h200("synthetic/missing_gpu.csv")

    report = check_gpus(TWO_H200_NVLINK, run=nvidia_smi)

    assert nvidia_smi.kinds_called() == ["query", "nvlink", "topology"]
    assert report.nvlink is not None and report.topology is not None


def test_fabric_state_is_read_from_the_fabric_section_only():
    details = (
        "GPU 00000000:00:06.0\n"
        "    Fabric\n"
        "        State                                          : In Progress\n"
        "        Status                                         : N/A\n"
        "    Other Section\n"
        "        State                                          : Completed\n"
        "        Status                                         : Success\n"
    )

    assert parse_fabric(details) == {"00000000:00:06.0": {"state": "In Progress", "status": "N/A"}}


def test_blank_line_between_gpu_rows_does_not_end_the_query():
    rows = fixture_text("h200x2/query-gpu.csv").splitlines()

    gpus, stray = parse_gpu_query("\n\n".join(rows))

    assert [gpu.index for gpu in gpus] == [0, 1] and stray == []


def test_gpu_exactly_at_the_temperature_limit_is_unhealthy():
    report = check_gpus(Expectations(gpu_count=2, max_temperature_c=39), run=two_h200())

    assert report.problems == ["GPU 0: temperature 39 C is at or above the 39 C limit"]


def test_nvlink_is_enforced_on_two_gpus_when_no_gpu_count_is_expected():
    report = check_gpus(Expectations(nvlink=True), run=two_h200(nvlink=recorded("synthetic/nvlink_degraded.txt")))

    assert "GPU 1: NVLink links 5, 11 inactive (of 18)" in report.problems


def test_model_spelled_exactly_as_a_name_without_a_vendor_word_matches():
    assert model_matches("GRID K520", "GRID K520")
