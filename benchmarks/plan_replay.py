"""(b) of `plan_scaling.py`: record the boto3 calls a plan makes, and replay them with plain boto3.

The recording runs the plan itself (`record`), hooked where every boto3 call passes
(`BaseClient._make_api_call`), and keeps each invoke's answer for (c). The replay (`measure_boto3`)
makes the same calls on a fresh moto account set up as the engine's, and fails if any answer
differs from the recorded one: its time is a floor only if its calls are the engine's.
"""

from __future__ import annotations

import contextlib
import copy
import json
import pickle
import resource
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

MOTO_SEED = 20240601
"""moto draws every id from one seedable random source; recording and replay seed it alike, so
the replayed calls get the ids the engine's calls got and can be replayed verbatim."""
FAKE_ACCOUNT = "123456789012"
"""moto's default account id."""


def seed_uuid4() -> None:
    """A few moto ids come from `uuid.uuid4`, not moto's seedable random: make it seeded too,
    before moto is imported, in the recording and the replay alike."""
    import random
    import uuid

    source = random.Random(MOTO_SEED)
    uuid.uuid4 = lambda: uuid.UUID(int=source.getrandbits(128), version=4)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


@contextlib.contextmanager
def patched(owner: Any, name: str, value: Any) -> Iterator[None]:
    """`owner.name` is `value` inside the block, and what it was again after."""
    saved = getattr(owner, name) if not isinstance(owner, dict) else owner[name]
    if isinstance(owner, dict):
        owner[name] = value
    else:
        setattr(owner, name, value)
    try:
        yield
    finally:
        if isinstance(owner, dict):
            owner[name] = saved
        else:
            setattr(owner, name, saved)


FLOORLESS_PACKAGES = ("pulumi", "pulumi_aws", "parliament", "jsoncfg", "gpucloud")
"""Top-level packages whose modules the plan imports inside its clock and the boto3 floor never does
(moto's service modules, which both import as they first answer a service, are not among them)."""


def preload(modules: list[str]) -> None:
    """Import `modules` in the order the recorded plan first imported them, and load the lazy
    pulumi-aws modules among them, which import nothing until a name of theirs is used."""
    import importlib

    if any(name.split(".")[0] == "parliament" for name in modules):
        from gpucloud.policy import iam_lint

        iam_lint._parliament()  # its import needs the stand-in for pkg_resources the plan gives it
    for name in modules:
        getattr(importlib.import_module(name), "__all__", None)


def record(measure: Callable[[int, Path], dict[str, Any]], group_count: int, calls: Path) -> dict[str, Any]:
    """Run `measure` ((a): `plan_stack`), recording every boto3 call made once the moto account is
    set up, every invoke's answer, and every write the engine makes into moto without boto3
    (`MOTO_WRITES`).

    The recording runs the plan itself, so it follows whatever the plan does (account facts
    seeded into moto, lookups, the rules that ask moto after the run). The hook is botocore's
    `BaseClient._make_api_call`, which every client method, paginator and waiter goes through,
    whichever client made the call: a wrapper on `Account.client`'s clients missed the paginated
    instance type offerings, and each missed call shifted every moto id after it."""
    import botocore.client
    from moto.moto_api._internal import mock_random

    from gpucloud.plan import preview
    from gpucloud.testing.engine import MotoEngine
    from gpucloud.testing.registry import RESOURCES

    recorded: list[dict[str, Any]] = []
    invokes: dict[str, list[Any]] = {}
    real_call, real_account = botocore.client.BaseClient._make_api_call, preview.moto_account

    def recording_call(client: Any, operation: str, params: dict[str, Any]) -> Any:
        methods = {api: method for method, api in client.meta.method_to_api_mapping.items()}
        entry = {"service": client.meta.service_model.service_name, "method": methods[operation],
                 "params": copy.deepcopy(params)}
        recorded.append(entry)
        try:
            response = real_call(client, operation, params)
        except Exception as error:
            entry["response"] = _error_of(error)
            raise
        entry["response"] = _comparable(response, client.meta.service_model.operation_model(operation).output_shape)
        return response

    @contextlib.contextmanager
    def recorded_account(region: str) -> Iterator[Any]:
        with real_account(region) as account:  # the set-up's own calls are the replay's set-up too
            with patched(botocore.client.BaseClient, "_make_api_call", recording_call):
                yield account

    with contextlib.ExitStack() as patches:
        patches.enter_context(patched(preview, "moto_account", recorded_account))
        patches.enter_context(patched(MotoEngine, "call", _recording_invokes(MotoEngine.call, invokes)))
        for token in MOTO_WRITES.keys() & RESOURCES.keys():
            patches.enter_context(patched(RESOURCES, token, _noting_moto_write(token, RESOURCES[token], recorded)))
        mock_random.seed(MOTO_SEED)
        loaded = set(sys.modules)
        measured = measure(group_count, calls)
    imported = [name for name in sys.modules if name not in loaded and name.split(".")[0] in FLOORLESS_PACKAGES]
    calls.write_bytes(pickle.dumps({"region": measured["region"], "calls": recorded, "invokes": invokes, "imported": imported}))
    operations: dict[str, int] = {}
    for call in recorded:
        key = f"{call['service']}.{call['method']}"
        operations[key] = operations.get(key, 0) + 1
    return {**measured, "calls": sum(1 for call in recorded if call["service"] != "moto"), "operations": operations}


MOTO_WRITES = {
    "aws:s3/bucketLogging:BucketLogging": lambda inputs: {
        "Bucket": inputs["bucket"], "TargetBucket": inputs["targetBucket"], "TargetPrefix": inputs.get("targetPrefix") or ""},
}
"""Handlers that end by writing a moto backend directly, with no boto3 call (moto would refuse
the call, or lacks it): the recording notes each such write where it happened, from the
resource's inputs, and the replay makes the same write (`_replay_moto_write`). Any other write of
that kind makes the replay's answers differ, and the benchmark fails, naming the first call."""


def _noting_moto_write(token: str, handler: Any, recorded: list[dict[str, Any]]) -> Any:
    """`handler`, noting in the recording the moto write it made, where it made it."""
    def noted(account: Any, request: Any) -> Any:
        created = handler(account, request)
        recorded.append({"service": "moto", "method": token, "params": MOTO_WRITES[token](request.inputs), "response": None})
        return created

    return noted


def _replay_moto_write(token: str, params: dict[str, Any]) -> None:
    """What the handler of `token` writes into moto, made again in the replay."""
    if token == "aws:s3/bucketLogging:BucketLogging":
        from moto.s3.models import s3_backends

        s3_backends[FAKE_ACCOUNT]["aws"].get_bucket(params["Bucket"]).logging = {
            "TargetBucket": params["TargetBucket"], "TargetPrefix": params["TargetPrefix"]}
        return
    raise KeyError(f"the replay cannot make the moto write of {token}")


def _error_of(error: Exception) -> dict[str, str]:
    """A failed call as compared: the exception's type and, for AWS errors, the error code."""
    code = getattr(error, "response", {}).get("Error", {}).get("Code", "")
    return {"Error": type(error).__name__, "Code": code}


def _is_epoch_time(shape: Any) -> bool:
    """A number that is a time: CloudWatch Logs gives times as milliseconds since 1970 in longs
    of its `Timestamp` shape (botocore's logs model: `LogGroup.creationTime` and the like), which
    the parser leaves as plain ints."""
    return shape is not None and shape.type_name in ("long", "integer") and shape.name == "Timestamp"


def _comparable(parsed: dict, shape: Any = None) -> Any:
    """A response without what differs between identical calls: request ids, and times, whether
    the parser made them datetimes, the service wrote them as ISO strings, or its model types
    them as epoch numbers (`_is_epoch_time`, read from the operation's output `shape`)."""
    import datetime
    import re

    TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d")

    def clean(value: Any, shape: Any) -> Any:
        if _is_epoch_time(shape) and isinstance(value, int):
            return "<time>"
        if isinstance(value, dict):
            members = getattr(shape, "members", None) or {}
            item_shape = getattr(shape, "value", None)
            return {key: clean(item, members.get(key, item_shape)) for key, item in value.items()
                    if key not in ("ResponseMetadata",)}
        if isinstance(value, list):
            return [clean(item, getattr(shape, "member", None)) for item in value]
        if isinstance(value, datetime.datetime) or (isinstance(value, str) and TIMESTAMP.match(value)):
            return "<time>"
        return value

    return clean(parsed, shape)


class ReplayDiverged(AssertionError):
    """The replay's answers are not the recording's: the floor would not be the engine's own calls."""


def measure_boto3(group_count: int, calls: Path) -> dict[str, Any]:
    """(b): the recorded calls replayed with plain boto3 clients on a fresh moto account, set up as
    the engine's. Fails if any answer differs from the recorded one: then the replay made other
    calls than the engine did (other ids, other state), and its time would be no floor."""
    from moto.moto_api._internal import mock_random

    from gpucloud.testing import moto_account
    from gpucloud.testing.moto_setup import collector_tuned
    from gpucloud.testing.registry import client_config

    recording = pickle.loads(calls.read_bytes())
    recorded, region = recording["calls"], recording["region"]
    operations = [(call["service"], call["method"], call["params"]) for call in recorded]
    responses: list[Any] = []
    baseline = peak_rss_mib()
    mock_random.seed(MOTO_SEED)
    started, cpu_started = time.perf_counter(), time.process_time()
    # The calls run under the collector settings the engine's own calls run under (a program
    # run is always inside `collector_tuned`): else the floor pays collections the engine does
    # not, 0.44 s of 2.5 s CPU at 10 groups.
    with moto_account(region) as account, collector_tuned():
        # Plain clients of the account's session, not `Account.client`'s: whatever checks the
        # engine adds to its clients are the engine's cost, not the floor's. They talk to moto as
        # the engine's do (unsigned but for S3, `client_config`), which is moto's cost, not the engine's.
        clients: dict[str, Any] = {}
        calls_started = time.perf_counter()
        for service, method, params in operations:
            if service == "moto":
                _replay_moto_write(method, params)
                responses.append(None)
                continue
            if service not in clients:
                clients[service] = account.session.client(service, region_name=region, config=client_config(service))
            # The engine publishes an AWS managed policy into moto before attaching it (moto
            # loads them only behind a slow global switch); the floor has to do the same.
            if method == "attach_role_policy" and params["PolicyArn"].startswith("arn:aws:iam::aws:policy/"):
                _publish_aws_managed_policy(params["PolicyArn"])
            try:
                responses.append(getattr(clients[service], method)(**params))
            except Exception as error:  # noqa: BLE001 - compared with the recording below
                responses.append(_error_of(error))
        calls_seconds = time.perf_counter() - calls_started
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    peak = peak_rss_mib()
    # Cleaned for the comparison after the clock stops: the engine does no such work.
    responses = [
        _comparable(response, clients[service].meta.service_model.operation_model(
            clients[service].meta.method_to_api_mapping[method]).output_shape) if isinstance(response, dict) else response
        for (service, method, _), response in zip(operations, responses, strict=True)
    ]
    differing = [
        f"#{index} {call['service']}.{call['method']}: recorded {str(call['response'])[:200]}, replayed {str(response)[:200]}"
        for index, (call, response) in enumerate(zip(recorded, responses, strict=True))
        if response != call["response"]
    ]
    if differing:
        raise ReplayDiverged(
            f"{len(differing)} of {len(recorded)} replayed responses differ from the recording at "
            f"{group_count} groups; the first: " + " | ".join(differing[:3])
        )
    return {
        "wall": wall,
        "cpu": cpu,
        "calls_only": calls_seconds,
        "calls": sum(1 for service, _, _ in operations if service != "moto"),
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


def invoke_key(token: str, args: dict[str, Any]) -> str:
    """An invoke and its arguments, as the engine and the plain mocks both see them (Pulumi's wire
    format carries numbers as floats; the engine makes whole ones ints)."""
    def whole(value: Any) -> Any:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, dict):
            return {key: whole(item) for key, item in value.items()}
        if isinstance(value, list):
            return [whole(item) for item in value]
        return value

    return json.dumps([token, whole(args)], sort_keys=True, default=str)


def _recording_invokes(real_call: Any, answers: dict[str, list[Any]]) -> Any:
    """`MotoEngine.call`, keeping its answer to every invoke, by invoke and arguments, in order."""
    def call(engine: Any, args: Any) -> Any:
        answer = real_call(engine, args)
        answers.setdefault(invoke_key(args.token, dict(args.args)), []).append(answer)
        return answer

    return call
