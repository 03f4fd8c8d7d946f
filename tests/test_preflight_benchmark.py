"""The preflight time benchmark still runs on the recorded rounds, and a passing quick preflight of
two nodes stays within its two minutes (benchmarks/preflight_time.py)."""

from __future__ import annotations

import subprocess
import sys

from support import ROOT


def test_preflight_time_benchmark_runs_in_smoke_mode_and_meets_the_quick_target():
    completed = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "preflight_time.py"), "--nodes", "2", "--smoke"],
                               capture_output=True, text=True, timeout=60, cwd=ROOT, check=False)

    assert completed.returncode == 0, completed.stdout + completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[-1] == "smoke run: the model ran on the recorded rounds"
    row = next(line for line in lines if line.split()[:2] == ["2", "p5.48xlarge"])
    quick = float(row.split()[3])
    assert 10.0 < quick <= 120.0 and row.endswith("yes")
