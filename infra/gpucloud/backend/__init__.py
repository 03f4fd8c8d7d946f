"""`gpucloud backend bootstrap`: the S3 bucket and KMS key a team's Pulumi state and secrets live in.

`names` checks what the user asks for before any AWS call, `documents` holds the settings the
bucket wants, `bootstrap` reads and writes them through boto3 (`state_bucket`, `state_key`), and
`result` says what it left behind.
"""

from gpucloud.backend.bootstrap import bootstrap_backend
from gpucloud.backend.documents import state_lifecycle_rule, tls_only_statement, with_tls_only_statement
from gpucloud.backend.names import (
    DEFAULT_KEY_ALIAS,
    AwsCallError,
    BackendError,
    validate_bucket_name,
    validate_key_alias,
    validate_region,
    validate_stack_name,
)
from gpucloud.backend.result import BootstrapResult, format_instructions

__all__ = [
    "DEFAULT_KEY_ALIAS",
    "AwsCallError",
    "BackendError",
    "BootstrapResult",
    "bootstrap_backend",
    "format_instructions",
    "state_lifecycle_rule",
    "tls_only_statement",
    "validate_bucket_name",
    "validate_key_alias",
    "validate_region",
    "validate_stack_name",
    "with_tls_only_statement",
]
