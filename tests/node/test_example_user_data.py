"""The user data of each example stack, as its launch templates carry it: the bootstrap stub and
its one command are the fixed text of gpucloud.userdata, and the stack's own values appear only in
the two data files (node.json, bootstrap.env), so no value can ever become code. One exception,
data too: the stack's job log group and the group's stream prefix there, JSON values of the
CloudWatch agent's config, where the agent sends the node's boot-phase lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gpucloud.userdata import bootstrap_stub as stub
from gpucloud.userdata import layout
from gpucloud.userdata import render as render_module
from gpucloud.userdata.bundle import BOOT_STEPS
from gpucloud.components.autoscaling import GPU_METRICS_NAMESPACE
from gpucloud.naming import job_log_group_name
from gpucloud.userdata.render import NodeBootstrap, bootstrap_stub_source, cloudwatch_agent_config
from support import moto_over_http, user_data_documents
from userdata_samples import BUNDLE

DATA_FILES = {layout.NODE_CONFIG_PATH, layout.BOOTSTRAP_ENV_PATH, layout.SERVICES_CONFIG_PATH}


def fixed_files(example, group_name: str = "g") -> dict[str, str]:
    """Every file but the data files, as the renderer writes it for any node of the stack's group."""
    any_group = NodeBootstrap(
        project="p", group_name=group_name, region="us-east-1", expected_gpu_count=1, expected_gpu_model="A10G",
        cloudwatch_namespace=GPU_METRICS_NAMESPACE, boot_phase_log_group=job_log_group_name(example.settings.name_base),
        **BUNDLE,
    )
    return {
        layout.BOOTSTRAP_STUB_PATH: bootstrap_stub_source(),
        layout.CLOUDWATCH_CONFIG_PATH: json.dumps(cloudwatch_agent_config(any_group), separators=(",", ":")) + "\n",
    }


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
    for document in user_data_documents(example):
        written = {entry["path"]: entry for entry in document["write_files"]}
        fixed = fixed_files(example, json.loads(written[layout.NODE_CONFIG_PATH]["content"])["group_name"])
        assert written.keys() - DATA_FILES == fixed.keys()
        for path, text in fixed.items():
            assert written[path]["content"] == text, path
        assert document["runcmd"] == [[layout.NODE_PYTHON, layout.BOOTSTRAP_STUB_PATH]]
        assert set(document) <= {"packages", "write_files", "runcmd"}
        assert document.get("packages", ["mdadm"]) == ["mdadm"]


def test_stack_values_appear_only_in_the_data_files(example):
    values = stack_values(example)

    for document in user_data_documents(example):
        data = {entry["path"]: entry["content"] for entry in document["write_files"] if entry["path"] in DATA_FILES}
        elsewhere = json.dumps(
            [document.get("runcmd"), document.get("packages")]
            + [entry for entry in document["write_files"] if entry["path"] not in DATA_FILES]
        )
        node = json.loads(data[layout.NODE_CONFIG_PATH])
        for name in (job_log_group_name(example.settings.name_base), f"boot-phases/{node['group_name']}/"):
            elsewhere = elsewhere.replace(name, "")
        assert node["project"] == example.settings.config.project
        assert node["group_name"] in values
        assert [value for value in values if value in elsewhere] == []


@pytest.fixture(scope="module")
def moto_server():
    """moto over HTTP on 127.0.0.1, answering from the in-process account of whichever example is deployed."""
    with moto_over_http() as url:
        yield url


def node_root(document: dict, root: Path) -> Path:
    """What cloud-init's write_files leaves on the node, under `root`."""
    for entry in document["write_files"]:
        target = root / entry["path"].lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(entry["content"])
        target.chmod(int(entry.get("permissions", "0644"), 8))
    return root


def node_role(metadata_stub, instance_id: str) -> None:
    """The instance profile's credentials, as IMDS hands them to the node (any key works on moto)."""
    metadata_stub.serve_instance(instance_id)
    metadata_stub.routes["/latest/meta-data/iam/security-credentials/"] = "gpu-cloud-node\n"
    metadata_stub.routes["/latest/meta-data/iam/security-credentials/gpu-cloud-node"] = json.dumps(
        {"AccessKeyId": "ASIAEXAMPLE", "SecretAccessKey": "secret", "Token": "token", "Code": "Success"}
    )


def fake_systemd(folder: Path) -> tuple[Path, Path]:
    bin_dir, calls = folder / "fakebin", folder / "systemd-calls.log"
    bin_dir.mkdir()
    for name in ("systemctl", "systemd-run"):
        (bin_dir / name).write_text(f'#!/bin/sh\necho "{name} $*" >> "{calls}"\n')
        (bin_dir / name).chmod(0o755)
    return bin_dir, calls


def test_each_stacks_user_data_fetches_its_uploaded_bundle_installs_it_and_starts_the_agent(
    example, moto_server, metadata_stub, tmp_path
):
    node_role(metadata_stub, "i-0123456789abcdef0")
    for number, document in enumerate(user_data_documents(example)):
        root = node_root(document, tmp_path / f"node-{number}")
        bin_dir, calls = fake_systemd(tmp_path / f"node-{number}")
        environment = {
            "PATH": f"{bin_dir}:/usr/bin:/bin", "GPUCLOUD_ROOT": str(root), "AWS_ENDPOINT_URL": moto_server,
            "GPUCLOUD_IMDS_ENDPOINT": metadata_stub.endpoint, "HOME": str(tmp_path),
        }

        result = subprocess.run(
            [sys.executable, str(root / layout.BOOTSTRAP_STUB_PATH.lstrip("/"))],
            env=environment, capture_output=True, text=True, timeout=120,
        )

        assert result.returncode == 0, result.stderr
        node = json.loads((root / layout.NODE_CONFIG_PATH.lstrip("/")).read_text())
        assert f"agent bundle {node['agent_sha256']} unpacked" in result.stderr
        lib = root / layout.AGENT_LIB_DIR.lstrip("/")
        assert (lib / "gpucloud/node/watch.py").read_bytes() == (Path(render_module.__file__).parents[1] / "node/watch.py").read_bytes()
        for unit in (layout.TUNE_UNIT, layout.WATCH_UNIT, layout.COLLECT_UNIT, layout.GATE_UNIT):
            assert (root / "etc/systemd/system" / unit).is_file()
        assert os.access(root / layout.AGENT_COMMAND_PATH.lstrip("/"), os.X_OK)
        assert calls.read_text().splitlines() == [" ".join(step) for step in BOOT_STEPS]


@pytest.mark.node_aws_calls("bootstrap")
def test_a_tampered_bundle_is_refused_and_the_launch_is_abandoned(
    example, moto_server, metadata_stub, lifecycle_actions, tmp_path, monkeypatch
):
    [group] = example.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"][:1]
    example.client("autoscaling").set_desired_capacity(AutoScalingGroupName=group["AutoScalingGroupName"], DesiredCapacity=1)
    [instance] = example.client("autoscaling").describe_auto_scaling_groups(
        AutoScalingGroupNames=[group["AutoScalingGroupName"]])["AutoScalingGroups"][0]["Instances"]
    node_role(metadata_stub, instance["InstanceId"])
    document = next(d for d in user_data_documents(example) if group["AutoScalingGroupName"] in json.dumps(d))
    root = node_root(document, tmp_path / "node")
    node = json.loads((root / layout.NODE_CONFIG_PATH.lstrip("/")).read_text())
    s3 = example.client("s3")
    genuine = s3.get_object(Bucket=node["agent_bucket"], Key=node["agent_key"])["Body"].read()
    s3.put_object(Bucket=node["agent_bucket"], Key=node["agent_key"], Body=genuine + b"\0",
                  ServerSideEncryption="aws:kms", SSEKMSKeyId=example.outputs["kmsKeyArn"])
    for name, value in {"GPUCLOUD_ROOT": str(root), "AWS_ENDPOINT_URL": moto_server,
                        "GPUCLOUD_IMDS_ENDPOINT": metadata_stub.endpoint}.items():
        monkeypatch.setenv(name, value)
    pauses: list[float] = []
    monkeypatch.setattr(stub.time, "sleep", pauses.append)
    try:
        status = stub.main()
    finally:
        s3.put_object(Bucket=node["agent_bucket"], Key=node["agent_key"], Body=genuine,
                      ServerSideEncryption="aws:kms", SSEKMSKeyId=example.outputs["kmsKeyArn"])

    assert status == 1 and len(pauses) == stub.FETCH_ATTEMPTS - 1
    assert not (root / layout.AGENT_LIB_DIR.lstrip("/")).exists()
    assert lifecycle_actions.completed == [{
        "group": group["AutoScalingGroupName"], "hook": f"{group['AutoScalingGroupName']}-launch",
        "instance_id": instance["InstanceId"], "result": "ABANDON",
    }]
