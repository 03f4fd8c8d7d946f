"""What `pulumi up` of each example stack calls that another policy than the deployer's own decides
(the project key's, through a service) or that passes a role, measured while the engine applies the
stack: the engine's handlers make the calls the provider makes."""

from __future__ import annotations

import pytest

from gpucloud.config import load_stack_file
from paths import EXAMPLE_STACKS, STACKS
from support import deploy

SETTINGS = [load_stack_file(STACKS / f"Pulumi.{stack}.yaml") for stack in EXAMPLE_STACKS]


@pytest.mark.access_calls("deployer", "pulumiUp")
@pytest.mark.parametrize("settings", SETTINGS, ids=EXAMPLE_STACKS)
def test_pulumi_up_encrypts_through_services_and_passes_roles(settings, account):
    deployment = deploy(settings, account)

    assert deployment.outputs["kmsKeyArn"]
