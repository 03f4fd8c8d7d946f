"""Running a Pulumi program on a fresh moto account and handing the account back for assertions."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import functools
import gc
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
import botocore.loaders
import botocore.session
import pulumi
from moto import mock_aws
from pulumi.runtime import resource as runtime_resource
from pulumi.runtime import settings
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _ensure_event_loop, _sync_await

from gpucloud.lookups import DEEP_LEARNING_AMI_PARAMETER
from gpucloud.testing.engine import AppliedResource, MotoEngine, RecordingMonitor
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


def _load_well_known_images(account: Account) -> None:
    """moto's catalog of well-known public images (its amis.json: Ubuntu, Amazon Linux, Windows,
    RHEL, SUSE, Deep Learning AMIs), without the thousands of per-region "latest" and ECS-optimized
    images moto adds by default: building those took a second of every account's set-up (a volume
    and a snapshot with random ids each), and nothing the engine runs looks for them."""
    from moto.core.parse import default_timestamp_parser
    from moto.ec2.models import ec2_backends
    from moto.ec2.models.amis import AMIS, Ami

    saved = os.environ.get("MOTO_EC2_LOAD_DEFAULT_AMIS")
    os.environ["MOTO_EC2_LOAD_DEFAULT_AMIS"] = "false"
    try:
        backend = ec2_backends[account.account_id][account.region]
    finally:
        if saved is None:
            os.environ.pop("MOTO_EC2_LOAD_DEFAULT_AMIS", None)
        else:
            os.environ["MOTO_EC2_LOAD_DEFAULT_AMIS"] = saved
    for image in AMIS:
        created = image.get("creation_date")
        fields = {**image, "owner_alias": "amazon"}
        if isinstance(created, str):
            fields["creation_date"] = default_timestamp_parser(created)
        backend.amis.setdefault(image["ami_id"], Ami(backend, **fields))


def _seed_public_parameters(account: Account) -> None:
    """Publish the Deep Learning AMI parameter AWS provides in every region, pointing at an
    Ubuntu x86_64 image from moto's catalog (moto ships AWS's other public parameters, not this one)."""
    from moto.ssm.models import Parameter, ssm_backends

    images = account.client("ec2").describe_images(
        Owners=["amazon"],
        Filters=[{"Name": "architecture", "Values": ["x86_64"]}, {"Name": "name", "Values": ["*ubuntu*"]}],
    )["Images"]
    if not images:
        raise RuntimeError(
            "moto's catalog of public AMIs is empty (MOTO_EC2_LOAD_DEFAULT_AMIS=false, or a mock that "
            "ended while it was set): the engine needs it for the Deep Learning AMI parameter"
        )
    image_id = sorted(image["ImageId"] for image in images)[0]
    account_id = account.account_id
    backend = ssm_backends[account_id][account.region]
    if DEEP_LEARNING_AMI_PARAMETER not in backend._parameters:
        backend._parameters[DEEP_LEARNING_AMI_PARAMETER].append(
            Parameter(
                account_id=account_id,
                name=DEEP_LEARNING_AMI_PARAMETER,
                value=image_id,
                parameter_type="String",
                description="AWS Deep Learning Base OSS Nvidia Driver GPU AMI (seeded by gpucloud.testing)",
                allowed_pattern=None,
                keyid=None,
                last_modified_date=datetime.datetime.now(datetime.UTC),
                version=1,
                data_type="aws:ec2:image",
            )
        )


GC_THRESHOLDS = (200_000, 20, 20)
"""Collector thresholds while an account is open (CPython's default: 700, 10, 10). A young
generation of 200,000 rather than 50,000 objects takes parliament's IAM catalog (loaded by the
policies, inside the account) in one pass: collector time in a 10-group plan 0.29 -> 0.11 s."""


@contextlib.contextmanager
def _collector_tuned() -> Iterator[None]:
    """Keep Python's cyclic garbage collector from walking the engine's large, long-lived heap over and over.

    Setting up an account loads moto's AMI and instance type catalogs, and a program run allocates
    objects by the hundred thousand (Pulumi outputs and futures, botocore requests, moto models),
    all on top of a heap that outlives them: those catalogs, botocore's service models, the loaded
    pulumi_aws modules, and in a test session everything before. With the default thresholds the
    collector made some fifteen full passes over that heap in a 100-group plan, a fifth of its
    time, and most of each account's set-up. What exists on entry is frozen (left out of
    collections) and young objects are collected less often; both are undone on exit.

    Nested (a program run inside an open account), it freezes what the outer block made since, and
    what it made itself on exit; the outermost block unfreezes it all, into the oldest generation.
    The freeze is the engine's only while it froze first.
    """
    global _FROZEN_BY_ENGINE
    thresholds = gc.get_threshold()
    freeze = _FROZEN_BY_ENGINE or gc.get_freeze_count() == 0  # objects someone else froze stay theirs
    outermost = freeze and not _FROZEN_BY_ENGINE
    if freeze:
        gc.freeze()
        _FROZEN_BY_ENGINE = True
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        if freeze:
            # What the block made is frozen too, as what existed on entry: left young, the plan's
            # resources after a program run, or parliament's IAM catalog after an account, made
            # the next young collection a fifth of a second of a 10-group plan.
            gc.freeze()
        if outermost:
            gc.unfreeze()
            _FROZEN_BY_ENGINE = False


_FROZEN_BY_ENGINE = False
"""Whether the objects now frozen (`gc.freeze`) were frozen by `_collector_tuned`."""


class _FilesParsedOnce(botocore.loaders.JSONFileLoader):
    """botocore's loader caches a model per call signature, and a client and `get_available_regions`
    ask for EC2's with different ones: the file is parsed once here instead. Loaders merge the
    sdk-extras into the model they get, which is the same merge again on a second call."""

    def __init__(self) -> None:
        self._parsed: dict[str, Any] = {}

    def load_file(self, file_path: str) -> Any:
        if file_path not in self._parsed:
            self._parsed[file_path] = super().load_file(file_path)
        return self._parsed[file_path]


def _service_models(search_path_string: str | None = None) -> botocore.loaders.Loader:
    """One loader of AWS's service models per data path (AWS_DATA_PATH): a new botocore session
    parses the large JSON models again (EC2's alone takes a tenth of a second). boto3 appends its
    own data folder to a session's loader for every session it makes, so the shared loader's search
    paths are kept free of repeats."""
    loader = _loader_for(search_path_string or "")
    loader.search_paths[:] = list(dict.fromkeys(loader.search_paths))
    return loader


@functools.cache
def _loader_for(search_path_string: str) -> botocore.loaders.Loader:
    loader = _create_loader(search_path_string or None)
    loader.file_loader = _FilesParsedOnce()
    return loader


_create_loader = botocore.loaders.create_loader


@contextlib.contextmanager
def _models_parsed_once() -> Iterator[None]:
    """Every botocore session made while an account is open reads the service models through the
    shared loader: the engine's own, and the ones moto makes for itself (listing EC2's regions when
    it first builds an EC2 backend made four sessions that each parsed EC2's model and the endpoint
    list, some 0.6 s of a plan). moto's own loader, which merges moto's extras into the models,
    is a different one and stays apart."""
    botocore.session.create_loader = _service_models
    try:
        yield
    finally:
        botocore.session.create_loader = _create_loader
        loader = _service_models()
        loader.search_paths[:] = list(dict.fromkeys(loader.search_paths))


_ENGINE_CLIENTS: dict[str, dict[str, Any]] = {}
"""The engine's clients (`Account.client`), by region, shared by every account of the process.
moto answers any client while an account is open, and each account starts from reset backends,
so a client carries nothing from one account to the next but its (fake) credentials and the
service-model checks installed on it; making one cost 10 ms, and a test run made thousands."""


def _session(region: str) -> boto3.Session:
    """A session of its own for each account, its service models shared with the others."""
    botocore_session = botocore.session.get_session()
    loader = _service_models()
    botocore_session.register_component("data_loader", loader)
    session = boto3.Session(botocore_session=botocore_session, region_name=region)
    # boto3 appends its own data folder to the loader's search paths on every new session.
    loader.search_paths[:] = list(dict.fromkeys(loader.search_paths))
    return session


@contextlib.contextmanager
def _mock_reset_without_default_images() -> Iterator[None]:
    """moto's mock, whose reset on the way out builds the backends again without moto's thousands
    of default images: rebuilding EC2's took a quarter of a second of every account, and the next
    account loads the catalog it needs itself (`_load_well_known_images`)."""
    mock = mock_aws()
    mock.start()
    try:
        yield
    finally:
        saved = os.environ.get("MOTO_EC2_LOAD_DEFAULT_AMIS")
        os.environ["MOTO_EC2_LOAD_DEFAULT_AMIS"] = "false"
        try:
            mock.stop()
        finally:
            if saved is None:
                os.environ.pop("MOTO_EC2_LOAD_DEFAULT_AMIS", None)
            else:
                os.environ["MOTO_EC2_LOAD_DEFAULT_AMIS"] = saved


@contextlib.contextmanager
def moto_account(region: str = "us-east-1") -> Iterator[Account]:
    """A fresh in-process AWS account (moto) with fake credentials, for one region."""
    saved = {key: os.environ.get(key) for key in [*FAKE_CREDENTIALS, "AWS_DEFAULT_REGION", "AWS_PROFILE"]}
    os.environ.update(FAKE_CREDENTIALS, AWS_DEFAULT_REGION=region)
    os.environ.pop("AWS_PROFILE", None)
    try:
        with _models_parsed_once(), _mock_reset_without_default_images():
            # Tuned for the account's whole life, not only its set-up and program runs: the
            # policies that run after a plan's program (parliament's 10 MB action database
            # above all) otherwise start full collections of the whole heap, four fifths of
            # their time in a 10-group plan (`gc.callbacks`: 0.56 of 0.71 s CPU).
            with _collector_tuned():
                account = Account(region=region, session=_session(region), _clients=_ENGINE_CLIENTS.setdefault(region, {}))
                _load_well_known_images(account)
                _seed_public_parameters(account)
                with _collector_tuned():  # freezes the catalogs the set-up loaded
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
    with _collector_tuned(), _no_source_positions():
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
