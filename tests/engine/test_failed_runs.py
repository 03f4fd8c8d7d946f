"""A failed run reports its error once and leaves nothing behind in the output."""

from __future__ import annotations

import subprocess
import sys

FAILING_PROGRAMS = '''
import gc
import pulumi_aws as aws
from gpucloud.testing import moto_account, run_program

def program():
    for index in range(5):
        aws.sqs.Queue(f"jobs-{index}")

for _ in range(3):
    with moto_account() as account:
        try:
            run_program(program, account)
        except Exception as error:
            print("raised", type(error).__name__, error.token)
gc.collect()
print("done")
'''


def test_failed_runs_print_no_leftover_future_errors():
    result = subprocess.run([sys.executable, "-c", FAILING_PROGRAMS], capture_output=True, text=True, timeout=300)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["raised UnsupportedResourceError aws:sqs/queue:Queue"] * 3 + ["done"]
    assert result.stderr == ""
