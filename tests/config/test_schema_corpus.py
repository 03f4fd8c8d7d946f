"""Broken stack files, each refused by the command line, against the packaged JSON Schema: an editor
with the schema should mark every one of them too, except the listed few a schema cannot express
(rules between keys, arithmetic on a value), each with its reason. Against the schema before this
test, 50 of these 52 files passed: it knew the keys but none of the formats the CLI checks."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest
import yaml

from gpucloud.config import ConfigError
from gpucloud.config.stack_file import load_stack_file
from support import ROOT

SCHEMA_PATH = ROOT / "infra" / "gpucloud" / "data" / "stack-config.schema.json"
BASE = ROOT / "stacks" / "Pulumi.llm-infer.yaml"
GROUP = ("gpu-cloud:groups", 0)
CONTAINER = (*GROUP, "services", "containers", 0)
SCHEDULE = (*GROUP, "scaling", "schedules", 0)
DATA = ("gpu-cloud:data",)
ENDPOINT = (*GROUP, "endpoint")

NIGHT = {"name": "night", "recurrence": "0 20 * * *", "maxSize": 1, "timeZone": "Europe/Paris"}
"""A valid schedule, added to the base stack so that its keys can be broken one at a time."""

BROKEN: list[tuple[str, tuple, Any]] = [
    ("unknown region", ("aws:region",), "us-east-9"),
    ("region of no shape", ("aws:region",), "useast1"),
    ("owner not an e-mail", ("gpu-cloud:owner",), "serving-team"),
    ("owner without a domain", ("gpu-cloud:owner",), "team@example"),
    ("project in capitals", ("gpu-cloud:project",), "LLM"),
    ("cost center with a comma", ("gpu-cloud:costCenter",), "cc,serving"),
    ("bucket with capitals", (*DATA, "bucket"), "Model_Artifacts"),
    ("bucket too short", (*DATA, "bucket"), "ab"),
    ("bucket with two dots", (*DATA, "bucket"), "model..artifacts"),
    ("bucket named as an IP address", (*DATA, "bucket"), "192.168.10.20"),
    ("bucket with a reserved prefix", (*DATA, "bucket"), "xn--artifacts"),
    ("bucket with a reserved suffix", (*DATA, "bucket"), "artifacts-s3alias"),
    ("prefix starting with a slash", (*DATA, "readPrefixes"), ["/models/llm/"]),
    ("prefix with a wildcard", (*DATA, "readPrefixes"), ["models/*"]),
    ("prefix with a .. segment", (*DATA, "readPrefixes"), ["models/../secrets/"]),
    ("prefix with an empty segment", (*DATA, "writePrefixes"), ["logs//llm-infer/"]),
    ("world-open CIDR", (*ENDPOINT, "allowedCidrs"), ["0.0.0.0/0"]),
    ("CIDR with an octet over 255", (*ENDPOINT, "allowedCidrs"), ["10.0.0.300/8"]),
    ("CIDR prefix length over 32", (*ENDPOINT, "allowedCidrs"), ["10.0.0.0/33"]),
    ("CIDR that is a word", (*ENDPOINT, "allowedCidrs"), ["office"]),
    ("CIDR with host bits set", (*ENDPOINT, "allowedCidrs"), ["10.1.2.3/8"]),
    ("VPC block too large", ("gpu-cloud:network", "cidr"), "10.0.0.0/12"),
    ("VPC block too small", ("gpu-cloud:network", "cidr"), "10.64.0.0/24"),
    ("VPC block not private", ("gpu-cloud:network", "cidr"), "8.8.0.0/16"),
    ("flow log retention CloudWatch does not take", ("gpu-cloud:network", "flowLogsRetentionDays"), 31),
    ("four-field cron", (*SCHEDULE, "recurrence"), "0 20 * *"),
    ("cron hour 25", (*SCHEDULE, "recurrence"), "0 25 * * *"),
    ("cron macro", (*SCHEDULE, "recurrence"), "@daily"),
    ("cron month 13", (*SCHEDULE, "recurrence"), "0 20 1 13 *"),
    ("cron range that runs backwards", (*SCHEDULE, "recurrence"), "0 20-8 * * *"),
    ("misspelt time zone", (*SCHEDULE, "timeZone"), "Europe/Pairs"),
    ("time zone in lower case", (*SCHEDULE, "timeZone"), "utc"),
    ("image without a tag", (*CONTAINER, "image"), "vllm/vllm-openai"),
    ("image tagged latest", (*CONTAINER, "image"), "vllm/vllm-openai:latest"),
    ("image tag with a space", (*CONTAINER, "image"), "vllm/vllm-openai:v0.6 3"),
    ("container on the SSH port", (*CONTAINER, "port"), 22),
    ("container with 17 GPUs", (*CONTAINER, "gpus"), 17),
    ("env value with a NUL", (*CONTAINER, "env"), {"HF_HOME": "/scratch\x00"}),
    ("secret in env", (*CONTAINER, "env"), {"HF_TOKEN": "hf_abc"}),
    ("secretEnv of an unknown store", (*CONTAINER, "secretEnv"), {"HF_TOKEN": "vault:/llm/hf"}),
    ("group name in capitals", (*GROUP, "name"), "Servers"),
    ("instance type without a size", (*GROUP, "instanceTypes"), ["g5"]),
    ("instance type listed twice", (*GROUP, "instanceTypes"), ["g5.2xlarge", "g5.2xlarge"]),
    ("slow start under 30 seconds", (*ENDPOINT, "slowStartSeconds"), 10),
    ("security group listed twice", (*ENDPOINT, "allowedSecurityGroupIds"), ["sg-0123456789abcdef0"] * 2),
    ("Jupyter CIDR listed twice", ("gpu-cloud:access",), {"jupyterCidrs": ["10.0.0.0/8", "10.0.0.0/8"]}),
    ("misspelt group key", (*GROUP, "maxsize"), 8),
    ("subnet listed twice", ("gpu-cloud:network",), {"subnetIds": ["subnet-0123456789abcdef0"] * 2}),
    ("schedule that sets no size", SCHEDULE, {"name": "night", "recurrence": "0 20 * * *"}),
    ("minSize above maxSize", (*GROUP, "minSize"), 9),
    ("two schedules of one name", (*GROUP, "scaling", "schedules"), [dict(NIGHT), {**NIGHT, "maxSize": 2}]),
    ("ssh with Session Manager", ("gpu-cloud:access",), {"sshCidrs": ["10.0.0.0/8"]}),
    ("Lustre size FSx does not sell", ("gpu-cloud:storage", "lustre"), {"storageCapacityGiB": 5000}),
    ("Lustre size under FSx's least", ("gpu-cloud:storage", "lustre"), {"storageCapacityGiB": 1000}),
    ("Jupyter CIDR in a public range", ("gpu-cloud:access",), {"jupyterCidrs": ["203.0.113.0/24"]}),
    ("TensorBoard CIDR in a public IPv6 range", ("gpu-cloud:access",), {"tensorboardCidrs": ["2001:db8::/32"]}),
]
"""(what is wrong, the key path, the broken value): each a stack file the CLI refuses."""

SCHEMA_CANNOT_SAY = {
    "CIDR with host bits set": "10.1.2.3/8 has the shape of a CIDR; that its host bits are set is arithmetic on "
    "the address a pattern does not do",
    "cron range that runs backwards": "20-8 is two hours in range; comparing them is arithmetic a pattern does not do",
    "minSize above maxSize": "compares two keys' values, which JSON Schema cannot",
    "two schedules of one name": "uniqueItems compares whole items; names unique within a list it cannot say",
    "ssh with Session Manager": "sshCidrs is refused only while ssm is true (its default): a rule between keys",
}
"""The broken files the schema lets through, and why no schema could refuse them."""


def document_with(path: tuple, value: Any) -> dict:
    document = yaml.safe_load(BASE.read_text())
    document["config"]["gpu-cloud:groups"][0]["scaling"] = {"schedules": [dict(NIGHT)]}
    document = copy.deepcopy(document)
    target = document["config"]
    for step in path[:-1]:
        target = target.setdefault(step, {}) if isinstance(target, dict) else target[step]
    target[path[-1]] = value
    return document


def refused_by_the_cli(document: dict, tmp_path) -> bool:
    stack_file = tmp_path / "Pulumi.llm-infer.yaml"
    stack_file.write_text(yaml.safe_dump(document))
    try:
        load_stack_file(stack_file)
    except ConfigError:
        return True
    return False


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))


def test_the_base_stack_is_valid_to_both(validator, tmp_path):
    document = document_with(("gpu-cloud:budget", "monthlyUsd"), 12000)
    assert not refused_by_the_cli(document, tmp_path)
    assert list(validator.iter_errors(document)) == []


@pytest.mark.parametrize(("what", "path", "value"), BROKEN, ids=[what for what, _, _ in BROKEN])
def test_a_stack_file_the_cli_refuses_is_refused_by_the_schema(validator, tmp_path, what, path, value):
    document = document_with(path, value)
    assert refused_by_the_cli(document, tmp_path), f"{what}: the CLI accepts it, so it is no broken file"
    refused = any(True for _ in validator.iter_errors(document))
    if what in SCHEMA_CANNOT_SAY:
        assert not refused, f"{what}: the schema refuses it now; drop it from SCHEMA_CANNOT_SAY"
    else:
        assert refused, f"{what}: the CLI refuses it but the schema lets it through"
