"""Who calls what, measured: the tests that make AWS calls record each one's IAM action, resource ARN
and request context into gpucloud/data/access_calls.json (the contract in its "about").

A recorder sees each call with its request parameters and answer (`Request`), and, from the frames
of the code that made it, the values that code worked with: a node's config, a job, a stack's
settings. Those values turn the test's concrete names back into the file's placeholders (the
bucket a test made is `${dataBucket}`, its group's Auto Scaling group `gpu-cloud-${nameBase}-${group}`),
so the plan can fill them with any stack's. `gpucloud.testing.iam_actions` says what IAM sees of
each call.

Re-record everything with
`GPUCLOUD_MEASURE_CALLS=1 .venv/bin/python -m pytest -q -p no:xdist -o addopts= tests/node tests/ops tests/plan/test_connect.py tests/access`;
each recording test fails when the file no longer says what it measured.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gpucloud
import pytest
from access_placeholders import ACCOUNT, placeholders, under_jobs, values_in_frames, values_of
from gpucloud.testing.iam_actions import deployer_calls, iam_calls, stack_tag_context

ACCESS_CALLS_PATH = Path(gpucloud.__file__).parent / "data" / "access_calls.json"
MEASURE = "GPUCLOUD_MEASURE_CALLS"
COMMAND = ("GPUCLOUD_MEASURE_CALLS=1 .venv/bin/python -m pytest -q -p no:xdist -o addopts= "
           "tests/node tests/ops tests/plan/test_connect.py tests/access")
ABOUT = (
    "Who calls what: each AWS call an actor makes for a feature, with its IAM action, resource ARN "
    "(${placeholders} the plan fills from the stack) and the request context conditions read; "
    "endpoint: the VPC endpoint service the call passes (null: it never crosses the stack's VPC). "
    "Calls of the node, the person commands and the deployer were made on moto by the test in "
    "measuredBy (tests/access_recording.py, gpucloud/testing/iam_actions.py); AWS service "
    "principals' calls are declared with their AWS documentation (tests/access/declared_calls.py). "
    "`features` lists, per actor, every feature a test measured: a feature missing there is "
    f"unmeasured. Written by the tests, never by hand: {COMMAND}"
)


def measuring() -> bool:
    return os.environ.get(MEASURE) == "1" or os.environ.get("GPUCLOUD_MEASURE_NODE_CALLS") == "1"


@dataclass
class Request:
    """One AWS call as a recorder saw it: the service (VPC endpoint service name), the operation,
    its parameters and answer, and the values the calling code worked with."""

    service: str
    operation: str
    params: Mapping[str, Any]
    response: Mapping[str, Any] = field(default_factory=dict)
    values: Mapping[str, str] = field(default_factory=dict)
    encrypted_volumes: frozenset[str] = frozenset()
    feature: str | None = None
    """The command whose code made the call (`COMMANDS`), where the test's feature is not it."""
    context: Mapping[str, str] = field(default_factory=dict)
    """Request-context keys AWS adds that the call's parameters do not carry: the caller's
    aws:userid, the tags of the resource it acts on."""


def _authorizations(actor: str, request: Request) -> list[tuple[str | None, Any]]:
    """(feature where the call says it, authorization) for one request: the deployer's are only
    those another policy decides or that pass a role (iam_actions.deployer_calls)."""
    if actor == "deployer":
        return [(found.feature, found.call) for found in deployer_calls(
            request.service, request.operation, request.params, request.response, _role_of_profile)]
    return [(None, call) for call in iam_calls(request.service, request.operation, request.params, request.response,
                                               lambda volume: volume in request.encrypted_volumes, _topic_key)]


def _topic_key(topic_arn: str) -> str | None:
    """The key that encrypts a topic, as moto holds it (its KmsMasterKeyId), or None."""
    from moto.sns.models import sns_backends

    region = topic_arn.split(":")[3] if topic_arn.count(":") >= 5 else ""
    topic = sns_backends[ACCOUNT][region].topics.get(topic_arn) if region else None
    return (topic.kms_master_key_id or None) if topic else None


def _role_of_profile(profile_arn: str) -> str:
    """The role in an instance profile, as moto holds it."""
    from moto.iam.models import iam_backends

    profiles = iam_backends[ACCOUNT]["global"].instance_profiles.values()
    [role] = next(profile for profile in profiles if profile.arn == profile_arn).roles
    return role.arn


# --- requests -> entries --------------------------------------------------------------------------

def entries(actor: str, feature: str, measured_by: str, requests: Iterable[Request], through_vpc: bool) -> list[dict]:
    """The file's entries for what one test measured, sorted and without repeats."""
    found: dict[str, dict] = {}
    for request in requests:
        for call_feature, call in _authorizations(actor, request):
            resource = under_jobs(placeholders(call.resource, request.values))
            context = {key: [under_jobs(placeholders(item, request.values)) for item in value]
                       if isinstance(value, (list, tuple)) else under_jobs(placeholders(value, request.values))
                       for key, value in call.context.items()}
            given = {key: under_jobs(placeholders(value, request.values)) for key, value in request.context.items()
                     if call.via is None}
            context = dict(sorted((context | given | stack_tag_context(call.action, resource)).items()))
            entry = {"actor": actor, "feature": call_feature or request.feature or feature, "measuredBy": measured_by, "action": call.action,
                     "resource": resource, "context": context,
                     "endpoint": request.service if through_vpc and call.via is None else None}
            found[json.dumps(entry, sort_keys=True)] = entry
    return sorted(found.values(), key=sort_key)


def sort_key(entry: Mapping[str, Any]) -> tuple:
    return (entry["actor"], entry["feature"], entry["measuredBy"], entry["action"], entry["resource"],
            json.dumps(entry["context"], sort_keys=True))


# --- the file ---------------------------------------------------------------------------------------

def recorded() -> list[dict]:
    if not ACCESS_CALLS_PATH.exists():
        return []
    return json.loads(ACCESS_CALLS_PATH.read_text(encoding="utf-8"))["calls"]


def recorded_features() -> dict[str, list[str]]:
    """actor -> every feature the file holds a call of (measured or declared)."""
    if not ACCESS_CALLS_PATH.exists():
        return {}
    return json.loads(ACCESS_CALLS_PATH.read_text(encoding="utf-8"))["features"]


def recorded_for(measured_by: str) -> list[dict]:
    return [entry for entry in recorded() if entry["measuredBy"] == measured_by]


def check(measured_by: str, measured: list[dict]) -> None:
    """A test that passes must have made exactly the calls the file holds for it."""
    held = recorded_for(measured_by)
    assert held == measured, (
        f"{measured_by} measured {json.dumps(measured, indent=1)}\nand {ACCESS_CALLS_PATH.name} holds "
        f"{json.dumps(held, indent=1)}: measure again ({COMMAND})")


def write(measured: Mapping[str, list[dict]], declared: list[dict] | None = None) -> None:
    """Replace the entries of the tests that ran (and, given `declared`, every declared one)."""
    kept = [entry for entry in recorded() if entry["measuredBy"] not in measured
            and not (declared is not None and entry["measuredBy"].startswith("declared:"))]
    calls = sorted(kept + [entry for entries_ in measured.values() for entry in entries_] + (declared or []), key=sort_key)
    features: dict[str, set[str]] = {}
    for entry in calls:
        features.setdefault(entry["actor"], set()).add(entry["feature"])
    document = {"about": ABOUT, "features": {actor: sorted(names) for actor, names in sorted(features.items())},
                "calls": calls}
    ACCESS_CALLS_PATH.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")


# --- recording the person commands and the deployer (the node has tests/node/aws_calls.py) ----------

_PACKAGE = Path(gpucloud.__file__).parent
PERSON_CODE = (f"{_PACKAGE}/ops/", f"{_PACKAGE}/connect.py", f"{_PACKAGE}/cli/")
"""What a person runs: the job commands, `connect` and the CLI around them."""
DEPLOYER_CODE = (f"{_PACKAGE}/testing/handlers/",)
"""The engine's resource handlers make the calls the provider makes for `pulumi up`."""


def _library_paths() -> tuple[str, ...]:
    import concurrent.futures
    import http
    import urllib

    import boto3
    import botocore
    import s3transfer

    return tuple(str(Path(module.__file__).parent) + "/" for module in (botocore, boto3, s3transfer, concurrent.futures, urllib, http)) + (
        threading.__file__, __file__)


class ActorCalls:
    """The calls code under `code` makes while `recording()` is active: through botocore, or through
    a test's stand-in for a call moto lacks (`stood_in`). A frame whose `self` says
    `stands_in_for_aws` is looked through, so a call a stand-in forwards counts as its caller's."""

    active: ActorCalls | None = None

    def __init__(self, code: tuple[str, ...], values: Mapping[str, str] | None = None) -> None:
        self.code = code
        self.values = dict(values or {})
        self.requests: list[Request] = []
        self._libraries = _library_paths()
        self._lock = threading.Lock()

    def caller_values(self, depth: int = 2) -> dict[str, str] | None:
        """The values in the calling frames when actor code made the call; None when it did not."""
        frame = sys._getframe(depth)
        while frame is not None and (frame.f_code.co_filename.startswith(self._libraries)
                                     or getattr(frame.f_locals.get("self"), "stands_in_for_aws", False)):
            frame = frame.f_back
        if frame is None or not frame.f_code.co_filename.startswith(self.code):
            return None
        return self.values | values_in_frames(frame, self.code)

    def add(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    @contextlib.contextmanager
    def recording(self) -> Iterator[ActorCalls]:
        from botocore.client import BaseClient

        make_api_call = BaseClient._make_api_call
        calls = self

        def recorded_api_call(client, operation_name, api_params):
            values = calls.caller_values()
            if values is None:
                return make_api_call(client, operation_name, api_params)
            request = Request(client.meta.service_model.endpoint_prefix, operation_name, dict(api_params), values=values,
                              feature=command_of(sys._getframe(1)))
            calls.add(request)
            request.response = make_api_call(client, operation_name, api_params)
            return request.response

        def recorded_unsent(check):
            def unsent(client, operation, params):
                values = calls.caller_values()
                if values is not None:
                    calls.add(Request(client.meta.service_model.endpoint_prefix, operation, dict(params), values=values))
                return check(client, operation, params)
            return unsent

        outer, ActorCalls.active = ActorCalls.active, self
        try:
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(BaseClient, "_make_api_call", recorded_api_call)
                # The engine checks a call moto lacks against its model without sending it: the
                # deployer still makes it (gpucloud.testing.service_model.check_unsent).
                for name, module in list(sys.modules.items()):
                    if name.startswith("gpucloud.testing.handlers.") and hasattr(module, "check_unsent"):
                        patch.setattr(module, "check_unsent", recorded_unsent(module.check_unsent))
                yield self
        finally:
            ActorCalls.active = outer


def stood_in(service: str, operation: str, params: Mapping[str, Any], response: Mapping[str, Any] | None = None) -> None:
    """A test's stand-in answered a call moto cannot (CancelCommand, a scripted invocation status):
    it is still a call the actor's code makes, recorded as if moto had answered it."""
    calls = ActorCalls.active
    if calls is not None:
        values = calls.caller_values(depth=3)
        if values is not None:
            calls.add(Request(service, operation, dict(params), dict(response or {}), values,
                              feature=command_of(sys._getframe(1))))


def ran_printed(settings, feature: str, service: str, operation: str, params: Mapping[str, Any],
                response: Mapping[str, Any] | None = None, context: Mapping[str, str] | None = None) -> None:
    """A person ran a command gpucloud printed for them (`aws ssm start-session ...`, the token's
    `aws ssm get-parameter ...`): the API call that AWS CLI command (or the Session Manager plugin
    it starts) makes, for the stack's settings; `context`: what AWS adds to the call's request
    context (the caller's aws:userid, the resource's tags)."""
    calls = ActorCalls.active
    if calls is not None:
        calls.add(Request(service, operation, dict(params), dict(response or {}), values_of(settings), feature=feature,
                          context=dict(context or {})))


def _state_machine_code() -> tuple[str, ...]:
    import moto.stepfunctions.parser

    return (str(Path(moto.stepfunctions.parser.__file__).parent) + "/",)


_STASH = pytest.StashKey[dict]()
CODE_OF = {"person": PERSON_CODE, "deployer": DEPLOYER_CODE, "service:states.amazonaws.com": _state_machine_code()}
"""Whose code makes an actor's calls; the job supervisor's (actor `service:states.amazonaws.com`,
its role the principal) are its tasks', which moto's Step Functions interpreter makes."""
COMMANDS = {
    ("ops/jobs.py", "run"): "run",
    ("ops/job_control.py", "logs"): "logs",
    ("ops/job_control.py", "stop"): "stop",
    ("ops/supervised_jobs.py", "start"): "run",
    ("ops/supervised_jobs.py", "follow"): "run",
    ("ops/supervised_jobs.py", "jobs"): "jobs",
    ("connect.py", "find_connection"): "connect",
    ("ops/capacity.py", "buy"): "capacityBuy",
}
"""(module, function) -> the command it is: a test of `logs` that first runs a job measures `run`'s
calls as `run`'s."""


def command_of(frame) -> str | None:
    """The outermost command function on the stack, if any."""
    found = None
    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith(str(_PACKAGE)):
            found = COMMANDS.get((path[len(str(_PACKAGE)) + 1:], frame.f_code.co_name), found)
        frame = frame.f_back
    return found


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "access_calls(actor, feature): the test measures the AWS calls the actor's code makes for the "
        "feature into gpucloud/data/access_calls.json (tests/access_recording.py)")
    if measuring():
        config.stash[_STASH] = {}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """Record the calls of the actor the test's access_calls marker names; a test that passes must
    have made exactly the calls the file holds for it (or, measuring, they are kept)."""
    markers = list(item.iter_markers("access_calls"))
    if not markers:
        return (yield)
    given = {concrete: placeholder for value in item.funcargs.values() for concrete, placeholder in values_of(value).items()}
    recorders = []
    with contextlib.ExitStack() as recordings:
        for marker in markers:
            actor, feature = marker.args
            values = given | (values_of(marker.kwargs["settings"]) if "settings" in marker.kwargs else {})
            calls = ActorCalls(CODE_OF.get(actor, CODE_OF.get(actor.split(":")[0])), values)
            recordings.enter_context(calls.recording())
            recorders.append((actor, feature, marker.kwargs.get("principal"), calls))
        outcome = yield
    test = item.nodeid.split("[")[0]
    measured = []
    for actor, feature, principal, calls in recorders:
        found = entries(actor, feature, test, calls.requests, through_vpc=False)
        assert found, f"{test} names {actor} {feature} and measured no call"
        measured += [entry | {"principal": principal} if principal else entry for entry in found]
    measured.sort(key=sort_key)
    if _STASH in item.config.stash:
        together = {json.dumps(entry, sort_keys=True): entry for entry in item.config.stash[_STASH].get(test, []) + measured}
        item.config.stash[_STASH][test] = sorted(together.values(), key=sort_key)
        return outcome
    if "[" in item.nodeid:  # each case of a parametrized test measures a part of the test's calls
        missing = [entry for entry in measured if entry not in recorded_for(test)]
        assert not missing, f"{item.nodeid} measured calls {ACCESS_CALLS_PATH.name} lacks: {missing}; measure again ({COMMAND})"
    else:
        check(test, measured)
    return outcome


def pytest_sessionfinish(session):
    measured = session.config.stash.get(_STASH, None)
    if measured and not session.testsfailed:
        write(measured)
