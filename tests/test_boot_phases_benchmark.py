"""The boot-phase benchmark still runs (small, on the CPU), and the phases recorded on an H200
host (tests/fixtures/gpu/boot_phases_h200.json) agree with the plan's cold-start figures."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gpucloud.config.cold_start_estimate import figures
from support import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "gpu" / "boot_phases_h200.json"


@pytest.fixture(scope="module")
def recorded() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_the_benchmark_runs_in_smoke_mode_and_writes_the_node_readings(tmp_path):
    out = tmp_path / "phases.json"
    completed = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "boot_phases.py"), "--smoke", "--out", str(out)],
                               capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    result = json.loads(out.read_text())
    assert set(result["phaseSeconds"]) == {"agent", "pull:local-image", "weights:local-weights", "healthy:local-server"}
    assert 'gpucloud_boot_phase_seconds{phase="pull",container="local-image"}' in result["readings"]


def test_the_fixture_names_the_command_and_the_host(recorded):
    assert recorded["command"].startswith("python3 benchmarks/boot_phases.py --out ")
    assert recorded["gate"]["healthy"] and recorded["gate"]["gpus"] == ["NVIDIA H200"]
    assert set(recorded["phaseSeconds"]) == {"agent", "gate", "pull:local-image", "weights:local-weights",
                                              "healthy:local-server"}


def test_the_agent_and_gate_figures_cover_what_the_h200_host_took(recorded):
    table = figures()
    assert recorded["phaseSeconds"]["agent"] < table["agent"]["seconds"]
    assert recorded["phaseSeconds"]["gate"] < table["gate"]["seconds"]


def test_the_pull_rate_is_what_one_core_extracts_so_a_faster_network_does_not_beat_it(recorded):
    assert 0.8 < figures()["imagePullMBps"]["value"] / recorded["extractMBps"] < 1.25


def test_the_load_into_gpu_memory_is_the_measured_rate(recorded):
    gigabytes = float(recorded["loaded"].split()[0])
    assert figures()["gpuLoadMBps"]["value"] == pytest.approx(gigabytes * 1000 / recorded["loadSeconds"], rel=0.05)
    assert recorded["copyMBps"] >= figures()["instanceStoreMBps"]["value"], "the /scratch copy figure is not optimistic"
