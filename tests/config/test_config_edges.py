"""Edges of the config rules that sampled mutation testing found unguarded (tests/mutation): each
case sits exactly on a rule's boundary, or checks a default the rules build on."""

from __future__ import annotations

import pytest

from support import minimal_config, settings_for
from gpucloud.config import ConfigError

CLOUDWATCH_LOGS_RETENTION_DAYS = [
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
]
"""PutRetentionPolicy `retentionInDays`, CloudWatch Logs API reference (read 2026-11-24), written out
here apart from the module's own list."""


def group(**changes):
    return {"name": "workers", "instanceTypes": ["g5.xlarge"], "minSize": 0, "maxSize": 2, **changes}


def refused(values) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as error:
        settings_for(values)
    return error.value.problems


@pytest.mark.parametrize("days", CLOUDWATCH_LOGS_RETENTION_DAYS)
def test_every_retention_cloudwatch_logs_takes_is_accepted_and_its_neighbours_are_not(days):
    assert settings_for(minimal_config(network={"flowLogsRetentionDays": days})).config.network.flow_logs_retention_days == days
    for neighbour in (days - 1, days + 1):
        if neighbour not in CLOUDWATCH_LOGS_RETENTION_DAYS:
            [(key, _)] = refused(minimal_config(network={"flowLogsRetentionDays": neighbour}))
            assert key == "gpu-cloud:network.flowLogsRetentionDays"


def test_the_smallest_vpc_the_subnet_plan_takes_is_a_slash_22():
    assert settings_for(minimal_config(network={"cidr": "10.0.0.0/22"})).config.network.cidr == "10.0.0.0/22"


@pytest.mark.parametrize("data", [
    {"bucket": "demo-data", "readPrefixes": ["datasets/"]},
    {"bucket": "demo-data", "writePrefixes": ["runs/"]},
])
def test_read_or_write_prefixes_alone_grant_access(data):
    assert settings_for(minimal_config(data=data)).config.data.bucket == "demo-data"


def test_a_persistent_volume_group_defaults_to_on_demand_and_others_to_spot():
    config = settings_for(minimal_config(groups=[group(name="home", maxSize=1, persistentVolumeGiB=100), group()])).config
    home, workers = config.groups
    assert (home.spot_percent, home.uses_spot) == (0, False)
    assert (workers.spot_percent, workers.uses_spot) == (100, True)


def test_an_on_demand_base_covering_max_size_uses_no_spot_and_may_equal_it():
    [workers] = settings_for(minimal_config(groups=[group(onDemandBaseCapacity=2)])).config.groups
    assert workers.uses_spot is False
    assert refused(minimal_config(groups=[group(onDemandBaseCapacity=3)]))[0][0] == "gpu-cloud:groups[0]"


def test_a_recurrence_of_255_characters_is_the_longest_auto_scaling_takes():
    def with_recurrence(recurrence):
        return minimal_config(groups=[group(scaling={"schedules": [
            {"name": "morning", "recurrence": recurrence, "desiredCapacity": 1}]})])

    longest = "0 8 * * " + ",".join(["1"] * 124)
    assert len(longest) == 255
    settings_for(with_recurrence(longest))
    [(_, reason)] = refused(with_recurrence("0" + longest))
    assert "256 characters long" in reason


def test_a_name_base_of_40_characters_is_the_longest():
    project = "p" * 24
    settings_for(minimal_config(project=project), stack="s" * 15)
    [(key, _)] = refused_stack(minimal_config(project=project), "s" * 16)
    assert key == "stack name"


def refused_stack(values, stack):
    with pytest.raises(ConfigError) as error:
        settings_for(values, stack=stack)
    return error.value.problems


def test_group_and_scaling_defaults():
    values = minimal_config(groups=[group(scaling={
        "stepScaling": [{"metricName": "Q", "namespace": "N", "threshold": 1, "scaleOutBy": 1}],
        "targetTracking": {"metricName": "Q", "namespace": "N", "targetValue": 5},
        "gpuIdleScaleIn": {"utilizationPercent": 5},
    }, idleShutdown={})])
    [workers] = settings_for(values).config.groups
    assert (workers.root_volume_gib, workers.spot_percent, workers.checkpoint.timeout_seconds) == (100, 100, 90)
    assert workers.scaling.target_tracking.disable_scale_in is False
    assert workers.scaling.step_scaling[0].cooldown_seconds == 300
    assert workers.scaling.gpu_idle_scale_in.minutes == 60 and workers.idle_shutdown.minutes == 60


def test_fifty_groups_are_the_most_a_stack_takes():
    many = [group(name=f"g{index:02d}") for index in range(51)]
    settings_for(minimal_config(groups=many[:50]))
    assert refused(minimal_config(groups=many))[0][0] == "gpu-cloud:groups"


@pytest.mark.parametrize("bucket", ["my..bucket", "192.168.5.4"])
def test_bucket_names_s3_refuses_are_refused(bucket):
    [(key, _)] = refused(minimal_config(data={"bucket": bucket, "readPrefixes": ["datasets/"]}))
    assert key == "gpu-cloud:data.bucket"


def test_prefixes_are_accepted_up_to_exactly_the_role_policy_limit_and_refused_one_character_past_it():
    """The node role's inline policies may be 10,240 characters together (IAM quotas); the config
    counts them for the stack's own name base, region and groups."""
    from gpucloud.config import StackConfig
    from gpucloud.config.access import DataConfig
    from gpucloud.config.node_role import node_role_policies_size

    stack = StackConfig.model_validate(minimal_config(), by_alias=True)

    def data(count: int, read_length: int, write_length: int) -> dict:
        writes = [f"{index:02d}" + "w" * 118 + "/" for index in range(count)]
        return {"bucket": "demo-data", "readPrefixes": ["r" * read_length + "/"],
                "writePrefixes": writes + ["x" * write_length + "/"]}

    def size(count: int, read_length: int, write_length: int) -> int:
        values = data(count, read_length, write_length)
        prefixes = DataConfig.model_construct(
            bucket=values["bucket"], read_prefixes=values["readPrefixes"], write_prefixes=values["writePrefixes"])
        return node_role_policies_size(stack.model_copy(update={"data": prefixes}), "demo", "us-east-1")

    count = max(count for count in range(1, 40) if size(count, 1, 1) < 10240 - 20)
    sizes = {(count, read, write): size(count, read, write) for read in range(1, 199) for write in range(1, 4)}
    at_limit = next(key for key, value in sizes.items() if value == 10240)
    past_limit = next(key for key, value in sizes.items() if value == 10241)

    settings_for(minimal_config(data=data(*at_limit)))
    [(key, reason)] = refused(minimal_config(data=data(*past_limit)))
    assert key == "gpu-cloud:data" and "10241 characters, above the 10240 IAM allows a role" in reason


@pytest.mark.parametrize("partition", ["aws", "aws-cn", "aws-us-gov"])
@pytest.mark.parametrize("key_id", ["1234abcd-12ab-34cd-56ef-1234567890ab", "mrk-1234abcd12ab34cd56ef1234567890ab"])
def test_the_count_is_never_below_the_policies_of_any_account(partition, key_id):
    """The config knows neither the account, its partition nor the key and workspace ids: it counts
    each at its longest, so no account's real policies are longer."""
    import json
    import re

    from gpucloud.config.node_role import node_role_policies_size
    from gpucloud.documents import instance_role_policy, prometheus_remote_write_policy
    from gpucloud.naming import autoscaling_group_name

    settings = settings_for(minimal_config(groups=[group(name="trainers"), group(name="notebooks")],
                                           monitoring={"prometheus": {"enabled": True}}))
    config, base, region, account = settings.config, settings.name_base, settings.region, "123456789012"
    real = [
        instance_role_policy(
            partition=partition, region=region, account_id=account, project=base,
            key_arn=f"arn:{partition}:kms:{region}:{account}:key/{key_id}", bucket=config.data.bucket,
            read_prefixes=config.data.read_prefixes, write_prefixes=config.data.write_prefixes, session_manager=True,
            group_names=[autoscaling_group_name(base, name) for name in ("trainers", "notebooks")]),
        prometheus_remote_write_policy(f"arn:{partition}:aps:{region}:{account}:workspace/ws-0123abcd-0123-4567-89ab-0123456789ab"),
    ]
    held = sum(len(re.sub(r"\s", "", json.dumps(document))) for document in real)
    arns = sum(json.dumps(document).count(f"arn:{partition}:") for document in real)
    assert node_role_policies_size(config, base, region) == held + (len("aws-us-gov") - len(partition)) * arns


def test_health_defaults_replace_faulty_nodes_behind_a_breaker_of_two_an_hour():
    [workers] = settings_for(minimal_config(groups=[group()])).config.groups

    health = workers.health
    assert (health.interval_seconds, health.throttle_minutes, health.max_replacements_per_hour, health.replace) == (
        60, 10, 2, True)


@pytest.mark.parametrize(
    "health, field",
    [
        ({"intervalSeconds": 5}, "intervalSeconds"),
        ({"intervalSeconds": 3601}, "intervalSeconds"),
        ({"throttleMinutes": 0}, "throttleMinutes"),
        ({"maxReplacementsPerHour": 0}, "maxReplacementsPerHour"),
        ({"maxReplacementsPerHour": 101}, "maxReplacementsPerHour"),
        ({"replace": "sometimes"}, "replace"),
        ({"replaceNodes": False}, "replaceNodes"),
    ],
)
def test_bad_health_settings_are_refused_naming_the_field(health, field):
    [(key, _)] = refused(minimal_config(groups=[group(health=health)]))

    assert key == f"gpu-cloud:groups[0].health.{field}"

