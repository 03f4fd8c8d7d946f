"""Shared fixtures: a fresh moto account per test, and example stacks deployed on the engine."""

from __future__ import annotations

import pytest

from gpucloud.config import load_stack_file
from gpucloud.testing import moto_account
from support import EXAMPLE_STACKS, STACKS, ExampleStack, deploy


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
