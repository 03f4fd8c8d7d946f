"""The offline plan (`gpucloud plan`): a program run on the moto engine, checked and priced.

`preview` runs a stack or any program, `findings` holds the checks beside the policies, `model`
what a plan holds, `view` how a reviewer reads it, `program_source` how a program on disk is
found and configured the way the Pulumi CLI does it; `diff` and `base` compare a change with its
base (`gpucloud plan --base REF`). Needs the `gpucloud[plan]` extra.
"""

from gpucloud.plan.base import plan_change
from gpucloud.plan.diff import PlanDiff, diff_plans
from gpucloud.plan.findings import accepted_lint_findings, check_policies, cost_findings, spot_capacity_findings
from gpucloud.plan.model import POLICY_PACK, PROJECT, Plan, PlanFinding, dumps
from gpucloud.plan.preview import plan_program, plan_program_file, plan_stack
from gpucloud.plan.program_source import ProgramError, ProgramFailed

__all__ = [
    "POLICY_PACK",
    "PROJECT",
    "Plan",
    "PlanDiff",
    "PlanFinding",
    "ProgramError",
    "ProgramFailed",
    "accepted_lint_findings",
    "check_policies",
    "cost_findings",
    "diff_plans",
    "dumps",
    "plan_change",
    "plan_program",
    "plan_program_file",
    "plan_stack",
    "spot_capacity_findings",
]
