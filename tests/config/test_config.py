"""Config validation: every rule fails with a message naming the stack, the key and the reason."""

from __future__ import annotations

import pytest

from support import STACKS, minimal_config, settings_for
from gpucloud.config import ConfigError, load_stack_file


def assert_refused(values, key: str, reason: str) -> None:
    with pytest.raises(ConfigError) as error:
        settings_for(values)
    message = str(error.value)
    assert "stack 'demo' (stacks/Pulumi.demo.yaml)" in message
    assert any(named == key and reason in why for named, why in error.value.problems), error.value.problems


def group(**changes):
    return {"name": "workers", "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 2, **changes}


@pytest.mark.parametrize("missing", ["project", "owner", "costCenter", "budget", "groups"])
def test_required_keys_are_named_when_missing(missing):
    values = minimal_config()
    del values[missing]
    assert_refused(values, f"gpu-cloud:{missing}", "Field required")


@pytest.mark.parametrize("cidr", ["0.0.0.0/0", "::/0"])
@pytest.mark.parametrize("key", ["sshCidrs", "jupyterCidrs", "tensorboardCidrs"])
def test_world_open_cidrs_are_refused(key, cidr):
    assert_refused(minimal_config(access={key: [cidr]}), f"gpu-cloud:access.{key}[0]", "whole internet")


def test_cidr_with_host_bits_is_refused():
    assert_refused(minimal_config(access={"sshCidrs": ["10.0.0.1/24"]}), "gpu-cloud:access.sshCidrs[0]", "host bits")


def test_unknown_key_is_named():
    assert_refused(minimal_config(groups=[group(maxsize=3)]), "gpu-cloud:groups[0].maxsize", "not a known key")


def test_group_list_must_not_be_empty():
    assert_refused(minimal_config(groups=[]), "gpu-cloud:groups", "at least 1 item")


def test_group_names_are_unique():
    assert_refused(minimal_config(groups=[group(), group()]), "gpu-cloud:groups", "must be unique: workers")


def test_min_above_max_is_refused():
    assert_refused(minimal_config(groups=[group(minSize=3, maxSize=2)]), "gpu-cloud:groups[0]", "minSize 3 is above maxSize 2")


def test_desired_outside_bounds_is_refused():
    assert_refused(
        minimal_config(groups=[group(desiredCapacity=5)]), "gpu-cloud:groups[0]", "desiredCapacity 5 is outside"
    )


def test_on_demand_base_above_max_is_refused():
    assert_refused(
        minimal_config(groups=[group(onDemandBaseCapacity=3)]), "gpu-cloud:groups[0]", "onDemandBaseCapacity 3"
    )


def test_spot_percent_is_a_percentage():
    assert_refused(minimal_config(groups=[group(spotPercent=120)]), "gpu-cloud:groups[0].spotPercent", "less than or equal to 100")


def test_persistent_volume_needs_single_instance_group():
    assert_refused(
        minimal_config(groups=[group(persistentVolumeGiB=100, maxSize=2)]),
        "gpu-cloud:groups[0]",
        "persistentVolumeGiB needs maxSize: 1",
    )


def test_persistent_volume_cannot_be_multi_node():
    assert_refused(
        minimal_config(groups=[group(persistentVolumeGiB=100, maxSize=1, multiNode=True, instanceTypes=["p5.48xlarge"])]),
        "gpu-cloud:groups[0]",
        "persistentVolumeGiB cannot be combined with multiNode",
    )


def test_idle_shutdown_needs_a_zero_minimum():
    assert_refused(
        minimal_config(groups=[group(minSize=1, idleShutdown={})]),
        "gpu-cloud:groups[0]",
        "idleShutdown scales the group to zero, which needs minSize: 0 (got 1)",
    )


def test_duplicate_subnets_are_refused():
    assert_refused(
        minimal_config(network={"subnetIds": ["subnet-0123456789abcdef0", "subnet-0123456789abcdef0"]}),
        "gpu-cloud:network.subnetIds",
        "lists a subnet twice",
    )


@pytest.mark.parametrize(
    "schedule, reason",
    [
        ({}, "sets none of minSize, maxSize, desiredCapacity"),
        ({"minSize": 2, "maxSize": 1}, "minSize 2 is above maxSize 1"),
        ({"minSize": 1, "desiredCapacity": 0}, "desiredCapacity is outside minSize..maxSize"),
        ({"maxSize": 1, "desiredCapacity": 2}, "desiredCapacity is outside minSize..maxSize"),
    ],
)
def test_schedule_sizes_must_be_set_and_ordered(schedule, reason):
    scaling = {"schedules": [{"name": "night", "recurrence": "0 20 * * *", **schedule}]}
    assert_refused(minimal_config(groups=[group(scaling=scaling)]), "gpu-cloud:groups[0].scaling.schedules[0]", reason)


def test_duplicate_instance_types_are_refused():
    assert_refused(
        minimal_config(groups=[group(instanceTypes=["g5.xlarge", "g5.xlarge"])]),
        "gpu-cloud:groups[0].instanceTypes",
        "twice",
    )


@pytest.mark.parametrize(
    "prefix, reason",
    [
        ("data/../etc/", "has an empty, '.' or '..' path segment"),
        ("x/./y", "has an empty, '.' or '..' path segment"),
        ("../etc/", "may hold only letters, digits"),
        ("a//b/", "has an empty, '.' or '..' path segment"),
        ("data/*", "may hold only letters, digits"),
        ("a b/", "may hold only letters, digits"),
        ("/abs/", "must start with a letter or digit"),
        ("quote'/", "may hold only letters, digits"),
    ],
)
def test_unsafe_prefixes_are_refused(prefix, reason):
    values = minimal_config(data={"bucket": "demo-data", "readPrefixes": [prefix]})
    assert_refused(values, "gpu-cloud:data.readPrefixes[0]", reason)


def test_bucket_without_prefixes_is_refused():
    assert_refused(minimal_config(data={"bucket": "demo-data"}), "gpu-cloud:data", "grants no readPrefixes")


def test_bad_cron_is_refused():
    scaling = {"schedules": [{"name": "night", "recurrence": "every night", "desiredCapacity": 0}]}
    assert_refused(
        minimal_config(groups=[group(scaling=scaling)]),
        "gpu-cloud:groups[0].scaling.schedules[0].recurrence",
        "5-field cron",
    )


def test_unknown_time_zone_is_refused():
    scaling = {"schedules": [{"name": "night", "recurrence": "0 20 * * *", "desiredCapacity": 0, "timeZone": "Mars/Olympus"}]}
    assert_refused(
        minimal_config(groups=[group(scaling=scaling)]),
        "gpu-cloud:groups[0].scaling.schedules[0].timeZone",
        "IANA time zone",
    )


def test_schedule_above_group_max_is_refused():
    scaling = {"schedules": [{"name": "burst", "recurrence": "0 8 * * *", "maxSize": 10}]}
    assert_refused(minimal_config(groups=[group(scaling=scaling)]), "gpu-cloud:groups[0]", "above the group's maxSize 2")


def test_owner_must_be_an_email():
    assert_refused(minimal_config(owner="bob"), "gpu-cloud:owner", "e-mail")


def test_project_name_shape_is_explained():
    assert_refused(minimal_config(project="My Project"), "gpu-cloud:project", "lowercase letters")


def test_example_stack_files_parse_with_camel_case_keys():
    settings = load_stack_file(STACKS / "Pulumi.vision-train.yaml")
    trainers = settings.config.groups[0]
    assert settings.stack == "vision-train" and settings.region == "us-east-1"
    assert trainers.multi_node and trainers.data_volume_gib == 2000 and trainers.on_demand_base_capacity == 1
    assert settings.config.tags == {
        "Project": "vision-train",
        "Owner": "vision-team@example.com",
        "CostCenter": "cc-ml-research",
        "ManagedBy": "gpu-cloud",
    }


def test_stack_file_errors_name_the_file(tmp_path):
    path = tmp_path / "Pulumi.broken.yaml"
    path.write_text("config:\n  aws:region: us-east-1\n  gpu-cloud:project: broken\n")
    with pytest.raises(ConfigError) as error:
        load_stack_file(path)
    assert f"stack 'broken' ({path})" in str(error.value)
    assert "gpu-cloud:owner: Field required" in str(error.value)


def test_secret_values_are_refused(tmp_path):
    path = tmp_path / "Pulumi.secret.yaml"
    path.write_text("config:\n  aws:region: us-east-1\n  gpu-cloud:owner:\n    secure: AAAB\n")
    with pytest.raises(ConfigError, match="gpu-cloud:owner: is a secret"):
        load_stack_file(path)


def test_ssh_needs_session_manager_off():
    assert_refused(
        minimal_config(access={"sshCidrs": ["10.0.0.0/16"]}), "gpu-cloud:access", "set ssm: false to use SSH instead"
    )


@pytest.mark.parametrize(
    "content, reason",
    [
        (b"config:\n  aws:region: us-east-1\n  gpu-cloud:project: a\n  gpu-cloud:project: b\n", "key 'gpu-cloud:project' appears twice in one mapping at line 4"),
        (b"config:\n  aws:region: [us-east-1\n", "is not valid YAML: expected ',' or ']'"),
        (b"config:\n  gpu-cloud:project: \xff\n", "is not UTF-8 text (byte 29"),
        (b"config: [1, 2]\n", "the file needs a top-level 'config:' map"),
    ],
    ids=["duplicate key", "syntax error", "not utf-8", "config not a map"],
)
def test_unreadable_stack_files_are_refused_on_one_line_naming_the_file(tmp_path, content, reason):
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_bytes(content)

    with pytest.raises(ConfigError) as error:
        load_stack_file(path)

    assert len(error.value.problems) == 1 and "\n" not in str(error.value)
    assert str(error.value).startswith(f"stack 'bad' ({path}): ")
    assert reason in str(error.value)


def test_a_directory_is_not_a_stack_file(tmp_path):
    folder = tmp_path / "Pulumi.folder.yaml"
    folder.mkdir()

    with pytest.raises(ConfigError, match="is a directory, not a stack file"):
        load_stack_file(folder)


def test_a_cidr_listed_twice_is_refused_even_when_spelled_differently():
    assert_refused(
        minimal_config(access={"jupyterCidrs": ["10.0.0.0/8", "10.0.0.0/08"]}),
        "gpu-cloud:access.jupyterCidrs",
        "lists 10.0.0.0/8 twice",
    )


def test_defaults_are_the_secure_and_cheap_choice():
    values = minimal_config()
    del values["account"]
    config = settings_for(values).config
    assert config.account.create_service_linked_role is True, "looked up first: created only where missing"
    assert config.access.ssm is True and config.access.ssh_cidrs == [] and config.access.jupyter_cidrs == []
    network = config.network
    assert network.created and (network.cidr, network.zones, network.nat_gateways, network.egress) == (
        "10.64.0.0/16", 2, "single", "nat")
    assert network.interface_endpoints == [] and network.flow_logs_retention_days == 30
    assert (config.monitoring.temperature_threshold_c, config.monitoring.idle_minutes, config.monitoring.dashboard) == (85, 60, True)
    assert config.backup.retention_days == 7
