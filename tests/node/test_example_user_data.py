"""The user data of each example stack, as its launch templates carry it: every script, unit and
command is the fixed text of gpucloud.userdata, and the stack's own values appear only in the two
data files (node.json, bootstrap.env), so no value can ever become code."""

from __future__ import annotations

import base64
import gzip
import json

import yaml
from gpucloud.userdata import agent_source, layout, scripts
from gpucloud.components.autoscaling import GPU_METRICS_NAMESPACE
from gpucloud.userdata.render import NodeBootstrap, cloudwatch_agent_config

DATA_FILES = {layout.NODE_CONFIG_PATH, layout.BOOTSTRAP_ENV_PATH}
UNITS = {
    f"/etc/systemd/system/{layout.STORAGE_UNIT}": scripts.STORAGE_UNIT_TEXT,
    f"/etc/systemd/system/{layout.GATE_UNIT}": scripts.GATE_UNIT_TEXT,
    f"/etc/systemd/system/{layout.DRAIN_UNIT}": scripts.DRAIN_UNIT_TEXT,
}


def fixed_files() -> dict[str, str]:
    """Every file but the data files, as the renderer writes it for any group."""
    any_group = NodeBootstrap(
        project="p", group_name="g", region="us-east-1", expected_gpu_count=1, expected_gpu_model="A10G",
        cloudwatch_namespace=GPU_METRICS_NAMESPACE,
    )
    return {
        **{f"{layout.AGENT_LIB_DIR}/{path}": source for path, source in agent_source.agent_sources().items()},
        **{path: agent_source.shippable_shell(script) for path, script in scripts.SCRIPTS.items()},
        **UNITS,
        layout.CLOUDWATCH_CONFIG_PATH: json.dumps(cloudwatch_agent_config(any_group), separators=(",", ":")) + "\n",
    }


def documents(example) -> list[dict]:
    ec2 = example.client("ec2")
    documents = []
    for template in ec2.describe_launch_templates()["LaunchTemplates"]:
        [version] = ec2.describe_launch_template_versions(
            LaunchTemplateId=template["LaunchTemplateId"], Versions=["$Latest"]
        )["LaunchTemplateVersions"]
        text = gzip.decompress(base64.b64decode(version["LaunchTemplateData"]["UserData"])).decode()
        documents.append(yaml.safe_load(text))
    assert documents, "the stack has launch templates"
    return documents


def stack_values(example) -> set[str]:
    """What this stack's config puts into user data: names, bucket, prefixes, region."""
    config = example.settings.config
    values = {config.project, example.settings.region, example.stack}
    for group in config.groups:
        values |= {group.name, f"gpu-cloud-{example.stack}-{group.name}"}
        values |= {argument for argument in group.checkpoint.command or ()}
    if config.data:
        values |= {config.data.bucket, *(prefix.rstrip("/") for prefix in config.data.write_prefixes)}
    return {value for value in values if len(value) > 3}


def test_scripts_units_and_commands_are_the_fixed_text(example):
    fixed = fixed_files()

    for document in documents(example):
        written = {entry["path"]: entry for entry in document["write_files"]}
        assert written.keys() - DATA_FILES == fixed.keys()
        for path, text in fixed.items():
            assert written[path]["content"] == text, path
        assert document["runcmd"] == [
            [layout.INSTALL_SCRIPT_PATH],
            ["systemctl", "daemon-reload"],
            ["systemctl", "enable", layout.STORAGE_UNIT, layout.DRAIN_UNIT, layout.GATE_UNIT],
            ["systemd-run", f"--unit={layout.HEARTBEAT_UNIT}", layout.AGENT_COMMAND_PATH, "heartbeat"],
            ["systemctl", "start", layout.STORAGE_UNIT],
            ["timeout", str(layout.CLOUDWATCH_SETUP_TIMEOUT_SECONDS), layout.CLOUDWATCH_SCRIPT_PATH],
            ["systemctl", "start", "--no-block", layout.DRAIN_UNIT, layout.GATE_UNIT],
        ]
        assert set(document) <= {"packages", "write_files", "runcmd"}
        assert document.get("packages", ["mdadm"]) == ["mdadm"]


def test_stack_values_appear_only_in_the_data_files(example):
    values = stack_values(example)

    for document in documents(example):
        data = {entry["path"]: entry["content"] for entry in document["write_files"] if entry["path"] in DATA_FILES}
        elsewhere = json.dumps(
            [document.get("runcmd"), document.get("packages")]
            + [entry for entry in document["write_files"] if entry["path"] not in DATA_FILES]
        )
        node = json.loads(data[layout.NODE_CONFIG_PATH])
        assert node["project"] == example.settings.config.project
        assert node["group_name"] in values
        assert [value for value in values if value in elsewhere] == []
