"""Shared fixtures: a fresh moto account per test, and example stacks deployed on the engine."""

from __future__ import annotations

import botocore.session
import pytest

from gpucloud.config import load_stack_file
from gpucloud.testing import moto_account
from gpucloud.testing.moto_setup import moto_answers_sooner, service_models
from support import EXAMPLE_STACKS, STACKS, ExampleStack, deploy


LONGEST_FILES = (
    "test_config_properties_on_engine.py",
    "test_config_properties.py",
    "test_data_survives.py",
    "test_launcher_recording.py",
    "test_example_user_data.py",
    "test_h100_readings.py",
    "test_prometheus_integration.py",
    "test_benchmarks.py",
    "test_plan_comment_workflow.py",
    "test_plan_diff.py",
    "test_packaging.py",
    "test_aws_rules.py",
    "test_policy_plan.py",
    "test_example_stacks.py",
    "test_capacity.py",
    "test_gpu_catalog_coverage.py",
    "test_node_lifecycle.py",
    "test_account_facts.py",
    "test_watch.py",
    "test_stacks_share_an_account.py",
    "test_monitoring_and_budget.py",
    "test_state_backend.py",
    "test_pricing_catalog.py",
    "test_cost_plan.py",
    "test_mutation_runner.py",
    "test_input_coverage.py",
    "test_replace.py",
    "test_account_snapshot.py",
    "test_remote_write_integration.py",
    "test_readme_programs.py",
    "test_s3_prefix_access.py",
    "test_instance_requirements.py",
    "test_plan_cli.py",
)
"""The files that take 2.5 to 16 s each, longest first (`pytest --durations=0`, summed per file,
2026-11-25: the order, not the seconds, is what counts)."""


def pytest_collection_modifyitems(items):
    """Longest files first: pytest-xdist hands each worker a whole file, in collection order
    (`--no-loadscope-reorder`), so no worker is left alone with a long file at the end."""
    rank = {name: position for position, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


@pytest.fixture(autouse=True)
def service_models_parsed_once(monkeypatch):
    """Every botocore session a test makes reads AWS's service models through one loader: a new
    session parsed the large JSON models again (the state backend's tests spent a third of their
    CPU time on it). It is the loader the engine's accounts share (gpucloud.testing.moto_setup)."""
    monkeypatch.setattr(botocore.session, "create_loader", service_models)


@pytest.fixture(scope="session", autouse=True)
def moto_answers_sooner_everywhere():
    """The engine's moto tuning (lazy KMS key material, response classes inspected once) for the
    tests that start moto themselves too (`mock_aws`), not only inside `moto_account`."""
    with moto_answers_sooner():
        yield


@pytest.fixture
def account():
    with moto_account("us-east-1") as fresh:
        yield fresh


@pytest.fixture(scope="module", params=EXAMPLE_STACKS)
def example(request):
    """Each example stack deployed once on its own fresh account."""
    settings = load_stack_file(STACKS / f"Pulumi.{request.param}.yaml")
    with moto_account(settings.region) as fresh:
        yield ExampleStack(settings, deploy(settings, fresh))
