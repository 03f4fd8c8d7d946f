"""The moto-backed engine: run Pulumi programs offline against an in-process AWS account.

    from gpucloud.testing import moto_account, run_program

    with moto_account("us-east-1") as account:
        deployment = run_program(my_program, account, config={"gpu-cloud:project": "demo", ...})
        volumes = account.client("ec2").describe_volumes()["Volumes"]

A resource type the engine lacks fails the run (UnsupportedResourceError). Teach it one from your
own code with `register_resource` (and data sources with `register_invoke`); see their docstrings.
"""

from gpucloud.testing.account import Deployment, deprecate_image, moto_account, run_program, run_program_file
from gpucloud.testing.aws_packages import load_names_on_use
from gpucloud.testing.engine import AppliedResource, MotoEngine
from gpucloud.testing.handlers.budgets import budget_subscribers
from gpucloud.testing.registry import (
    Account,
    BrokenReferenceError,
    Created,
    ResourceRequest,
    UnsupportedResourceError,
    register_invoke,
    register_resource,
    register_update,
)

load_names_on_use()  # a plan loads the pulumi-aws modules it uses, not whole service packages

__all__ = [
    "Account",
    "AppliedResource",
    "BrokenReferenceError",
    "Created",
    "Deployment",
    "MotoEngine",
    "ResourceRequest",
    "UnsupportedResourceError",
    "budget_subscribers",
    "deprecate_image",
    "moto_account",
    "register_invoke",
    "register_resource",
    "register_update",
    "run_program",
    "run_program_file",
]
