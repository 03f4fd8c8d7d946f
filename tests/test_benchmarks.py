"""The plan scaling benchmark still runs: a one-group smoke run, so that a new invoke, a call the
recording misses or a write into moto that the replay does not make fails here, not in the
next person's measurement (benchmarks/README.md)."""

from __future__ import annotations

import subprocess
import sys

from support import ROOT


def test_plan_scaling_benchmark_runs_at_one_group_with_an_exact_replay():
    completed = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "plan_scaling.py"), "--groups", "1", "--smoke"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )

    assert completed.returncode == 0, completed.stdout[-2000:] + completed.stderr[-4000:]
    lines = completed.stdout.splitlines()
    header = next(line for line in lines if line.startswith("groups resources calls"))
    assert "(a) engine s" in header and "(b) boto3 s" in header and "(c) mocks s" in header and "a/b cpu" in header
    assert "(a′) warm s" in header and "a′/b" in header
    row = next(line for line in lines if line.split("│")[0].split()[:1] == ["1"])
    groups, resources, calls = row.split("│")[0].split()
    assert int(resources) > 50 and int(calls) > 100, row
    assert "smoke run: every replayed response matched the recording" in lines
