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


def test_the_replay_ignores_epoch_times_as_it_ignores_other_times_and_compares_the_rest():
    """CloudWatch Logs gives a log group's creationTime as epoch milliseconds (botocore's logs
    model, `Timestamp`), which differ between recording and replay as datetimes do; a count such
    as storedBytes, also a long, still has to match."""
    import importlib.util

    import botocore.session

    spec = importlib.util.spec_from_file_location("plan_replay", ROOT / "benchmarks" / "plan_replay.py")
    plan_replay = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plan_replay)
    shape = botocore.session.get_session().get_service_model("logs").operation_model("DescribeLogGroups").output_shape

    def answer(created: int, stored: int) -> dict:
        return {"logGroups": [{"logGroupName": "/gpu-cloud/bench/jobs-supervisor", "creationTime": created,
                               "storedBytes": stored}], "ResponseMetadata": {"RequestId": str(created)}}

    recorded = plan_replay._comparable(answer(1795895328708, 0), shape)
    assert plan_replay._comparable(answer(1795895346335, 0), shape) == recorded
    assert plan_replay._comparable(answer(1795895346335, 1), shape) != recorded
