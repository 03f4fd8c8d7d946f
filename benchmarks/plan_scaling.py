"""How `gpucloud plan` scales with the number of GPU groups, against two floors.

For stacks of 1, 10, 50 and 100 groups this measures, each in a fresh interpreter:

  (a) engine  `gpucloud.plan.plan_stack(settings)`: the program on the moto engine, then the
              policies and the cost estimate (what `gpucloud plan` does, minus printing);
  (b) boto3   the AWS calls the engine made for that stack, recorded in a separate process and
              replayed with boto3 on a fresh moto account (same moto setup as the engine's): the
              floor for an offline apply;
  (c) mocks   the same program under plain `pulumi.runtime.Mocks` with no moto: inputs come back
              as outputs with fake ids and ARNs, invokes are answered with constants.

With --repeat N it runs N rounds, each of (a), (b) and (c) back to back; the table shows the
median of each, and a/b and a/c are the medians of the rounds' own ratios, so that a slow spell
of the host (wall times of identical runs move by up to half here) weighs on both sides.

It prints wall time, ms per resource and peak memory (the measuring process's peak resident set
size, `resource.getrusage(RUSAGE_SELF).ru_maxrss`, imports included) of each, the ratios a/b and
a/c, `import gpucloud` times, and the targets met or missed.

    .venv/bin/python benchmarks/plan_scaling.py            # 1, 10, 50, 100 groups
    .venv/bin/python benchmarks/plan_scaling.py --groups 10 100 --repeat 3

The config caps a stack at 50 groups (`StackConfig.groups`); the 100-group stack is built from
two validated 50-group halves joined with `model_copy`, so every group is still validated.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import pickle
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REGION = "us-east-1"
MOTO_SEED = 20240601
"""moto draws every id from one seedable random source; recording and replay seed it alike, so
the replayed calls get the ids the engine's calls got and can be replayed verbatim."""

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
        "access": {"jupyterCidrs": ["203.0.113.0/24"]},
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


def _seed_uuid4() -> None:
    """Some moto ids (SNS subscriptions, backup plans) come from `uuid.uuid4`, not moto's seedable
    random: make it seeded too, before moto is imported, in the recording and the replay alike."""
    import random
    import uuid

    source = random.Random(MOTO_SEED)
    uuid.uuid4 = lambda: uuid.UUID(int=source.getrandbits(128), version=4)


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def measure_engine(group_count: int, _calls: Path) -> dict[str, Any]:
    """(a): plan_stack, timed whole, with the share spent applying the program on moto."""
    from gpucloud.plan import preview as plan_module

    settings = stack_settings(group_count)
    apply_seconds: list[float] = []
    real_run_program = plan_module.run_program

    def timed_run_program(*args: Any, **kwargs: Any):
        started = time.perf_counter()
        try:
            return real_run_program(*args, **kwargs)
        finally:
            apply_seconds.append(time.perf_counter() - started)

    plan_module.run_program = timed_run_program
    baseline = _peak_rss_mib()
    started, cpu_started = time.perf_counter(), time.process_time()
    plan = plan_module.plan_stack(settings)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    assert not plan.failed, [f.message for f in plan.findings] + [v.message for v in plan.policy_violations]
    return {
        "wall": wall,
        "cpu": cpu,
        "apply": apply_seconds[0],
        "resources": len(plan.resources),
        "custom": sum(1 for r in plan.resources if r.custom),
        "baseline_mib": baseline,
        "peak_mib": _peak_rss_mib(),
    }


def record_calls(group_count: int, calls: Path) -> dict[str, Any]:
    """Run the program on the engine as plan_stack does, recording every boto3 call it makes."""
    from moto.moto_api._internal import mock_random

    from gpucloud.plan import PROJECT
    from gpucloud.program import build
    from gpucloud.testing import moto_account, run_program

    settings = stack_settings(group_count)
    recorded: list[dict[str, Any]] = []

    class RecordingClient:
        """Passes every call through to the engine's client, keeping its arguments and its answer."""

        def __init__(self, service: str, client: Any):
            self._service, self._client = service, client

        def __getattr__(self, name: str) -> Any:
            found = getattr(self._client, name)
            if name.startswith("_") or not callable(found) or name not in self._client.meta.method_to_api_mapping:
                return found

            def call(**params: Any) -> Any:
                entry = {"service": self._service, "method": name, "params": copy.deepcopy(params)}
                recorded.append(entry)
                try:
                    response = found(**params)
                except Exception as error:
                    entry["response"] = {"Error": type(error).__name__}
                    raise
                entry["response"] = _comparable(response)
                return response

            return call

    def spy(account: Any) -> None:
        real_client = account.client
        wrapped: dict[str, RecordingClient] = {}

        def client(service: str) -> Any:
            if service not in wrapped:
                wrapped[service] = RecordingClient(service, real_client(service))
            return wrapped[service]

        account.client = client

    mock_random.seed(MOTO_SEED)
    with moto_account(settings.region) as account:
        spy(account)
        deployment = run_program(lambda: build(settings), account, project=PROJECT, stack=settings.stack)
    calls.write_bytes(pickle.dumps(recorded))
    operations: dict[str, int] = {}
    for call in recorded:
        key = f"{call['service']}.{call['method']}"
        operations[key] = operations.get(key, 0) + 1
    return {"calls": len(recorded), "resources": len(deployment.resources), "operations": operations}


def _comparable(parsed: dict) -> Any:
    """A response without what differs between identical calls (request ids, timestamps)."""
    import datetime
    import re

    TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d")

    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: clean(item) for key, item in value.items() if key not in ("ResponseMetadata",)}
        if isinstance(value, list):
            return [clean(item) for item in value]
        if isinstance(value, datetime.datetime) or (isinstance(value, str) and TIMESTAMP.match(value)):
            return "<time>"
        return value

    return clean(parsed)


def measure_boto3(group_count: int, calls: Path) -> dict[str, Any]:
    """(b): the recorded calls replayed with boto3 on a fresh moto account, set up as the engine's."""
    from moto.moto_api._internal import mock_random

    from gpucloud.testing import moto_account

    recorded = pickle.loads(calls.read_bytes())
    operations = [(call["service"], call["method"], call["params"]) for call in recorded]
    responses: list[Any] = []
    baseline = _peak_rss_mib()
    mock_random.seed(MOTO_SEED)
    started, cpu_started = time.perf_counter(), time.process_time()
    with moto_account(REGION) as account:
        calls_started = time.perf_counter()
        for service, method, params in operations:
            client = account.client(service)
            # The engine publishes an AWS managed policy into moto before attaching it (moto
            # loads them only behind a slow global switch); the floor has to do the same.
            if method == "attach_role_policy" and params["PolicyArn"].startswith("arn:aws:iam::aws:policy/"):
                _publish_aws_managed_policy(params["PolicyArn"])
            try:
                responses.append(getattr(client, method)(**params))
            except Exception as error:  # noqa: BLE001 - compared with the recording below
                responses.append({"Error": type(error).__name__, "Message": str(error)})
        calls_seconds = time.perf_counter() - calls_started
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    peak = _peak_rss_mib()
    differing = [
        f"#{index} {call['service']}.{call['method']}: {str(response)[:300]}"
        for index, (call, response) in enumerate(zip(recorded, responses, strict=True))
        if _comparable(response) != call["response"] and not ("Error" in response and response["Error"] == call["response"].get("Error"))
    ]
    return {
        "wall": wall,
        "cpu": cpu,
        "calls_only": calls_seconds,
        "calls": len(operations),
        "differing_responses": len(differing),
        "first_differences": differing[:3],
        "baseline_mib": baseline,
        "peak_mib": peak,
    }


def _publish_aws_managed_policy(policy_arn: str) -> None:
    """What the engine's iam handler does before attaching an AWS managed policy, minus its STS
    call (each moto request draws a request id from the seeded random, so an extra call would
    shift every id after it)."""
    from moto.iam.aws_managed_policies import aws_managed_policies_data
    from moto.iam.models import AWSManagedPolicy, iam_backends

    name = policy_arn.rsplit("/", 1)[-1]
    backend = iam_backends[FAKE_ACCOUNT]["global"]
    if policy_arn not in backend.managed_policies:
        data = json.loads(aws_managed_policies_data)[name]
        policy = AWSManagedPolicy.from_data(name, FAKE_ACCOUNT, "us-east-1", data)
        backend.managed_policies[policy.arn] = policy


FAKE_ACCOUNT = "123456789012"
"""moto's default account id, used by the plain mocks too."""
INSTANCE_TYPES = {
    # name: (GPU model, GPUs, MiB per GPU, vCPUs, MiB memory)
    "g5.xlarge": ("A10G", 1, 24576, 4, 16384),
    "g5.2xlarge": ("A10G", 1, 24576, 8, 32768),
    "g6.xlarge": ("L4", 1, 23040, 4, 16384),
    "g6.2xlarge": ("L4", 1, 23040, 8, 32768),
}
SUBNETS = {"subnet-0a000000000000001": "us-east-1a", "subnet-0b000000000000002": "us-east-1b"}


def _constant_invoke(token: str, args: dict[str, Any]) -> dict[str, Any]:
    if token == "aws:index/getCallerIdentity:getCallerIdentity":
        return {"accountId": FAKE_ACCOUNT, "arn": f"arn:aws:iam::{FAKE_ACCOUNT}:user/bench", "userId": "AIDABENCH", "id": FAKE_ACCOUNT}
    if token == "aws:index/getPartition:getPartition":
        return {"id": "aws", "partition": "aws", "dnsSuffix": "amazonaws.com", "reverseDnsPrefix": "com.amazonaws"}
    if token == "aws:index/getRegion:getRegion":
        return {"id": REGION, "name": REGION, "region": REGION}
    if token == "aws:ec2/getInstanceType:getInstanceType":
        name = args["instanceType"]
        model, count, memory, vcpus, ram = INSTANCE_TYPES[name]
        return {
            "id": name,
            "instanceType": name,
            "gpuses": [{"count": count, "manufacturer": "NVIDIA", "name": model, "memorySize": memory}],
            "totalGpuMemory": count * memory,
            "efaSupported": False,
            "efaMaximumInterfaces": 0,
            "maximumNetworkCards": 1,
            "maximumNetworkInterfaces": 4,
            "instanceStorageSupported": True,
            "instanceDisks": [{"count": 1, "size": 250, "type": "ssd"}],
            "totalInstanceStorage": 250,
            "supportedArchitectures": ["x86_64"],
            "defaultVcpus": vcpus,
            "memorySize": ram,
        }
    if token == "aws:ec2/getVpc:getVpc":
        return {"id": "vpc-0bench000000000001", "cidrBlock": "172.31.0.0/16", "default": True}
    if token == "aws:ec2/getSubnets:getSubnets":
        return {"id": REGION, "ids": list(SUBNETS)}
    if token == "aws:ec2/getSubnet:getSubnet":
        return {"id": args["id"], "availabilityZone": SUBNETS[args["id"]], "vpcId": "vpc-0bench000000000001", "cidrBlock": "172.31.0.0/20"}
    if token == "aws:ssm/getParameter:getParameter":
        return {"id": args["name"], "name": args["name"], "value": "ami-0bench00000000001", "insecureValue": "ami-0bench00000000001", "type": "String", "version": 1}
    if token == "aws:ec2/getAmi:getAmi":
        return {"id": "ami-0bench00000000001", "imageId": "ami-0bench00000000001", "name": "bench-dlami", "architecture": "x86_64", "rootDeviceName": "/dev/sda1"}
    if token == "aws:iam/getRole:getRole":
        return {"id": args["name"], "name": args["name"], "arn": f"arn:aws:iam::{FAKE_ACCOUNT}:role/aws-service-role/autoscaling.amazonaws.com/{args['name']}"}
    if token == "aws:index/getAvailabilityZones:getAvailabilityZones":
        return {"id": REGION, "names": sorted(set(SUBNETS.values())), "zoneIds": ["use1-az1", "use1-az2"]}
    if token == "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings":
        zones = sorted(set(SUBNETS.values()))
        return {"id": REGION, "locations": zones, "instanceTypes": [args["filters"][0]["values"][0]] * len(zones),
                "locationTypes": ["availability-zone"] * len(zones)}
    if token == "aws:servicequotas/getServiceQuota:getServiceQuota":
        return {"id": args["quotaCode"], "quotaCode": args["quotaCode"], "serviceCode": "ec2", "value": 100_000.0}
    raise KeyError(f"the plain mocks have no answer for invoke {token}")


def measure_mocks(group_count: int, _calls: Path) -> dict[str, Any]:
    """(c): the program under plain Pulumi mocks: no moto, no boto3, constant invokes."""
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

        def call(self, args: mocks.MockCallArgs) -> dict:
            counted["invokes"] += 1
            return _constant_invoke(args.token, dict(args.args))

    settings = stack_settings(group_count)
    baseline = _peak_rss_mib()
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
        "peak_mib": _peak_rss_mib(),
    }


MEASUREMENTS = {"engine": measure_engine, "record": record_calls, "boto3": measure_boto3, "mocks": measure_mocks}


# ------------------------------------------------------------------------------------------------
# The driver


def _child(kind: str, group_count: int, calls: Path) -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, __file__, "--measure", kind, str(group_count), str(calls)],
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise SystemExit(f"{kind} at {group_count} groups failed:\n{completed.stderr[-4000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


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
    parser.add_argument("--groups", type=int, nargs="+", default=[1, 10, 50, 100])
    parser.add_argument("--repeat", type=int, default=1, help="rounds of (a), (b), (c), each in fresh processes (medians are shown)")
    parser.add_argument("--measure", nargs=3, metavar=("KIND", "GROUPS", "CALLS"), help=argparse.SUPPRESS)
    options = parser.parse_args()

    if options.measure:
        kind, group_count, calls = options.measure
        if kind in ("record", "boto3"):
            _seed_uuid4()
        print(json.dumps(MEASUREMENTS[kind](int(group_count), Path(calls))))
        return

    print(f"machine: {platform.node()} · {platform.machine()} · nproc {os.cpu_count()} "
          f"(usable {len(os.sched_getaffinity(0))}) · Python {platform.python_version()} · "
          f"load average {' '.join(f'{load:.2f}' for load in os.getloadavg())}")
    print("peak memory: ru_maxrss of the measuring process (peak resident set, imports included)")
    print(f"each measurement: a fresh interpreter; median of {options.repeat} run(s)")
    print("a round runs (a), (b) and (c) back to back; a/b and a/c are the medians of the rounds' own ratios,\n"
          "so that a slow spell of the host weighs on both sides of a ratio\n")

    header = (
        f"{'groups':>6} {'resources':>9} {'calls':>5} │ {'(a) engine s':>12} {'cpu s':>6} {'ms/res':>7} {'apply s':>7} {'MiB':>5} │"
        f" {'(b) boto3 s':>11} {'ms/res':>7} {'MiB':>5} │ {'(c) mocks s':>11} {'ms/res':>7} {'MiB':>5} │ {'a/b':>5} {'a/c':>5}"
    )
    print(header)
    print("─" * len(header))
    rows = {}
    with tempfile.TemporaryDirectory() as scratch:
        for group_count in options.groups:
            calls = Path(scratch) / f"calls-{group_count}.pickle"
            recording = _child("record", group_count, calls)
            rounds = [
                {kind: _child(kind, group_count, calls) for kind in ("engine", "boto3", "mocks")}
                for _ in range(options.repeat)
            ]
            engine = _best([measured["engine"] for measured in rounds])
            floor = _best([measured["boto3"] for measured in rounds])
            plain = _best([measured["mocks"] for measured in rounds])
            a_over_b = [measured["engine"]["wall"] / measured["boto3"]["wall"] for measured in rounds]
            a_over_c = [measured["engine"]["wall"] / measured["mocks"]["wall"] for measured in rounds]
            if floor["differing_responses"]:
                print(f"  warning: {floor['differing_responses']} replayed responses differ from the recording: "
                      f"{floor['first_differences']}")
            if not engine["resources"] == recording["resources"] == plain["resources"]:
                print(f"  warning: resource counts differ: engine {engine['resources']}, "
                      f"recording {recording['resources']}, mocks {plain['resources']}")
            count = engine["resources"]
            rows[group_count] = {
                "engine": engine,
                "boto3": floor,
                "mocks": plain,
                "resources": count,
                "a/b": statistics.median(a_over_b),
                "a/b range": (min(a_over_b), max(a_over_b)),
                "a/c": statistics.median(a_over_c),
            }
            print(
                f"{group_count:>6} {count:>9} {floor['calls']:>5} │ {engine['wall']:>12.2f} {engine['cpu']:>6.2f} {1000 * engine['wall'] / count:>7.2f}"
                f" {engine['apply']:>7.2f} {engine['peak_mib']:>5.0f} │ {floor['wall']:>11.2f} {1000 * floor['wall'] / count:>7.2f}"
                f" {floor['peak_mib']:>5.0f} │ {plain['wall']:>11.2f} {1000 * plain['wall'] / count:>7.2f} {plain['peak_mib']:>5.0f} │"
                f" {rows[group_count]['a/b']:>5.2f} {rows[group_count]['a/c']:>5.2f}"
                + (f"  (a/b per round {min(a_over_b):.2f} to {max(a_over_b):.2f})" if options.repeat > 1 else ""),
                flush=True,
            )
        last_recording = recording

    print("\nresources: everything the plan lists (components included); calls: boto3 calls the engine made")
    print("(a) cpu s: the plan's process CPU time (a check on wall times when other work loads the machine)")
    print("(a) apply s: the part of the plan spent running the program on moto (the rest: moto set-up, policies, cost)")
    print(f"boto3 calls at {options.groups[-1]} groups by operation: "
          + ", ".join(f"{name} {count}" for name, count in sorted(last_recording["operations"].items(), key=lambda item: -item[1])))

    import_package = _import_seconds("import gpucloud")
    import_plan = _import_seconds("import gpucloud.plan")
    import_cli = _import_seconds("import gpucloud.cli")
    interpreter = _import_seconds("pass")
    print(f"\nimport (fresh interpreter, median of 5, interpreter start included): "
          f"`import gpucloud` {import_package:.2f} s · `import gpucloud.plan` {import_plan:.2f} s · "
          f"`import gpucloud.cli` {import_cli:.2f} s · bare interpreter {interpreter:.2f} s")

    print("\ntargets:")
    if 10 in rows and 100 in rows:
        per_resource = {n: rows[n]["engine"]["wall"] / rows[n]["resources"] for n in (10, 100)}
        linearity = per_resource[100] / per_resource[10]
        print(f"  ms/resource at 100 groups / at 10 groups = {linearity:.2f} (target <= 1.2): {'met' if linearity <= 1.2 else 'MISSED'}")
    largest = max(rows)
    ratio = rows[largest]["a/b"]
    print(f"  a/b at {largest} groups = {ratio:.2f} (target <= 2.0): {'met' if ratio <= 2.0 else 'MISSED'}")
    worst = max(rows[n]["a/b"] for n in rows)
    print(f"  a/b worst over all sizes = {worst:.2f} (target <= 2.0): {'met' if worst <= 2.0 else 'MISSED'}")
    peak = rows[largest]["engine"]["peak_mib"]
    print(f"  peak memory of (a) at {largest} groups = {peak:.0f} MiB (target < 1024): {'met' if peak < 1024 else 'MISSED'}")
    print(f"  import gpucloud = {import_package:.2f} s (target < 1 s): {'met' if import_package < 1 else 'MISSED'}")
    print(f"  (not a target: `import gpucloud.plan` {import_plan:.2f} s and `import gpucloud.cli` {import_cli:.2f} s "
          "load moto, boto3, pulumi and pulumi-aws, which any plan needs)")
    print(f"load average after: {' '.join(f'{load:.2f}' for load in os.getloadavg())}")


if __name__ == "__main__":
    main()
