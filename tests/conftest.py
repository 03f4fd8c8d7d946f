"""Shared fixtures: a fresh moto account per test, and example stacks deployed on the engine."""

from __future__ import annotations

import pytest

from gpucloud.config import load_stack_file
from gpucloud.testing import moto_account
from support import EXAMPLE_STACKS, STACKS, ExampleStack, deploy


LONGEST_FILES = (
    "test_config_properties.py",
    "test_config_properties_on_engine.py",
    "test_prometheus_integration.py",
    "test_data_survives.py",
    "test_state_backend.py",
    "test_readme_programs.py",
    "test_example_user_data.py",
    "test_h100_readings.py",
    "test_node_lifecycle.py",
    "test_gpu_catalog_coverage.py",
    "test_policy_plan.py",
    "test_account_facts.py",
    "test_aws_rules.py",
    "test_example_stacks.py",
    "test_capacity.py",
    "test_monitoring_and_budget.py",
    "test_replace.py",
    "test_remote_write_integration.py",
)
"""The files that take 3 to 14 s each, longest first (`pytest -n 2 --durations=0`, summed per file, 2026-11-25)."""


def pytest_collection_modifyitems(items):
    """Longest files first: pytest-xdist hands each worker a whole file, in collection order
    (`--no-loadscope-reorder`), so no worker is left alone with a long file at the end."""
    rank = {name: position for position, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


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
