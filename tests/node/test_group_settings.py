"""Group settings that reach the node: the checkpoint, spot with a persistent volume, NVSwitch
fabric expectations, and the node role's right to keep its launch action alive."""

from __future__ import annotations


import pytest
from gpucloud.config import ConfigError
from gpucloud.components.gpu_group import GpuInstanceGroupArgs, node_bootstrap, node_shape
from gpucloud.documents import instance_role_policy
from gpucloud.lookups import InstanceTypeFacts
from gpucloud.userdata.render import node_config_document
from support import deploy, minimal_config, node_configs, settings_for

NOTEBOOK = {"name": "notebook", "instanceTypes": ["g5.xlarge"], "maxSize": 1, "persistentVolumeGiB": 100}
CHECKPOINT = {"command": ["python3", "/opt/train/save.py", "--to", "$(reboot)"], "directory": "/data/ckpt", "timeoutSeconds": 120}


def facts(name: str, gpus: int, model: str = "H100") -> InstanceTypeFacts:
    return InstanceTypeFacts(name, gpus, model, 81559, True, 32, 32, 8, ("x86_64",))


def group_args(**changes) -> GpuInstanceGroupArgs:
    values = dict(
        group_name="gpu-cloud-demo-train", instance_types=[facts("p5.48xlarge", 8)], subnet_ids=["subnet-1"],
        ami_id="ami-1", root_device_name="/dev/sda1", instance_profile_arn="arn", kms_key_arn="arn",
        security_group_id="sg-1", max_size=2, region="us-east-1", checkpoint_bucket="bucket",
        checkpoint_prefix="runs/", agent_bucket="gpu-cloud-demo-artifacts", agent_key="agent/gpucloud-node-0.zip",
        agent_sha256="0" * 64,
    )
    return GpuInstanceGroupArgs(**{**values, **changes})


def test_configured_checkpoint_reaches_node_json_as_data(account):
    values = minimal_config(
        groups=[{"name": "train", "instanceTypes": ["g5.xlarge"], "maxSize": 2, "checkpoint": CHECKPOINT}],
        data={"bucket": "demo-data", "writePrefixes": ["runs/demo/"]},
    )

    [node] = node_configs(deploy(settings_for(values), account))

    assert node["checkpoint_command"] == CHECKPOINT["command"]
    assert (node["checkpoint_dir"], node["checkpoint_timeout_s"]) == ("/data/ckpt", 120)
    assert (node["checkpoint_bucket"], node["checkpoint_prefix"]) == ("demo-data", "runs/demo")


def test_health_settings_reach_node_json(account):
    values = minimal_config(groups=[
        {"name": "train", "instanceTypes": ["g5.xlarge"], "maxSize": 2,
         "health": {"intervalSeconds": 30, "throttleMinutes": 20, "maxReplacementsPerHour": 5, "replace": False}},
    ])

    [node] = node_configs(deploy(settings_for(values), account))

    assert (node["health_interval_s"], node["throttle_minutes"]) == (30, 20)
    assert (node["max_replacements_per_hour"], node["replace_faulty_nodes"]) == (5, False)


def test_checkpoint_defaults_to_the_agent_sync_of_the_scratch_directory():
    settings = settings_for(minimal_config(groups=[{"name": "train", "instanceTypes": ["g5.xlarge"], "maxSize": 2}]))

    checkpoint = settings.config.groups[0].checkpoint

    assert (checkpoint.command, checkpoint.directory, checkpoint.timeout_seconds) == (None, "/scratch/checkpoints", 90)


@pytest.mark.parametrize(
    "checkpoint, key",
    [
        ({"command": []}, "checkpoint.command"),
        ({"command": ["save", "line\nbreak"]}, "checkpoint.command[1]"),
        ({"command": ["x" * 200, "y" * 200, "z" * 200]}, "checkpoint.command"),
        ({"directory": "relative/dir"}, "checkpoint.directory"),
        ({"timeoutSeconds": 600}, "checkpoint.timeoutSeconds"),
        ({"shell": "save.sh"}, "checkpoint.shell"),
    ],
)
def test_invalid_checkpoint_settings_are_refused_naming_the_key(checkpoint, key):
    values = minimal_config(groups=[{"name": "train", "instanceTypes": ["g5.xlarge"], "maxSize": 2, "checkpoint": checkpoint}])

    with pytest.raises(ConfigError) as error:
        settings_for(values)

    assert [problem_key for problem_key, _ in error.value.problems] == [f"gpu-cloud:groups[0].{key}"]


def test_persistent_volume_group_runs_on_demand_unless_told_otherwise():
    group = settings_for(minimal_config(groups=[NOTEBOOK])).config.groups[0]

    assert (group.spot_percent, group.uses_spot) == (0, False)


def test_persistent_volume_group_on_spot_is_refused_naming_spot_percent():
    with pytest.raises(ConfigError) as error:
        settings_for(minimal_config(groups=[{**NOTEBOOK, "spotPercent": 100}]))

    [(key, reason)] = error.value.problems
    assert key == "gpu-cloud:groups[0]"
    assert "spotPercent 100" in reason and "capacity rebalancing" in reason


def test_persistent_volume_group_with_an_on_demand_base_may_keep_spot_percent():
    group = settings_for(minimal_config(groups=[{**NOTEBOOK, "spotPercent": 100, "onDemandBaseCapacity": 1}])).config.groups[0]

    assert not group.uses_spot


def test_component_refuses_spot_for_a_node_that_attaches_a_persistent_volume():
    with pytest.raises(ValueError, match="must run on-demand"):
        group_args(max_size=1, persistent_volume_attach_to="gpu-cloud-demo-notebook")

    assert group_args(max_size=1, spot_percent=0, persistent_volume_attach_to="gpu-cloud-demo-notebook")


@pytest.mark.parametrize(
    "instance_type, gpus, fabric",
    [("p5.48xlarge", 8, True), ("p4d.24xlarge", 8, True), ("p5.4xlarge", 1, False), ("g6e.48xlarge", 8, False)],
)
def test_nvswitch_types_expect_the_fabric_registered(instance_type, gpus, fabric):
    args = group_args(instance_types=[facts(instance_type, gpus)])

    node = node_config_document(node_bootstrap(args, facts(instance_type, gpus)))

    assert node["fabric_expected"] is fabric
    assert node_shape(facts(instance_type, gpus), False)[-1] is fabric


def test_node_role_may_heartbeat_its_launch_action_where_it_may_complete_it():
    document = instance_role_policy(
        partition="aws", region="us-east-1", account_id="123456789012", project="demo",
        key_arn="arn:aws:kms:us-east-1:123456789012:key/k", bucket=None, read_prefixes=[], write_prefixes=[],
        group_names=["gpu-cloud-demo-workers"],
    )

    [lifecycle] = [statement for statement in document["Statement"] if "autoscaling:CompleteLifecycleAction" in statement["Action"]]
    assert "autoscaling:RecordLifecycleActionHeartbeat" in lifecycle["Action"]
    assert lifecycle["Resource"] == ["arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:*:autoScalingGroupName/gpu-cloud-demo-workers"]
