"""The user data renderer: what it writes, how values are escaped, and that it fits EC2's limit."""

from __future__ import annotations

import functools
import gzip
import inspect
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from gpucloud.userdata import layout, render, scripts
from gpucloud.node.config import NodeConfig
from gpucloud.userdata.render import NodeBootstrap, UserDataTooLarge, bootstrap_env, encode_user_data, instance_type_has_nvlink, render_user_data, user_data_base64
from userdata_samples import BUNDLE, HOSTILE, HOSTILE_PARAMS, LARGEST_REALISTIC, MINIMAL, TYPICAL, rendered

@functools.cache
def parsed(params: NodeBootstrap) -> dict:
    """The rendered document read back (cached: tests only read it)."""
    text = rendered(params)
    assert text.startswith("#cloud-config\n")
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def written_files(params: NodeBootstrap) -> dict[str, dict]:
    return {entry["path"]: entry for entry in parsed(params)["write_files"]}


def sourced_env(env_text: str, tmp_path: Path) -> dict[str, str]:
    """Source the env file in bash and read every variable back, NUL-separated."""
    env_file = tmp_path / "bootstrap.env"
    env_file.write_text(env_text)
    names = [line.split("=", 1)[0] for line in env_text.splitlines() if "=" in line and line[0].isupper()]
    variables = " ".join(f'"${{{name}}}"' for name in names)
    script = f'set -eu; cd "$1"; . ./bootstrap.env; printf "%s\\0" {variables}'
    result = subprocess.run(["bash", "-c", script, "bash", str(tmp_path)], capture_output=True, check=True)
    return dict(zip(names, result.stdout.decode().split("\0")[:-1]))


def test_node_config_round_trips_into_the_agent():
    files = written_files(TYPICAL)

    document = json.loads(files[layout.NODE_CONFIG_PATH]["content"])
    config = NodeConfig.from_dict(document)

    assert config.expected_gpu_count == 8
    assert config.expected_gpu_model == "H100"
    assert config.nvlink_expected is True
    assert config.required_mounts == ("/scratch", "/data", "/persist")
    assert config.launch_hook_name == "ml-train-launch"
    assert config.checkpoint_prefix == "ml/train"
    assert set(document) <= {field for field in NodeConfig.__dataclass_fields__}


def test_minimal_group_has_no_disks_to_require_and_no_raid_tools():
    document = parsed(MINIMAL)

    config = json.loads(written_files(MINIMAL)[layout.NODE_CONFIG_PATH]["content"])
    assert config["required_mounts"] == []
    assert config["max_temperature_c"] == 85
    assert "packages" not in document
    assert parsed(TYPICAL)["packages"] == ["mdadm"]


def test_hostile_values_round_trip_exactly_and_stay_data(tmp_path):
    files = written_files(HOSTILE_PARAMS)

    config = json.loads(files[layout.NODE_CONFIG_PATH]["content"])
    environment = sourced_env(files[layout.BOOTSTRAP_ENV_PATH]["content"], tmp_path)
    cloudwatch = json.loads(files[layout.CLOUDWATCH_CONFIG_PATH]["content"])

    assert config["group_name"] == HOSTILE * 3
    assert config["persistent_volume_tag_key"] == f"key {HOSTILE}"
    assert config["checkpoint_prefix"] == f"prefix/{HOSTILE}/" * 4
    assert environment == {
        "REGION": "us-east-1",
        "SCRATCH_DISK_COUNT": "8",
        "DATA_DISK_DEVICE": "/dev/sdf",
        "PERSIST_TAG_KEY": f"key {HOSTILE}",
        "CHECKPOINT_DIR": f"/scratch/{HOSTILE}",
        "SHARED_MOUNTS": "",
    }
    assert cloudwatch["metrics"]["namespace"] == HOSTILE


def test_sourcing_hostile_env_file_runs_nothing(tmp_path):
    canary = tmp_path / "canary"
    params = NodeBootstrap(
        project="p",
        group_name="g",
        region="us-east-1",
        expected_gpu_count=1,
        expected_gpu_model="H100",
        persistent_volume_tag_key=f"$(touch {canary})`touch {canary}`",
        persistent_volume_tag_value="v",
        checkpoint_dir=f"/x'$(touch {canary})'",
        **BUNDLE,
    )

    sourced_env(bootstrap_env(params), tmp_path)

    assert not canary.exists()


def test_scripts_units_and_commands_do_not_vary_with_values():
    typical, hostile = written_files(TYPICAL), written_files(HOSTILE_PARAMS)
    value_files = {layout.NODE_CONFIG_PATH, layout.BOOTSTRAP_ENV_PATH, layout.CLOUDWATCH_CONFIG_PATH}

    for path in typical.keys() - value_files:
        assert typical[path] == hostile[path], path
    assert parsed(TYPICAL)["runcmd"] == parsed(HOSTILE_PARAMS)["runcmd"]
    assert "reboot" not in json.dumps(parsed(HOSTILE_PARAMS)["runcmd"])


def test_cloud_init_only_starts_the_bootstrap_stub_with_the_images_python():
    files = written_files(TYPICAL)

    assert parsed(TYPICAL)["runcmd"] == [[layout.NODE_PYTHON, layout.BOOTSTRAP_STUB_PATH]]
    assert files[layout.BOOTSTRAP_STUB_PATH] == {
        "path": layout.BOOTSTRAP_STUB_PATH, "content": render.bootstrap_stub_source(), "permissions": "0755"
    }
    assert set(files) == {
        layout.NODE_CONFIG_PATH, layout.BOOTSTRAP_ENV_PATH, layout.CLOUDWATCH_CONFIG_PATH, layout.BOOTSTRAP_STUB_PATH
    }


def test_node_json_pins_the_bundle_and_carries_the_health_settings():
    node = json.loads(written_files(LARGEST_REALISTIC)[layout.NODE_CONFIG_PATH]["content"])

    assert node["agent_sha256"] == "f" * 64 and node["agent_key"].endswith("f" * 64 + ".zip")
    assert node["agent_bucket"] == LARGEST_REALISTIC.agent_bucket
    assert (node["efa_expected"], node["network_tuning"]) == (True, True)
    assert (node["health_interval_s"], node["throttle_minutes"], node["max_replacements_per_hour"]) == (60, 10, 2)
    assert node["replace_faulty_nodes"] is True
    assert node["prometheus_remote_write_url"] == LARGEST_REALISTIC.prometheus_remote_write_url
    assert node["prometheus_scrape_interval_s"] == 30
    config = NodeConfig.from_dict(node)
    assert (config.prometheus_remote_write_url, config.prometheus_scrape_interval_s) == (
        LARGEST_REALISTIC.prometheus_remote_write_url, 30.0)
    assert NodeConfig.from_dict(json.loads(written_files(MINIMAL)[layout.NODE_CONFIG_PATH]["content"])
                                ).prometheus_remote_write_url is None


def unit_timeout(unit_text: str) -> int:
    [line] = [line for line in unit_text.splitlines() if line.startswith("TimeoutStartSec=")]
    return int(line.split("=", 1)[1])


def test_preparation_limits_are_consistent_with_the_launch_hook():
    """The storage unit outlasts its own waits, heartbeats cover storage, metrics set-up and the
    gate one after the other, and AWS keeps a heartbeated action that long."""
    from gpucloud.components.gpu_group import LAUNCH_HOOK_TIMEOUT_SECONDS

    storage_waits = 2 * layout.VOLUME_WAIT_SECONDS + layout.SCRATCH_DISK_WAIT_SECONDS
    storage_limit = unit_timeout(scripts.STORAGE_UNIT_TEXT)
    gate_limit = unit_timeout(scripts.GATE_UNIT_TEXT)
    node = json.loads(written_files(TYPICAL)[layout.NODE_CONFIG_PATH]["content"])
    config = NodeConfig.from_dict(node)
    worst_boot_check = config.boot_check_attempts * 6 * config.command_timeout_s + sum(
        min(config.boot_check_retry_s * 2**attempt, 60) for attempt in range(config.boot_check_attempts - 1)
    )

    assert f'-ge {layout.SCRATCH_DISK_WAIT_SECONDS} ]' in scripts.STORAGE_SCRIPT
    assert node["volume_wait_s"] == layout.VOLUME_WAIT_SECONDS
    assert storage_limit >= storage_waits + 300, "udev, RAID assembly and mkfs need time too"
    assert gate_limit >= worst_boot_check
    assert node["launch_heartbeat_limit_s"] >= storage_limit + layout.CLOUDWATCH_SETUP_TIMEOUT_SECONDS + gate_limit
    assert node["launch_heartbeat_limit_s"] + LAUNCH_HOOK_TIMEOUT_SECONDS <= min(100 * LAUNCH_HOOK_TIMEOUT_SECONDS, 48 * 3600)
    assert storage_waits > LAUNCH_HOOK_TIMEOUT_SECONDS, "why the heartbeat exists: storage alone can outlast the hook"
    assert layout.BUNDLE_FETCH_WORST_SECONDS < LAUNCH_HOOK_TIMEOUT_SECONDS - 300, (
        "the stub fetches before any heartbeat: its retries must end well within the hook, leaving time to boot"
    )


def test_checkpoint_retries_fit_in_the_terminate_hook():
    from gpucloud.config import CHECKPOINT_TIMEOUT_LIMIT_SECONDS
    from gpucloud.components.gpu_group import TERMINATE_HOOK_TIMEOUT_SECONDS
    from gpucloud.node.lifecycle import drain

    retries = inspect.signature(drain).parameters["backoff"].default
    assert retries.attempts * CHECKPOINT_TIMEOUT_LIMIT_SECONDS + sum(retries.delays()) < TERMINATE_HOOK_TIMEOUT_SECONDS


def test_cloudwatch_config_collects_gpu_metrics_per_group():
    metrics = json.loads(written_files(TYPICAL)[layout.CLOUDWATCH_CONFIG_PATH]["content"])["metrics"]

    assert metrics["namespace"] == "GpuCloud/ml"
    assert metrics["append_dimensions"]["AutoScalingGroupName"] == "${aws:AutoScalingGroupName}"
    assert metrics["metrics_collected"]["nvidia_gpu"]["measurement"] == [
        "utilization_gpu",
        "memory_used",
        "memory_total",
        "temperature_gpu",
        "power_draw",
    ]
    assert {"cpu", "mem", "disk"} <= metrics["metrics_collected"].keys()


def test_encoded_user_data_fits_ec2_limit_even_with_long_hostile_values():
    for params in (TYPICAL, HOSTILE_PARAMS, MINIMAL):
        text = rendered(params)
        payload = encode_user_data(text)

        assert len(payload) <= layout.USER_DATA_LIMIT_BYTES, (params.group_name[:20], len(payload))
        assert gzip.decompress(payload).decode() == text


USER_DATA_STUB_BOUND_BYTES = 5 * 1024
"""User data carries the stub and data files only: a few KB, whatever the agent grows to."""


@pytest.mark.parametrize("params", [LARGEST_REALISTIC, HOSTILE_PARAMS], ids=["largest", "hostile"])
def test_user_data_stays_a_few_kb_for_the_largest_node(params):
    size = len(encode_user_data(rendered(params)))

    assert size <= USER_DATA_STUB_BOUND_BYTES, size


def test_encoding_is_reproducible_and_base64_is_what_launch_templates_take():
    import base64

    assert encode_user_data(render_user_data(TYPICAL)) == encode_user_data(rendered(TYPICAL))
    assert base64.b64decode(user_data_base64(TYPICAL)) == encode_user_data(rendered(TYPICAL))


@pytest.mark.parametrize("params", [TYPICAL, HOSTILE_PARAMS, MINIMAL], ids=["typical", "hostile", "minimal"])
def test_libyaml_renders_the_same_document_as_the_pure_python_emitter(params, monkeypatch):
    """Rendering uses libyaml's emitter for speed; a machine without it must get the same bytes,
    or the same group would roll its fleet depending on where `pulumi up` ran."""
    assert issubclass(render._CloudConfigDumper, yaml.CSafeDumper)

    class PurePythonDumper(yaml.SafeDumper):
        pass

    PurePythonDumper.add_representer(str, render._represent_text)
    monkeypatch.setattr(render, "_CloudConfigDumper", PurePythonDumper)

    assert render_user_data(params) == rendered(params)


def test_too_large_user_data_is_refused():
    incompressible = os.urandom(20_000).hex()

    with pytest.raises(UserDataTooLarge):
        encode_user_data(f"#cloud-config\n# {incompressible}\n")


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"expected_gpu_count": 0}, "expected_gpu_count"),
        ({"expected_gpu_model": " "}, "expected_gpu_model"),
        ({"max_temperature_c": 200}, "max_temperature_c"),
        ({"data_disk_device": "/dev/nvme1n1"}, "data_disk_device"),
        ({"data_disk_device": "/dev/sdf; reboot"}, "data_disk_device"),
        ({"persistent_volume_tag_key": "k"}, "go together"),
        ({"checkpoint_dir": "relative/dir"}, "absolute"),
        ({"checkpoint_prefix": "p"}, "checkpoint_bucket"),
        ({"group_name": "nul\x00byte"}, "NUL"),
        ({"persistent_volume_device": "/dev/sdf", "data_disk_device": "/dev/sdf"}, "different device names"),
        ({"agent_sha256": "AB" * 32}, "agent_sha256"),
        ({"agent_sha256": "ab" * 31}, "agent_sha256"),
        ({"agent_bucket": ""}, "agent_bucket"),
        ({"health_interval_s": 5}, "health_interval_s"),
        ({"prometheus_remote_write_url": "http://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1/api/v1/remote_write"},
         "prometheus_remote_write_url"),
        ({"prometheus_remote_write_url": "https://aps-workspaces.us-east-1.amazonaws.com.evil.example/workspaces/ws-1/api/v1/remote_write"},
         "prometheus_remote_write_url"),
        ({"prometheus_remote_write_url": "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1/api/v1/query"},
         "prometheus_remote_write_url"),
        ({"prometheus_scrape_interval_s": 5}, "prometheus_scrape_interval_s"),
        ({"prometheus_scrape_interval_s": 301}, "prometheus_scrape_interval_s"),
    ],
)
def test_invalid_bootstrap_values_are_refused(changes, message):
    values = {**MINIMAL.__dict__, **changes}

    with pytest.raises(ValueError) as error:
        NodeBootstrap(**values)

    assert message in str(error.value)


@pytest.mark.parametrize(
    "instance_type, gpus, expected",
    [
        ("p5.48xlarge", 8, True),
        ("p4d.24xlarge", 8, True),
        ("p3.2xlarge", 1, False),
        ("g5.12xlarge", 4, False),
        ("g6e.48xlarge", 8, False),
    ],
)
def test_nvlink_is_expected_only_on_multi_gpu_nvlink_families(instance_type, gpus, expected):
    assert instance_type_has_nvlink(instance_type, gpus) is expected
