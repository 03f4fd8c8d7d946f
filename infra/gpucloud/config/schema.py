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
from gpucloud.config.regions import known_regions
from gpucloud.config.stack import StackConfig

SCHEMA_FILE_NAME = "stack-config.schema.json"
"""The schema's file name in the package's data folder."""


OTHER_NAMESPACE_PATTERN = rf"^(?!{NAMESPACE}:)[A-Za-z0-9_.-]+:.+$"
"""Keys of other namespaces (`aws:profile`, a team's own `myproject:`): Pulumi passes them to their
owners, so the schema leaves them free; a key in gpu-cloud's namespace must be a known one."""


def without_meaningless_null(node: Any) -> Any:
    """`X | None = None` as X alone: pydantic writes such a key as `anyOf [X, null]`, and an editor
    then reports "not valid under any of the given schemas" for a typo deep inside X instead of the
    typo. A null there means the same as leaving the key out, which the file can do; a key whose
    null means something else (a default that is not null, `requestsPerTarget: null`) keeps it."""
    if isinstance(node, list):
        return [without_meaningless_null(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: without_meaningless_null(value) for key, value in node.items()}
    options = node.get("anyOf")
    if options and node.get("default", ...) is None:
        kept = [option for option in options if option.get("type") != "null"]
        if len(kept) == 1 and len(options) == 2:
            node = {**{key: value for key, value in node.items() if key != "anyOf"}, **kept[0]}
            node.pop("default")
    return node


def keys_named_by_pattern(node: Any) -> Any:
    """A map whose keys have a shape (`env`'s variable names) as `propertyNames`: pydantic writes it as
    `patternProperties`, under which a key of any other shape is simply allowed. A pattern the model
    gives the names itself (`env`'s, which also refuses secret-looking names) is kept."""
    if isinstance(node, list):
        return [keys_named_by_pattern(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: keys_named_by_pattern(value) for key, value in node.items()}
    patterns = node.get("patternProperties")
    if patterns and len(patterns) == 1 and "properties" not in node and "additionalProperties" not in node:
        [(key_pattern, value_schema)] = patterns.items()
        node = {key: value for key, value in node.items() if key != "patternProperties"}
        node["propertyNames"] = {"pattern": key_pattern, **node.get("propertyNames", {})}
        node["additionalProperties"] = value_schema
    return node


def stack_file_schema() -> dict[str, Any]:
    """The whole stack file: `config:` with `aws:region` and every `gpu-cloud:` key of StackConfig."""
    config_schema = StackConfig.model_json_schema(by_alias=True, mode="validation")
    config_schema = keys_named_by_pattern(without_meaningless_null(config_schema))
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
                        "enum": sorted(known_regions()),
                        "description": "The AWS region the stack deploys into, such as us-east-1: one of the "
                        "regions of botocore's endpoint data, as the CLI checks it.",
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
