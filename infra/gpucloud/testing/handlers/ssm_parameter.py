"""SSM Parameter Store parameters (a JupyterLab group's token parameter)."""

from __future__ import annotations

from gpucloud.testing.handlers.kms import require_key
from gpucloud.testing.registry import Account, Created, ResourceRequest, aws_tags, drop_none, refused, resource

SECRET_SIGNATURE = "4dabf18193072939515e22adb298388d"
"""The key Pulumi's wire format marks a secret value with ({signature: ..., "value": ...}); pulumi-aws
makes every SecureString `value` secret."""
STANDARD_VALUE_LIMIT = 4096
"""A standard-tier parameter's value holds at most 4 KB (SSM user guide, "Managing parameter tiers":
standard 4 KB, advanced 8 KB; read 2026-11-25)."""


@resource("aws:ssm/parameter:Parameter")
def create_parameter(account: Account, request: ResourceRequest) -> Created:
    """What the provider sends (internal/service/ssm/parameter.go at 0073593e, read 2026-11-25): one
    PutParameter, the key only with SecureString, and it refuses `insecureValue` on a SecureString
    (after AWS took it: here before); then it reads the parameter back with decryption
    (resourceParameterRead: findParameterByName with withDecryption true; read 2026-11-28). AWS refuses a SecureString whose key is missing or disabled
    and a standard value above 4 KB; moto checks neither."""
    inputs = request.inputs
    kind = inputs["type"]
    insecure = inputs.get("insecureValue")
    if kind == "SecureString" and insecure is not None:
        raise refused("PutParameter", "ValidationException",
                      f"{request.name}: insecure_value cannot be used with type SecureString (the provider refuses it)")
    value = _plain(inputs.get("value")) if insecure is None else insecure
    key_id = inputs.get("keyId") if kind == "SecureString" else None
    require_key(account, key_id, request.name)
    tier = inputs.get("tier")
    if tier in (None, "Standard") and value is not None and len(value.encode("utf-8")) > STANDARD_VALUE_LIMIT:
        raise refused("PutParameter", "ValidationException",
                      f"{request.name}: a standard parameter's value holds at most {STANDARD_VALUE_LIMIT} bytes")
    name = inputs["name"]
    ssm = account.client("ssm")
    ssm.put_parameter(**drop_none({
        "Name": name,
        "Type": kind,
        "Value": value,
        "KeyId": key_id,
        "Tier": tier,
        "Description": inputs.get("description"),
        "AllowedPattern": inputs.get("allowedPattern"),
        "DataType": inputs.get("dataType"),
        "Tags": aws_tags(inputs.get("tags")) or None,
    }))
    stored = ssm.get_parameter(Name=name, WithDecryption=True)["Parameter"]
    arn = account.arn("ssm", f"parameter{name}" if name.startswith("/") else f"parameter/{name}")
    return Created(id=name, outputs={"arn": arn, "name": name, "version": stored["Version"], "keyId": key_id,
                                     "tier": tier or "Standard"})


def _plain(value):
    """The value inside Pulumi's secret wrapper (reading the marker too: it is the wrapper, not an input)."""
    if isinstance(value, dict) and value.get(SECRET_SIGNATURE) is not None:
        return value["value"]
    return value
