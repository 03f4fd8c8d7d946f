"""How `gpucloud plan` scales with the number of GPU groups, against two floors.

For stacks of 1, 10, 25 and 50 groups this measures, each in a fresh interpreter:

  (a) engine  `gpucloud.plan.plan_stack(settings)`: the program on the moto engine, then the
              policies and the cost estimate (what `gpucloud plan` does, minus printing);
  (b) boto3   the AWS calls the engine made for that stack, recorded in a separate process and
              replayed with plain boto3 clients on a fresh moto account (same moto setup as the
              engine's): the floor for an offline apply. Every answer must match the recording,
              or the benchmark fails;
  (c) mocks   the same program under plain `pulumi.runtime.Mocks` with no moto: inputs come back
              as outputs with fake ids and ARNs, invokes get the engine's recorded answers;
  (a′) warm   (a) after importing, before its clock, the modules of the libraries the floor never
              loads (Pulumi, pulumi-aws, parliament, gpu-cloud) that the recorded plan imported:
              what (a) costs beyond the time those libraries take to load.

With --repeat N it runs N rounds, each of (a), (b), (c) and (a′) back to back; the table shows the
median of each, and a/b and a/c are the medians of the rounds' own ratios, so that a slow spell
of the host (wall times of identical runs move by up to half here) weighs on both sides. a/b cpu
is the same ratio of process CPU times, which other work on the machine moves far less.

It prints wall and CPU time, ms per resource and peak memory (the measuring process's peak
resident set size, `resource.getrusage(RUSAGE_SELF).ru_maxrss`, imports included) of each, the
ratios, `import gpucloud` times, and the targets met or missed.

    .venv/bin/python benchmarks/plan_scaling.py            # 1, 10, 25, 50 groups
    .venv/bin/python benchmarks/plan_scaling.py --groups 10 50 --repeat 3
    .venv/bin/python benchmarks/plan_scaling.py --groups 1 --smoke   # does it still run? (tests)

The config caps a stack at 50 groups (`StackConfig.groups`); a larger stack is built from
validated 50-group halves joined with `model_copy`, so every group is still validated.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import plan_replay
from plan_replay import FAKE_ACCOUNT, invoke_key, patched, peak_rss_mib

REGION = "us-east-1"
DEFAULT_SIZES = (1, 10, 25, 50)
"""Groups per stack. 50 is the config's cap (`StackConfig.groups`); a 100-group stack (two
validated halves) no longer plans: its node role's inline policy names every group and passes
IAM's 10,240-character quota, which the engine now checks."""

# ------------------------------------------------------------------------------------------------
# The stacks


def group_config(index: int) -> dict[str, Any]:
    """A valid group whose shape varies with its index: types, spot split, volumes, scaling."""
    types = [["g5.xlarge"], ["g6.xlarge"], ["g5.xlarge", "g6.xlarge"], ["g6.2xlarge", "g5.2xlarge"]][index % 4]
    persistent = index % 10 == 9
    max_size = 1 if persistent else 2 + index % 3
    group: dict[str, Any] = {
        "name": f"group-{index:03d}",
        "instanceTypes": types,
        "minSize": 0,
        "maxSize": max_size,
        "desiredCapacity": index % 2 if max_size else 0,
        "onDemandBaseCapacity": 0 if index % 3 else 1,
        # A single-instance group with a persistent volume runs on demand.
        "spotPercent": 0 if persistent else [100, 50, 0][index % 3],
        "rootVolumeGiB": 100 + 10 * (index % 5),
        "dataVolumeGiB": 200 if index % 4 == 1 else 0,
        "scaling": {},
    }
    if persistent:
        group["persistentVolumeGiB"] = 100
    if index % 2 == 0:
        group["scaling"]["schedules"] = [
            {"name": "morning", "recurrence": "0 8 * * 1-5", "timeZone": "Europe/Berlin", "minSize": 0, "maxSize": max_size, "desiredCapacity": 1},
            {"name": "night", "recurrence": "0 20 * * *", "timeZone": "Europe/Berlin", "minSize": 0, "maxSize": max_size, "desiredCapacity": 0},
        ]
    if index % 3 == 0:
        group["scaling"]["targetTracking"] = {
            "metricName": "QueueBacklogPerInstance",
            "namespace": "Bench/Jobs",
            "targetValue": 4 + index % 7,
            "dimensions": {"Queue": f"queue-{index}"},
        }
    if index % 5 == 1:
        group["scaling"]["stepScaling"] = [
            {"metricName": "PendingJobs", "namespace": "Bench/Jobs", "threshold": 10, "scaleOutBy": 1}
        ]
    if index % 4 == 2:
        group["scaling"]["gpuIdleScaleIn"] = {"utilizationPercent": 10, "minutes": 30}
    if index % 4 == 3:
        group["idleShutdown"] = {"utilizationPercent": 5, "minutes": 60}
    return group


def stack_values(groups: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "project": "bench",
        "owner": "bench-team@example.com",
        "costCenter": "cc-bench",
        "budget": {"monthlyUsd": 5_000_000},
        "account": {"createServiceLinkedRole": True},
        "data": {"bucket": "bench-data", "readPrefixes": ["datasets/"], "writePrefixes": ["runs/bench/"]},
        "access": {"jupyterCidrs": ["10.20.0.0/16"]},
        "groups": groups,
    }


def stack_settings(group_count: int):
    """StackSettings with `group_count` groups, parsed by `parse_stack_config` (50 per parse)."""
    from gpucloud.config import StackSettings, parse_stack_config

    groups = [group_config(index) for index in range(group_count)]
    chunks = [groups[start : start + 50] for start in range(0, group_count, 50)]
    parsed = [
        parse_stack_config(stack_values(chunk), stack=f"bench-{group_count}", source="benchmarks/plan_scaling.py", region=REGION)
        for chunk in chunks
    ]
    if len(parsed) == 1:
        return parsed[0]
    config = parsed[0].config.model_copy(update={"groups": [group for part in parsed for group in part.config.groups]})
    return StackSettings(stack=parsed[0].stack, source=parsed[0].source, region=REGION, config=config)


# ------------------------------------------------------------------------------------------------
# Measurements, one per process


def measure_engine(group_count: int, calls: Path, warm: bool = False) -> dict[str, Any]:
    """(a): plan_stack, timed whole, with the share spent applying the program on moto. Warm (a′):
    first, before the clock, import what the recorded plan imported of the libraries the floor
    never loads (`plan_replay.FLOORLESS_PACKAGES`): the same plan without their load time."""
    from gpucloud.plan import preview as plan_module

    if warm:
        plan_replay.preload(pickle.loads(calls.read_bytes())["imported"])
    settings = stack_settings(group_count)
    apply_seconds: list[float] = []
    real_run_program = plan_module.run_program

    def timed_run_program(*args: Any, **kwargs: Any):
        started = time.perf_counter()
        try:
            return real_run_program(*args, **kwargs)
        finally:
            apply_seconds.append(time.perf_counter() - started)

    with patched(plan_module, "run_program", timed_run_program):
        baseline = peak_rss_mib()
        started, cpu_started = time.perf_counter(), time.process_time()
        plan = plan_module.plan_stack(settings)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    assert not plan.failed, [f.message for f in plan.findings] + [v.message for v in plan.policy_violations]
    return {
        "wall": wall,
        "cpu": cpu,
        "apply": apply_seconds[0],
        "region": settings.region,
        "resources": len(plan.resources),
        "custom": sum(1 for r in plan.resources if r.custom),
        "baseline_mib": baseline,
        "peak_mib": peak_rss_mib(),
    }

def measure_mocks(group_count: int, calls: Path) -> dict[str, Any]:
    """(c): the program under plain Pulumi mocks: no moto, no boto3; each invoke gets the answer the
    engine gave it in the recording, so the program takes the path it took in (a)."""
    import pulumi
    from pulumi.runtime import mocks, settings as runtime_settings
    from pulumi.runtime.stack import run_pulumi_func
    from pulumi.runtime.sync_await import _sync_await

    from gpucloud.plan import PROJECT
    from gpucloud.program import build

    counted = {"resources": 0, "custom": 0, "invokes": 0}

    class PlainMocks(mocks.Mocks):
        def new_resource(self, args: mocks.MockResourceArgs) -> tuple[str | None, dict]:
            counted["resources"] += 1
            if not args.custom:
                return None, {}
            counted["custom"] += 1
            service = args.typ.split(":")[1].split("/")[0]
            physical_id = f"{args.name}-id"
            outputs = {
                "arn": f"arn:aws:{service}:{REGION}:{FAKE_ACCOUNT}:{args.name}",
                "name": args.name,
                "id": physical_id,
                **args.inputs,
            }
            return physical_id, outputs

        def call(self, args: mocks.MockCallArgs) -> Any:
            counted["invokes"] += 1
            key = invoke_key(args.token, dict(args.args))
            if key not in answers:
                raise KeyError(f"the engine never answered {key} while recording: the program differs from (a)'s")
            return answers[key].pop(0) if len(answers[key]) > 1 else answers[key][0]

    settings = stack_settings(group_count)
    answers = pickle.loads(calls.read_bytes())["invokes"]
    baseline = peak_rss_mib()
    started, cpu_started = time.perf_counter(), time.process_time()
    runtime_settings.set_root_resource(None)  # type: ignore[arg-type]
    pulumi.runtime.set_all_config({"aws:region": REGION}, [])
    pulumi.runtime.set_mocks(PlainMocks(), project=PROJECT, stack=settings.stack, preview=False)
    runtime_settings.SETTINGS.rpc_manager.clear()
    runtime_settings.SETTINGS.outputs.clear()
    _sync_await(run_pulumi_func(lambda: build(settings)))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    return {
        "wall": wall,
        "cpu": cpu,
        "resources": counted["resources"],
        "custom": counted["custom"],
        "invokes": counted["invokes"],
        "baseline_mib": baseline,
        "peak_mib": peak_rss_mib(),
    }


MEASUREMENTS = {
    "engine": measure_engine,
    "engine-warm": lambda group_count, calls: measure_engine(group_count, calls, warm=True),
    "record": lambda group_count, calls: plan_replay.record(measure_engine, group_count, calls),
    "boto3": plan_replay.measure_boto3,
    "mocks": measure_mocks,
}


# ------------------------------------------------------------------------------------------------
# The driver


def _child(kinds: str, group_count: int, calls: Path) -> dict[str, dict[str, Any]]:
    """Run the measurements `kinds` (comma-separated) one after the other in a fresh interpreter."""
    completed = subprocess.run(
        [sys.executable, __file__, "--measure", kinds, str(group_count), str(calls)],
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise SystemExit(f"{kinds} at {group_count} groups failed:\n{completed.stderr[-4000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def _round(group_count: int, calls: Path) -> dict[str, dict[str, Any]]:
    """(a), (b), (c) and (a′) back to back, each in a fresh interpreter."""
    return {kind: _child(kind, group_count, calls)[kind] for kind in ("engine", "boto3", "mocks", "engine-warm")}


def _smoke_round(group_count: int, calls: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The recording stands for (a) (it is (a) with the recording hooks) and (c) and (a′) run after
    it in its interpreter, so their times are no measurement; the replay gets its own, since its moto
    ids must be drawn as the recording's were. Two interpreters instead of six, for the test
    that keeps the benchmark running."""
    measured = _child("record,mocks,engine-warm", group_count, calls)
    recording = measured.pop("record")
    return recording, {"engine": recording, **measured, **_child("boto3", group_count, calls)}


def _import_seconds(statement: str, runs: int = 5) -> float:
    """Median wall time of a fresh interpreter running `statement`."""
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", statement], check=True)
        timings.append(time.perf_counter() - started)
    return statistics.median(timings)


def _best(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Of repeated runs, the one with the median wall time (peak memory is the largest seen)."""
    ordered = sorted(results, key=lambda result: result["wall"])
    chosen = dict(ordered[(len(ordered) - 1) // 2])
    chosen["peak_mib"] = max(result["peak_mib"] for result in results)
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, nargs="+", default=list(DEFAULT_SIZES))
    parser.add_argument("--repeat", type=int, default=1, help="rounds of (a), (b), (c), each in fresh processes (medians are shown)")
    parser.add_argument("--smoke", action="store_true",
                        help="one round, (a) and (c) in one interpreter, no import times: checks that the benchmark runs (tests/test_benchmarks.py), measures nothing")
    parser.add_argument("--measure", nargs=3, metavar=("KINDS", "GROUPS", "CALLS"), help=argparse.SUPPRESS)
    options = parser.parse_args()

    if options.measure:
        kinds, group_count, calls = options.measure
        if kinds.split(",")[0] in ("record", "boto3"):
            plan_replay.seed_uuid4()  # before moto is imported
        print(json.dumps({kind: MEASUREMENTS[kind](int(group_count), Path(calls)) for kind in kinds.split(",")}))
        return
    if options.smoke:
        options.repeat = 1

    print(f"machine: {platform.node()} · {platform.machine()} · nproc {os.cpu_count()} "
          f"(usable {len(os.sched_getaffinity(0))}) · Python {platform.python_version()} · "
          f"load average {' '.join(f'{load:.2f}' for load in os.getloadavg())}")
    print("peak memory: ru_maxrss of the measuring process (peak resident set, imports included)")
    print("smoke run: (a) is the recording and (c) and (a′) shared its interpreter, so their times are no measurement" if options.smoke
          else f"each measurement: a fresh interpreter; median of {options.repeat} run(s)")
    print("a round runs (a), (b), (c) and (a′) back to back; a/b, a/c and a′/b are the medians of the rounds' own ratios,\n"
          "so that a slow spell of the host weighs on both sides of a ratio; a/b cpu is the same with process CPU times\n")

    header = (
        f"{'groups':>6} {'resources':>9} {'calls':>5} │ {'(a) engine s':>12} {'cpu s':>6} {'ms/res':>7} {'apply s':>7} {'MiB':>5} │"
        f" {'(b) boto3 s':>11} {'cpu s':>6} {'ms/res':>7} {'MiB':>5} │ {'(c) mocks s':>11} {'ms/res':>7} {'MiB':>5} │"
        f" {'a/b':>5} {'a/b cpu':>7} {'a/c':>5} │ {'(a′) warm s':>11} {'a′/b':>5}"
    )
    print(header)
    print("─" * len(header))
    rows = {}
    with tempfile.TemporaryDirectory() as scratch:
        for group_count in options.groups:
            calls = Path(scratch) / f"calls-{group_count}.pickle"
            if options.smoke:
                recording, measured = _smoke_round(group_count, calls)
                rounds = [measured]
            else:
                recording = _child("record", group_count, calls)["record"]
                rounds = [_round(group_count, calls) for _ in range(options.repeat)]
            rows[group_count] = row = _row(group_count, recording, rounds)
            engine, floor, plain, count = row["engine"], row["boto3"], row["mocks"], row["resources"]
            print(
                f"{group_count:>6} {count:>9} {floor['calls']:>5} │ {engine['wall']:>12.2f} {engine['cpu']:>6.2f} {1000 * engine['wall'] / count:>7.2f}"
                f" {engine['apply']:>7.2f} {engine['peak_mib']:>5.0f} │ {floor['wall']:>11.2f} {floor['cpu']:>6.2f} {1000 * floor['wall'] / count:>7.2f}"
                f" {floor['peak_mib']:>5.0f} │ {plain['wall']:>11.2f} {1000 * plain['wall'] / count:>7.2f} {plain['peak_mib']:>5.0f} │"
                f" {row['a/b']:>5.2f} {row['a/b cpu']:>7.2f} {row['a/c']:>5.2f} │ {row['engine-warm']['wall']:>11.2f} {row['a′/b']:>5.2f}"
                + (f"  (a/b per round {row['a/b range'][0]:.2f} to {row['a/b range'][1]:.2f})" if options.repeat > 1 else ""),
                flush=True,
            )
        last_recording = recording

    print("\nresources: everything the plan lists (components included); calls: boto3 calls the engine made, the replay's too")
    print("cpu s: the measuring process's CPU time (a check on wall times when other work loads the machine)")
    print("(a) apply s: the part of the plan spent running the program on moto (the rest: moto set-up, policies, cost)")
    print("(a′) warm: (a) after importing, before the clock, what the plan imports of the libraries the floor never loads\n"
          "(the Pulumi SDK and pulumi-aws, parliament, gpu-cloud's own program and policies): the plan without their load time")
    print(f"boto3 calls at {options.groups[-1]} groups by operation: "
          + ", ".join(f"{name} {count}" for name, count in sorted(last_recording["operations"].items(), key=lambda item: -item[1])))
    if options.smoke:
        print("smoke run: every replayed response matched the recording")
        return
    _imports_and_targets(rows)
    print(f"load average after: {' '.join(f'{load:.2f}' for load in os.getloadavg())}")


def _row(group_count: int, recording: dict[str, Any], rounds: list[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """One line of the table: the median run of each kind, and the medians of the rounds' ratios."""
    ratios = {
        "a/b": [measured["engine"]["wall"] / measured["boto3"]["wall"] for measured in rounds],
        "a/b cpu": [measured["engine"]["cpu"] / measured["boto3"]["cpu"] for measured in rounds],
        "a/c": [measured["engine"]["wall"] / measured["mocks"]["wall"] for measured in rounds],
        "a′/b": [measured["engine-warm"]["wall"] / measured["boto3"]["wall"] for measured in rounds],
    }
    row: dict[str, Any] = {kind: _best([measured[kind] for measured in rounds]) for kind in ("engine", "boto3", "mocks", "engine-warm")}
    counts = {"engine": row["engine"]["resources"], "recording": recording["resources"], "mocks": row["mocks"]["resources"]}
    if len(set(counts.values())) != 1:
        raise SystemExit(f"resource counts differ at {group_count} groups: {counts}")
    row.update({name: statistics.median(values) for name, values in ratios.items()})
    row["a/b range"] = (min(ratios["a/b"]), max(ratios["a/b"]))
    row["resources"] = counts["engine"]
    return row


def _imports_and_targets(rows: dict[int, dict[str, Any]]) -> None:
    import_package = _import_seconds("import gpucloud")
    import_plan = _import_seconds("import gpucloud.plan")
    import_cli = _import_seconds("import gpucloud.cli")
    interpreter = _import_seconds("pass")
    print(f"\nimport (fresh interpreter, median of 5, interpreter start included): "
          f"`import gpucloud` {import_package:.2f} s · `import gpucloud.plan` {import_plan:.2f} s · "
          f"`import gpucloud.cli` {import_cli:.2f} s · bare interpreter {interpreter:.2f} s")

    print("\ntargets:")
    largest = max(rows)
    if 10 in rows and largest > 10:
        per_resource = {n: rows[n]["engine"]["wall"] / rows[n]["resources"] for n in (10, largest)}
        linearity = per_resource[largest] / per_resource[10]
        print(f"  ms/resource at {largest} groups / at 10 groups = {linearity:.2f} (target <= 1.2): {'met' if linearity <= 1.2 else 'MISSED'}")
    ratio = rows[largest]["a/b"]
    print(f"  a/b at {largest} groups = {ratio:.2f}, cpu {rows[largest]['a/b cpu']:.2f} (target <= 2.0): {'met' if ratio <= 2.0 else 'MISSED'}")
    worst = max(rows, key=lambda n: rows[n]["a/b"])
    print(f"  a/b worst over all sizes = {rows[worst]['a/b']:.2f} at {worst} groups, cpu {max(row['a/b cpu'] for row in rows.values()):.2f} worst"
          f" (target <= 2.0): {'met' if rows[worst]['a/b'] <= 2.0 else 'MISSED'}")
    peak = rows[largest]["engine"]["peak_mib"]
    print(f"  peak memory of (a) at {largest} groups = {peak:.0f} MiB (target < 1024): {'met' if peak < 1024 else 'MISSED'}")
    print(f"  import gpucloud = {import_package:.2f} s (target < 1 s): {'met' if import_package < 1 else 'MISSED'}")
    print(f"  (not a target: `import gpucloud.plan` {import_plan:.2f} s and `import gpucloud.cli` {import_cli:.2f} s "
          "load moto, boto3, pulumi and pulumi-aws, which any plan needs)")


if __name__ == "__main__":
    main()
