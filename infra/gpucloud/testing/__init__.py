"""The moto-backed engine: run Pulumi programs offline against an in-process AWS account.

    from gpucloud.testing import moto_account, run_program

    with moto_account("us-east-1") as account:
        deployment = run_program(my_program, account, config={"gpu-cloud:project": "demo", ...})
        volumes = account.client("ec2").describe_volumes()["Volumes"]
"""

from gpucloud.testing.account import Deployment, moto_account, run_program, run_program_file
from gpucloud.testing.engine import AppliedResource, MotoEngine
from gpucloud.testing.handlers.budgets import budget_subscribers
from gpucloud.testing.registry import BrokenReferenceError, UnsupportedResourceError

__all__ = [
    "AppliedResource",
    "BrokenReferenceError",
    "Deployment",
    "MotoEngine",
    "UnsupportedResourceError",
    "budget_subscribers",
    "moto_account",
    "run_program",
    "run_program_file",
]
