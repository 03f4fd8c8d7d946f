"""Running a Pulumi program on a fresh moto account and handing the account back for assertions."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import runpy
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import botocore.session
import pulumi
from pulumi.runtime import resource as runtime_resource
from pulumi.runtime import settings
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _ensure_event_loop, _sync_await

from gpucloud.testing.engine import AppliedResource, MotoEngine, RecordingMonitor
from gpucloud.testing.moto_setup import (
    collector_tuned,
    load_well_known_images,
    mock_reset_without_default_images,
    models_parsed_once,
    moto_answers_sooner,
    seed_public_parameters,
    service_models,
)
from gpucloud.testing.registry import Account

class _InlineExecutor(ThreadPoolExecutor):
    """Runs what it is given at once, on the calling thread, and hands back the finished future.

    The Pulumi runtime sends every registration and invoke to its loop's default executor
    (`run_in_executor`). The engine applies one resource at a time and its work never waits on the
    event loop, so a worker thread only added hand-offs and a second thread taking turns at the GIL
    with the loop: a 25-group plan took a fifth less CPU inline than on one engine thread (median of
    five interleaved pairs, 8.40 s against 6.75 s), which itself had been 6% faster at 50 groups than
    the runtime's default pool of cores + 4 threads. A ThreadPoolExecutor by type only: asyncio's
    `set_default_executor` takes no other kind; it never starts a thread."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as error:  # noqa: BLE001 - the runtime reads it from the future, as from a thread's
            future.set_exception(error)
        return future


_ENGINE_EXECUTOR = _InlineExecutor()

FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_SESSION_TOKEN": "testing",
}


@dataclass
class Deployment:
    """A program applied to the moto account: what was created, and the stack outputs."""

    account: Account
    project: str
    stack: str
    resources: list[AppliedResource]
    outputs: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    """What the program logged as warnings (`pulumi.log.warn`), which `pulumi preview` shows too."""
    errors: list[str] = field(default_factory=list)
    """What the program logged as errors (`pulumi.log.error`): `pulumi preview` and `up` fail on them."""

    def client(self, service: str) -> Any:
        return self.account.client(service)

    def of_type(self, token: str) -> list[AppliedResource]:
        return [resource for resource in self.resources if resource.type == token]

    def named(self, name: str) -> AppliedResource:
        matches = [resource for resource in self.resources if resource.name == name]
        if len(matches) != 1:
            raise KeyError(f"{len(matches)} resources are named {name!r}")
        return matches[0]

    @property
    def unvalidated(self) -> list[AppliedResource]:
        """Resources moto could not check (the engine only recorded them)."""
        return [resource for resource in self.resources if not resource.validated]


_ENGINE_CLIENTS: dict[str, dict[str, Any]] = {}
"""The engine's clients (`Account.client`), by region, shared by every account of the process.
moto answers any client while an account is open, and each account starts from reset backends,
so a client carries nothing from one account to the next but its (fake) credentials and the
service-model checks installed on it; making one cost 10 ms, and a test run made thousands."""


@functools.cache
def _session(region: str) -> boto3.Session:
    """The accounts' boto3 session for `region`, shared as their clients are (`_ENGINE_CLIENTS`),
    its service models shared with every other session. Like a client, it carries nothing from one
    account to the next but the fake credentials; making one cost 6 ms of every account's set-up,
    4 s of the test suite's CPU (py-spy, 2026-11-27)."""
    botocore_session = botocore.session.get_session()
    loader = service_models()
    botocore_session.register_component("data_loader", loader)
    session = boto3.Session(botocore_session=botocore_session, region_name=region)
    # boto3 appends its own data folder to the loader's search paths on every new session.
    loader.search_paths[:] = list(dict.fromkeys(loader.search_paths))
    return session


@contextlib.contextmanager
def moto_account(region: str = "us-east-1") -> Iterator[Account]:
    """A fresh in-process AWS account (moto) with fake credentials, for one region."""
    saved = {key: os.environ.get(key) for key in [*FAKE_CREDENTIALS, "AWS_DEFAULT_REGION", "AWS_PROFILE"]}
    os.environ.update(FAKE_CREDENTIALS, AWS_DEFAULT_REGION=region)
    os.environ.pop("AWS_PROFILE", None)
    try:
        with models_parsed_once(), mock_reset_without_default_images(), moto_answers_sooner():
            # Tuned for the account's whole life, not only its set-up and program runs: the
            # policies that run after a plan's program (parliament's 10 MB action database
            # above all) otherwise start full collections of the whole heap, four fifths of
            # their time in a 10-group plan (`gc.callbacks`: 0.56 of 0.71 s CPU).
            with collector_tuned():
                account = Account(region=region, session=_session(region), _clients=_ENGINE_CLIENTS.setdefault(region, {}))
                load_well_known_images(account)
                seed_public_parameters(account)
                with collector_tuned():  # freezes the catalogs the set-up loaded
                    yield account
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _config_values(config: Mapping[str, Any]) -> dict[str, str]:
    """Pulumi hands config to programs as strings, objects and lists as JSON."""
    return {key: value if isinstance(value, str) else json.dumps(value) for key, value in config.items()}


def run_program(
    program: Callable[[], None],
    account: Account,
    *,
    project: str = "gpu-cloud",
    stack: str = "dev",
    config: Mapping[str, Any] | None = None,
    record_unknown_types: bool = False,
    previous: Deployment | None = None,
) -> Deployment:
    """Run a Pulumi program to completion on the engine; resources land in `account`.

    A resource type with no handler fails the run, unless `record_unknown_types` records it as
    not validated (`Deployment.unvalidated` lists it). With `previous`, an earlier deployment of
    the same stack in the same account, the run is an update: unchanged resources are left alone,
    changed ones go through their type's update handler (`register_update`), as `pulumi up` would."""
    engine = MotoEngine(
        account,
        record_unknown_types=record_unknown_types,
        previous={resource.urn: resource for resource in previous.resources} if previous else None,
    )
    settings.set_root_resource(None)  # type: ignore[arg-type]
    pulumi.runtime.set_all_config(_config_values({"aws:region": account.region, **(config or {})}), [])
    program_log = _ProgramLog()
    pulumi.runtime.set_mocks(
        engine, project=project, stack=stack, preview=False, monitor=RecordingMonitor(engine), logger=program_log
    )
    settings.SETTINGS.rpc_manager.clear()
    settings.SETTINGS.outputs.clear()
    loop = _ensure_event_loop()
    loop.set_exception_handler(_report_unretrieved_without_traceback)
    loop.set_default_executor(_ENGINE_EXECUTOR)
    with collector_tuned(), _no_source_positions():
        _sync_await(run_pulumi_func(program))
        outputs = _stack_outputs()
    return Deployment(
        account=account,
        project=project,
        stack=stack,
        resources=list(engine.resources.values()),
        outputs=outputs,
        warnings=program_log.warnings,
        errors=program_log.errors,
    )


@contextlib.contextmanager
def _no_source_positions() -> Iterator[None]:
    """Registrations carry no stack trace while the engine runs a program. The SDK walks the whole
    Python stack for each resource (`_get_stack_trace`) so that the Pulumi engine can point its
    diagnostics at the program's lines; the mock monitor drops it unread, and the walk took 3.5% of
    the samples in a py-spy profile of the whole test suite (2026-11-25). `pulumi up` is untouched:
    this only holds inside `run_program`."""
    real = runtime_resource._get_stack_trace
    runtime_resource._get_stack_trace = lambda: runtime_resource.source_pb2.StackTrace()
    try:
        yield
    finally:
        runtime_resource._get_stack_trace = real


class _ProgramLog(logging.Logger):
    """Where the mock runtime sends the program's `pulumi.log` calls: warnings are kept for the
    plan, the rest go to this module's debug log. Outside the logging tree, so nothing is printed."""

    def __init__(self) -> None:
        super().__init__("gpucloud.testing.program")
        self.warnings: list[str] = []
        self.errors: list[str] = []

    def warning(self, message: object, *args: Any, **kwargs: Any) -> None:
        self.warnings.append(str(message))

    def error(self, message: object, *args: Any, **kwargs: Any) -> None:
        self.errors.append(str(message))

    def info(self, message: object, *args: Any, **kwargs: Any) -> None:
        logging.getLogger(__name__).debug("program: %s", message)

    debug = info


def _report_unretrieved_without_traceback(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Keep a failed run's leftover futures out of the output: the run already raised their error.

    When a resource fails, every future that depends on it (its URN, id and outputs, its
    children's) holds the same exception, and nobody retrieves it: `run_program` has raised the
    first one already. The collector reaps those futures at some arbitrary later moment and asyncio
    logs each one, hundreds for a program of a few dozen resources, in the middle of whatever runs
    next (a test report, the next plan). They go to the debug log, in one line each.

    Formatting their traceback is also avoided for a second reason: on Python 3.11 it calls
    `ast.parse`, and when the finalizer runs inside another AST conversion (pytest rewriting a
    module it imports, say) it clobbers CPython 3.11's shared recursion counter, and that
    conversion fails with "AST constructor recursion depth mismatch".
    """
    exception = context.get("exception")
    if exception is not None and str(context.get("message", "")).endswith("never retrieved"):
        logging.getLogger(__name__).debug("%s: %s: %s", context["message"], type(exception).__name__, exception)
        return
    loop.default_exception_handler(context)


def _stack_outputs() -> dict[str, Any]:
    """`pulumi.export` values, resolved (the mock monitor registers the stack before the program runs)."""
    root = settings.get_root_resource()
    exported = dict(getattr(root, "outputs", {}) or {})
    return _sync_await(pulumi.Output.from_input(exported).future()) or {}


def deprecate_image(account: Account, image_id: str, when: str) -> None:
    """Mark an image of the moto account deprecated from `when` (ISO 8601), as EnableImageDeprecation would."""
    account.client("ec2").describe_images(ImageIds=[image_id])
    account.image_deprecations[image_id] = when


def run_program_file(path: str | Path, account: Account, **options: Any) -> Deployment:
    """Run a Pulumi program file (its `__main__.py`, say) on the engine."""
    return run_program(lambda: runpy.run_path(str(path), run_name="__main__"), account, **options)
