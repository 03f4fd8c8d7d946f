"""The JSON Schema of a stack file (`Pulumi.<stack>.yaml`), generated from the config models.

Editors with the YAML language server validate and complete a stack file while typing when its
first line names the schema (`# yaml-language-server: $schema=<path or URL>`). The package ships
the generated file (`gpucloud/data/stack-config.schema.json`); `gpucloud schema` prints it and
`gpucloud schema --write` regenerates it after a model changes (a test fails while it is stale).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from gpucloud.config.errors import NAMESPACE
from gpucloud.config.stack import StackConfig

SCHEMA_FILE_NAME = "stack-config.schema.json"
"""The schema's file name in the package's data folder."""

REGION_PATTERN = r"^[a-z]{2}(-gov)?-[a-z]+-\d$"
"""The shape `parse_stack_config` accepts for aws:region."""

OTHER_NAMESPACE_PATTERN = rf"^(?!{NAMESPACE}:)[A-Za-z0-9_.-]+:.+$"
"""Keys of other namespaces (`aws:profile`, a team's own `myproject:`): Pulumi passes them to their
owners, so the schema leaves them free; a key in gpu-cloud's namespace must be a known one."""


def stack_file_schema() -> dict[str, Any]:
    """The whole stack file: `config:` with `aws:region` and every `gpu-cloud:` key of StackConfig."""
    config_schema = StackConfig.model_json_schema(by_alias=True, mode="validation")
    definitions = config_schema.pop("$defs", {})
    keys = {f"{NAMESPACE}:{name}": value for name, value in config_schema["properties"].items()}
    required = [f"{NAMESPACE}:{name}" for name in config_schema.get("required", [])]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "gpu-cloud stack file (Pulumi.<stack>.yaml)",
        "description": "A gpu-cloud stack: aws:region and the project's gpu-cloud: keys under config:. "
        "Generated from gpucloud.config; `gpucloud schema` prints it.",
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                "description": config_schema.get("description", ""),
                "properties": {
                    "aws:region": {
                        "type": "string",
                        "pattern": REGION_PATTERN,
                        "description": "The AWS region the stack deploys into, such as us-east-1.",
                    },
                    **keys,
                },
                "required": ["aws:region", *required],
                "patternProperties": {OTHER_NAMESPACE_PATTERN: {}},
                "additionalProperties": False,
            },
            "secretsprovider": {"type": "string", "description": "Written by `pulumi stack init --secrets-provider`."},
            "encryptedkey": {"type": "string", "description": "Written by `pulumi stack init --secrets-provider`."},
        },
        "required": ["config"],
        "$defs": definitions,
    }


def render_schema() -> str:
    """The schema as the packaged file holds it: sorted keys, two-space indent, a final newline."""
    return json.dumps(stack_file_schema(), indent=2, sort_keys=True) + "\n"


def packaged_schema_text() -> str:
    """The schema file the package ships (what `gpucloud schema` prints)."""
    return resources.files("gpucloud").joinpath("data", SCHEMA_FILE_NAME).read_text(encoding="utf-8")
