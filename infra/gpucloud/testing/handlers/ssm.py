"""SSM Command documents (the job document `gpucloud run` sends)."""

from __future__ import annotations

import json
import re
from typing import Any

from gpucloud.testing.registry import Account, Created, ResourceRequest, aws_tags, drop_none, refused, resource

COMMAND_SCHEMA_VERSIONS = ("1.2", "2.0", "2.2")
"""Schema versions a Command document takes (SSM user guide, "Schemas, features, and examples":
1.2, 2.0 and 2.2 for Command documents; read 2026-11-25)."""

PARAMETER_TYPES = ("String", "StringList", "Boolean", "Integer", "MapList", "StringMap")
"""Parameter types a document declares (SSM user guide, "Data elements and parameters", `type`)."""

REFERENCE = re.compile(r"\{\{\s*([A-Za-z0-9_:.\-/]+)\s*\}\}")


def _invalid(message: str):
    return refused("CreateDocument", "InvalidDocumentContent", message)


def _check_command_content(content: Any, document_format: str) -> None:
    """What SSM checks of a Command document's content and moto does not: it parses, its schema
    version is one Command documents take, each parameter is well formed (a known type, an
    `allowedPattern` that compiles, `interpolationType` only `ENV_VAR`, which the same page
    defines for String parameters), and every `{{ name }}` it uses is declared or a Parameter
    Store reference (`{{ssm:...}}`)."""
    if document_format != "JSON":
        return  # the program writes JSON; YAML documents are checked by moto only
    try:
        document = json.loads(content)
    except ValueError as error:
        raise _invalid(f"The document is not valid JSON: {error}") from None
    if not isinstance(document, dict):
        raise _invalid("The document is not a JSON object")
    version = document.get("schemaVersion")
    if version not in COMMAND_SCHEMA_VERSIONS:
        raise _invalid(f"schemaVersion {version!r} is not one a Command document takes ({', '.join(COMMAND_SCHEMA_VERSIONS)})")
    if version in ("2.0", "2.2") and not document.get("mainSteps"):
        raise _invalid(f"a schema {version} document needs mainSteps")
    parameters = document.get("parameters") or {}
    for name, parameter in parameters.items():
        kind = parameter.get("type")
        if kind not in PARAMETER_TYPES:
            raise _invalid(f"parameter {name}: type {kind!r} is not one of {', '.join(PARAMETER_TYPES)}")
        pattern = parameter.get("allowedPattern")
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as error:
                raise _invalid(f"parameter {name}: allowedPattern does not compile: {error}") from None
        interpolation = parameter.get("interpolationType")
        if interpolation is not None and (interpolation != "ENV_VAR" or kind != "String"):
            raise _invalid(f"parameter {name}: interpolationType {interpolation!r} is only ENV_VAR, on a String")
    for used in REFERENCE.findall(content):
        if not used.startswith("ssm:") and used not in parameters:
            raise _invalid(f"{{{{ {used} }}}} names no parameter of the document")


@resource("aws:ssm/document:Document")
def create_document(account: Account, request: ResourceRequest) -> Created:
    inputs = request.inputs
    name = inputs["name"]
    document_format = inputs.get("documentFormat") or "JSON"
    if inputs["documentType"] == "Command":
        _check_command_content(inputs["content"], document_format)
    ssm = account.client("ssm")
    described = ssm.create_document(
        **drop_none(
            {
                "Name": name,
                "Content": inputs["content"],
                "DocumentType": inputs["documentType"],
                "DocumentFormat": document_format,
                "TargetType": inputs.get("targetType"),
                "VersionName": inputs.get("versionName"),
                "Tags": aws_tags(inputs.get("tags")) or None,
            }
        )
    )["DocumentDescription"]
    arn = account.arn("ssm", f"document/{name}")
    return Created(
        id=name,
        outputs={
            "arn": arn,
            "name": name,
            "documentVersion": described.get("DocumentVersion"),
            "defaultVersion": described.get("DefaultVersion") or described.get("DocumentVersion"),
            "latestVersion": described.get("LatestVersion"),
            "schemaVersion": described.get("SchemaVersion"),
            "status": described.get("Status"),
            "hash": described.get("Hash"),
        },
    )
