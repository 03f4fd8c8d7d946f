"""Shared fixtures: a fresh moto account per test, and example stacks deployed on the engine.

The package is imported where a test needs it, not at the top: xdist's controller loads this file
too, before it starts the workers, and runs no test. Loading the engine here (moto, pulumi and
pulumi-aws, 1.4 s of CPU) held every worker back by that much."""

from __future__ import annotations

import contextlib
import gc
import os
import tempfile

import pytest

from paths import EXAMPLE_STACKS, STACKS


LONGEST_FILES = (
    "test_change_order.py",
    "test_config_properties_on_engine.py",
    "test_job_supervisor.py",
    "test_data_survives.py",
    "test_account_facts.py",
    "test_launcher_recording.py",
    "test_packaging.py",
    "test_plan_diff.py",
    "test_config_properties.py",
    "test_job_supervisor_preflight.py",
    "test_benchmarks.py",
    "test_jobs.py",
    "test_aws_rules.py",
    "test_policy_plan.py",
    "test_init_repository.py",
    "test_capacity.py",
    "test_job_supervisor_never_started.py",
    "test_cost_plan.py",
    "test_example_user_data.py",
    "test_mutation_runner.py",
    "test_account_snapshot.py",
    "test_input_coverage.py",
    "test_secret_references.py",
    "test_aws_packages.py",
    "test_cold_start_plan.py",
    "test_plan_comment_workflow.py",
    "test_certificates.py",
    "test_example_stacks.py",
    "test_data_bucket.py",
    "test_secret_env_access.py",
    "test_connect.py",
    "test_stacks_share_an_account.py",
    "test_prometheus_integration.py",
    "test_security_groups.py",
    "test_deployer_calls.py",
    "test_capacity_requirements.py",
    "test_ecr_repositories.py",
    "test_capacity_plan.py",
    "test_job_document_runs_launcher.py",
    "test_agent_bundle.py",
    "test_job_images.py",
    "test_instance_requirements.py",
    "test_plan_cli.py",
)
"""The files that take 4 to 60 s each, longest first (junitxml of the whole suite, summed per file,
2026-11-28: the order, not the seconds, is what counts; test_change_order.py, 60 s, was not
listed and ran in collection order). The job supervisor's files, which run its
state machine on moto, took 17 to 31 s of CPU each `-n 0` (2026-11-28), as long as the first: in
collection order, tests/ops came last, with a worker left alone with one of them at the end."""


def pytest_collection_modifyitems(items):
    """Longest files first: pytest-xdist hands each worker a whole file, in collection order
    (`--no-loadscope-reorder`), so no worker is left alone with a long file at the end."""
    rank = {name: position for position, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


SESSION_GC_THRESHOLDS = (700, 10, 100)
"""The collector's thresholds for the test session (CPython's default: 700, 10, 10). A worker's
heap holds a million objects that last (botocore's parsed service models, moto's catalogs, the
loaded pulumi_aws modules, parliament's action catalog), and with the default a full collection
walked it 25 times per worker, 0.4 to 2.8 s each: 9.6 and 12.9 s of the two workers' CPU time
(`gc.callbacks`, whole suite, 2026-11-27). At 100 it ran 7 and 8 times, 6.9 and 5.0 s in all, for
1.2 and 0.9 GiB peak resident set per worker. Inside an engine account `collector_tuned` sets its
own thresholds and puts these back."""

_SESSION = contextlib.ExitStack()


def runs_tests(config) -> bool:
    """Whether this process runs tests: an xdist worker, or pytest without xdist (`-n 0`, or the
    plugin not loaded: `-p no:xdist`, as the mutation runner starts it, leaves no `dist` option)."""
    return hasattr(config, "workerinput") or getattr(config.option, "dist", "no") == "no"


def pytest_configure(config):
    """For the whole session, collection included: every botocore session reads AWS's service
    models through one loader, the one the engine's accounts share (gpucloud.testing.moto_setup).
    A new session parsed the large JSON models again: the state backend's tests spent a third of
    their CPU time on it, and moto, imported while the tests are collected, makes three sessions
    to list EC2's regions (0.9 s of every worker's collection)."""
    if not runs_tests(config):
        return
    from gpucloud.testing.moto_setup import models_parsed_once

    # The node's boot-phase record, readings and log lines go under the session's temporary
    # directory, never the machine's /var/lib/gpucloud and /var/log/gpucloud (a test sets its own).
    os.environ.setdefault("GPUCLOUD_BOOT_PHASES_DIR", tempfile.mkdtemp(prefix="gpucloud-boot-phases-"))
    gc.set_threshold(*SESSION_GC_THRESHOLDS)
    _SESSION.enter_context(models_parsed_once())


def pytest_sessionfinish(session):
    """Leave what the session made to the process's exit: pytest runs a full collection after the
    last test to find unraisable exceptions, and it walked a worker's whole heap (a million
    objects and more) while xdist's controller waited. Frozen (`gc.freeze`), the heap is skipped:
    the time from a worker's last test to its exit went from 3 to 5 s to under 1 s (whole suite,
    2026-11-27). The objects are freed with the process either way; what is lost is the report of
    an exception raised in `__del__` by a reference cycle still uncollected when the last test ends
    (cycles collected during the run are reported, as before).

    Only at the end: frozen after collection instead, the objects keep the engine's accounts from
    freezing their own (gpucloud.testing.moto_setup.collector_tuned leaves another's freeze
    alone), and the engine tests' CPU time rose by a tenth (tests/components with test_plan_diff,
    `-n 0`, three alternations: 63 to 74 s against 59 to 67 s)."""
    gc.freeze()


def pytest_unconfigure(config):
    _SESSION.close()


@pytest.fixture(scope="session", autouse=True)
def moto_answers_sooner_everywhere():
    """The engine's moto tuning (lazy KMS key material, response classes inspected once) for the
    tests that start moto themselves too (`mock_aws`), not only inside `moto_account`."""
    from gpucloud.testing.moto_setup import moto_answers_sooner

    with moto_answers_sooner():
        yield


@pytest.fixture
def account():
    from gpucloud.testing import moto_account

    with moto_account("us-east-1") as fresh:
        yield fresh


@pytest.fixture(scope="module", params=EXAMPLE_STACKS)
def example(request):
    """Each example stack deployed once on its own fresh account."""
    from gpucloud.config import load_stack_file
    from support import ExampleStack, deployed_alone

    settings = load_stack_file(STACKS / f"Pulumi.{request.param}.yaml")
    with deployed_alone(settings) as deployment:
        yield ExampleStack(settings, deployment)
