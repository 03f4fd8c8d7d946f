"""Property-based tests of the stack config models: every generated config either validates into
values AWS accepts verbatim, or is refused with a ConfigError naming the offending key. Never
another exception."""

from __future__ import annotations

import copy
import math
import pathlib
import tempfile
from typing import Any

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

from config_strategies import (
    EDGES,
    FIELDS,
    HOSTILE_STRINGS,
    IAM_ROLE_POLICY_LIMIT,
    MODEL_SETTINGS,
    RICH_CONFIG,
    get,
    key_is_related,
    Mutation,
    mutated_stacks,
    pattern_of,
    region_is_valid,
    render_key,
    role_policy_size,
    stack_values,
    surely_invalid_string,
    surely_invalid_text,
    unsafe_values,
    walk,
)
from gpucloud.config import ConfigError, load_stack_file, parse_stack_config
from gpucloud.plan import plan_program
from gpucloud.program import build
from support import STACKS, minimal_config, settings_for


def check_parse_outcome(values: dict[str, Any], region: Any, mutations: list[Mutation]) -> str:
    """Validated into AWS-safe values, or refused naming the mutated keys and nothing else."""
    try:
        settings = parse_stack_config(values, stack="prop", source="stacks/Pulumi.prop.yaml", region=region)
    except ConfigError as error:
        assert error.problems, "a ConfigError must list its problems"
        message = str(error)
        assert message.count("\n") == len(error.problems) - 1, f"one line per problem: {message!r}"
        for key, reason in error.problems:
            assert key.isprintable() and reason.isprintable(), (key, reason)
            if key == "aws:region":
                assert not region_is_valid(region), (key, reason)
                continue
            assert key.startswith("gpu-cloud:"), (key, reason)
            assert any(key_is_related(key, change.path) for change in mutations), (
                f"{key}: {reason} names no mutated key"
            )
        for change in mutations:
            if change.surely_invalid:
                assert any(key_is_related(key, change.path) for key, _ in error.problems), (
                    f"{render_key(change.path)} ({change.description}) is invalid but not named: {error.problems}"
                )
        return "refused"
    surely_invalid = [change for change in mutations if change.surely_invalid]
    assert not surely_invalid, f"accepted invalid values: {surely_invalid}"
    assert region_is_valid(region), f"accepted region {region!r}"
    assert unsafe_values(settings.config) == []
    return "accepted"


def check_mutated(values: dict[str, Any], region: Any, mutations: list[Mutation]) -> None:
    for change in mutations:
        note(f"mutation at {render_key(change.path)}: {change.description} (surely invalid: {change.surely_invalid})")
    note(f"region: {region!r}")
    event(f"mutations: {len(mutations)}")
    event(check_parse_outcome(values, region, mutations))


@settings(MODEL_SETTINGS, max_examples=150)
@given(mutated_stacks(stack_values()))
def test_generated_config_validates_or_names_the_offending_key(case):
    """150 examples, not 300: drawing a whole stack of up to three groups costs some 60 ms, so
    300 made this one test a tenth of the suite's CPU time."""
    check_mutated(*case)


@MODEL_SETTINGS
@given(mutated_stacks(st.builds(copy.deepcopy, st.just(RICH_CONFIG)), most=1))
def test_every_key_of_a_full_config_validates_or_names_the_offending_key(case):
    check_mutated(*case)


def test_every_edge_value_in_every_string_key_is_refused_or_aws_safe():
    """Exhaustive where the generators are thin: each edge and hostile string in each key of its kind."""
    cases = 0
    for path, _ in walk(RICH_CONFIG):
        kind = FIELDS[pattern_of(path)].kind
        if kind in EDGES:
            for text in EDGES[kind] + HOSTILE_STRINGS:
                values = copy.deepcopy(RICH_CONFIG)
                get(values, path[:-1])[path[-1]] = text
                check_parse_outcome(values, "us-east-1", [Mutation(path, f"{text!r}", surely_invalid_text(kind, text))])
                cases += 1
        if kind == "dimensions":
            for name in EDGES["metric"] + HOSTILE_STRINGS:
                values = copy.deepcopy(RICH_CONFIG)
                get(values, path)[name] = "value"
                check_parse_outcome(values, "us-east-1", [Mutation((*path, name), f"{name!r}", surely_invalid_string(name))])
                cases += 1
    assert cases > 1000


EXAMPLE_STACK_FILE = (STACKS / "Pulumi.notebooks.yaml").read_bytes()
YAML_NOISE = st.sampled_from([b":", b"- ", b"\n", b"  ", b"'", b'"', b"[", b"{", b"#", b"&a", b"*a", b"!!python/object:os.system", b"\t", b"\xff", b"\x00", b"gpu-cloud:project: x\n  "])


@st.composite
def edited_stack_files(draw) -> bytes:
    """An example stack file with a few bytes inserted, deleted or replaced anywhere: broken YAML,
    duplicate or misplaced keys, wrong types, bad encodings, and sometimes still a valid stack."""
    content = bytearray(EXAMPLE_STACK_FILE)
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(content)))
        edit = draw(st.sampled_from(["insert", "delete", "replace"]))
        noise = draw(st.one_of(YAML_NOISE, st.binary(min_size=1, max_size=3)))
        if edit == "insert":
            content[position:position] = noise
        elif edit == "delete":
            del content[position : position + draw(st.integers(1, 8))]
        else:
            content[position : position + len(noise)] = noise
    return bytes(content)


@settings(MODEL_SETTINGS, max_examples=200)
@given(edited_stack_files())
def test_edited_stack_file_loads_or_is_refused_on_one_line_per_problem(content):
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "Pulumi.edited.yaml"
        path.write_bytes(content)
        try:
            settings = load_stack_file(path)
        except ConfigError as error:
            event("refused")
            message = str(error)
            assert message.count("\n") == len(error.problems) - 1, message
            assert all(line.startswith(f"stack 'edited' ({path}): ") for line in message.splitlines())
            return
    event("loaded")
    assert unsafe_values(settings.config) == []


@settings(MODEL_SETTINGS, max_examples=50)
@given(stack_values())
def test_generated_valid_config_validates_into_aws_safe_values(values):
    settings = settings_for(values)
    assert unsafe_values(settings.config) == []
    for group_values, group_config in zip(values["groups"], settings.config.groups):
        assert group_config.name == group_values["name"]
        assert list(group_config.instance_types) == group_values["instanceTypes"]


# ---------------------------------------------------------------------------------------------
# Engine: valid configs with hostile-but-valid strings, planned offline on moto.



# ---------------------------------------------------------------------------------------------
# Regressions: what the properties found, pinned as plain examples.


def refused(values: dict[str, Any], region: Any = "us-east-1") -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as error:
        parse_stack_config(values, stack="demo", source="stacks/Pulumi.demo.yaml", region=region)
    return error.value.problems


def with_scaling(**scaling: Any) -> dict[str, Any]:
    return minimal_config(groups=[{"name": "workers", "instanceTypes": ["g5.xlarge"], "maxSize": 2, "scaling": scaling}])


def tracking(**changes: Any) -> dict[str, Any]:
    return {"metricName": "Backlog", "namespace": "Jobs", "targetValue": 10, **changes}


def step(**changes: Any) -> dict[str, Any]:
    return {"metricName": "Backlog", "namespace": "Jobs", "threshold": 100, "scaleOutBy": 1, **changes}


def night(**changes: Any) -> dict[str, Any]:
    return {"name": "night", "recurrence": "0 20 * * *", "maxSize": 0, **changes}


def test_full_config_is_valid_and_aws_safe():
    assert unsafe_values(settings_for(copy.deepcopy(RICH_CONFIG)).config) == []


@pytest.mark.parametrize("region", [None, 1, ["us-east-1"]])
def test_region_that_is_not_text_is_a_config_error(region):
    assert refused(minimal_config(), region=region) == [("aws:region", f"{region!r} is not an AWS region")]


def test_owner_with_a_character_tags_refuse_is_refused():
    [(key, reason)] = refused(minimal_config(owner="ops%gpu@example.com"))
    assert key == "gpu-cloud:owner" and "Owner tag" in reason


@pytest.mark.parametrize("unknown", ["a\nb", "", "\x1f", "max size", "x'y"])
def test_unknown_key_is_named_on_one_line_whatever_its_spelling(unknown):
    [(key, reason)] = refused(minimal_config(budget={"monthlyUsd": 10, unknown: 1}))
    assert key == f"gpu-cloud:budget[{unknown!r}]" and "not a known key" in reason
    assert key.isprintable()


@pytest.mark.parametrize(
    "scaling, key",
    [
        ({"targetTracking": tracking(targetValue=math.inf)}, "targetTracking.targetValue"),
        ({"stepScaling": [step(threshold=math.nan)]}, "stepScaling[0].threshold"),
        ({"stepScaling": [step(threshold=-math.inf)]}, "stepScaling[0].threshold"),
    ],
)
def test_infinite_or_nan_numbers_are_refused(scaling, key):
    assert refused(with_scaling(**scaling)) == [(f"gpu-cloud:groups[0].scaling.{key}", "Input should be a finite number")]


@pytest.mark.parametrize(
    "dimensions, key, reason",
    [
        ({"x" * 300: "v"}, "dimensions." + "x" * 300, "is not allowed"),
        ({"a\nb": "v"}, "dimensions['a\\nb']", "is not allowed"),
        ({"": "v"}, "dimensions['']", "is not allowed"),
        ({":Queue": "v"}, "dimensions[':Queue']", "not starting with ':'"),
        ({"   ": "v"}, "dimensions['   ']", "not only spaces"),
        ({"Queue": "   "}, "dimensions.Queue", "not only spaces"),
    ],
)
def test_dimension_names_and_values_cloudwatch_refuses_are_refused(dimensions, key, reason):
    [(problem_key, problem)] = refused(with_scaling(targetTracking=tracking(dimensions=dimensions)))
    assert problem_key == f"gpu-cloud:groups[0].scaling.targetTracking.{key}" and reason in problem


def test_namespace_starting_with_a_colon_is_refused():
    [(key, reason)] = refused(with_scaling(stepScaling=[step(namespace=":Jobs")]))
    assert key == "gpu-cloud:groups[0].scaling.stepScaling[0].namespace" and "not starting with ':'" in reason


@pytest.mark.parametrize("time_zone", ["localtime", "Factory", "posixrules"])
def test_time_zone_that_depends_on_the_machine_is_refused(time_zone):
    [(key, reason)] = refused(with_scaling(schedules=[night(timeZone=time_zone)]))
    assert key == "gpu-cloud:groups[0].scaling.schedules[0].timeZone" and "IANA time zone" in reason


def test_recurrence_longer_than_auto_scaling_takes_is_refused():
    recurrence = "0 0 * * " + ",".join(["1"] * 130)
    [(key, reason)] = refused(with_scaling(schedules=[night(recurrence=recurrence)]))
    assert key == "gpu-cloud:groups[0].scaling.schedules[0].recurrence" and "at most 255" in reason


def test_cidr_with_an_ipv6_zone_index_is_refused():
    [(key, reason)] = refused(minimal_config(access={"jupyterCidrs": ["fe80::%eth0/64"]}))
    assert key == "gpu-cloud:access.jupyterCidrs[0]" and "zone index" in reason


@pytest.mark.parametrize("bucket", ["my..data", "192.168.1.10", "xn--data", "data-s3alias"])
def test_bucket_name_s3_refuses_is_refused(bucket):
    [(key, reason)] = refused(minimal_config(data={"bucket": bucket, "readPrefixes": ["datasets/"]}))
    assert key == "gpu-cloud:data.bucket" and "not an S3 bucket name" in reason


def test_prefixes_beyond_the_role_policy_limit_are_refused():
    write_prefixes = [f"runs/{index:02d}/" + "p" * 150 + "/" for index in range(30)]
    [(key, reason)] = refused(minimal_config(data={"bucket": "demo-data", "writePrefixes": write_prefixes}))
    assert key == "gpu-cloud:data" and "10240" in reason
    fitting = settings_for(minimal_config(data={"bucket": "demo-data", "writePrefixes": write_prefixes[:5]}))
    assert role_policy_size(fitting.config) <= IAM_ROLE_POLICY_LIMIT


def test_group_whose_on_demand_base_covers_max_size_plans_without_violation():
    """Found by the engine property: such a group asked for spot it could never run, without rebalancing."""
    group_values = {"name": "workers", "instanceTypes": ["g5.xlarge"], "maxSize": 2, "onDemandBaseCapacity": 2}
    settings = settings_for(minimal_config(groups=[group_values]))
    plan = plan_program(lambda: build(settings), stack="demo")
    assert [violation.policy_name for violation in plan.policy_violations if violation.mandatory] == []
