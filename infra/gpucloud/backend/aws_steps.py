"""How the bootstrap talks to AWS: each step's failure as one line naming the step, and a setting
read where AWS answers "none set" with an error code."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from gpucloud.backend.names import AwsCallError


def error_code(error: ClientError) -> str:
    return error.response.get("Error", {}).get("Code", "")


def read_setting(read: Callable[[], Any], none_set_code: str) -> Any | None:
    """What read() returns, or None where AWS answers that the setting is not there (none_set_code)."""
    try:
        return read()
    except ClientError as error:
        if error_code(error) != none_set_code:
            raise
        return None


@contextmanager
def aws_step(step: str) -> Iterator[None]:
    """Turn a failed AWS call inside `step` into one line: the step, the API operation, AWS's code and message."""
    try:
        yield
    except NoCredentialsError as error:
        raise AwsCallError(
            f"could not {step}: no AWS credentials found; set AWS_PROFILE (after `aws sso login` or "
            "`aws configure`) or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, then run again"
        ) from error
    except ClientError as error:
        details = error.response.get("Error", {})
        message = " ".join(str(details.get("Message") or "no message").split())
        raise AwsCallError(
            f"could not {step}: {error.operation_name} failed with {details.get('Code', 'an unknown error')}: "
            f"{message}; fix that and run again, it picks up where it stopped"
        ) from error
    except BotoCoreError as error:
        raise AwsCallError(f"could not {step}: {' '.join(str(error).split())}; fix that and run again") from error
