"""A misspelt namespace or key is named with the key it most likely meant, not only as a missing one."""

from __future__ import annotations

import pytest
import yaml

from gpucloud.config import ConfigError, load_stack_file, parse_stack_config
from support import minimal_config


def write_stack(tmp_path, config: dict) -> str:
    path = tmp_path / "Pulumi.demo.yaml"
    path.write_text(yaml.safe_dump({"config": {"aws:region": "us-east-1", **config}}))
    return str(path)


@pytest.mark.parametrize("namespace", ["gpucloud", "gpu_cloud", "gpu-clod", "GPU-Cloud"])
def test_a_misspelt_namespace_is_named_with_the_one_it_meant(tmp_path, namespace):
    config = {f"gpu-cloud:{key}": value for key, value in minimal_config().items()}
    config[f"{namespace}:project"] = config.pop("gpu-cloud:project")
    with pytest.raises(ConfigError) as error:
        load_stack_file(write_stack(tmp_path, config))
    assert str(error.value) == (f"stack 'demo' ({tmp_path}/Pulumi.demo.yaml): {namespace}:project: is not in the "
                                "gpu-cloud namespace: did you mean 'gpu-cloud:project'?")


def test_other_namespaces_are_left_to_their_owners(tmp_path):
    config = {f"gpu-cloud:{key}": value for key, value in minimal_config().items()}
    config |= {"aws:profile": "research", "myteam:owner": "someone"}
    assert load_stack_file(write_stack(tmp_path, config)).config.project == minimal_config()["project"]


@pytest.mark.parametrize("change, key, suggestion", [
    (lambda values: values.update(costCentre=values.pop("costCenter")), "gpu-cloud:costCentre", "costCenter"),
    (lambda values: values["groups"][0].update(maxSiz=values["groups"][0].pop("maxSize")),
     "gpu-cloud:groups[0].maxSiz", "maxSize"),
    (lambda values: values["budget"].update(monthlyUSD=values["budget"].pop("monthlyUsd")),
     "gpu-cloud:budget.monthlyUSD", "monthlyUsd"),
])
def test_an_unknown_key_names_the_closest_known_key(change, key, suggestion):
    values = minimal_config()
    change(values)
    with pytest.raises(ConfigError) as error:
        parse_stack_config(values, stack="demo", source="stacks/Pulumi.demo.yaml", region="us-east-1")
    assert (key, f"is not a known key (did you mean '{suggestion}'?)") in error.value.problems


@pytest.mark.parametrize("key", ["efa", "EFA"])
def test_an_efa_key_in_a_group_points_at_multi_node(key):
    values = minimal_config()
    values["groups"][0][key] = True
    with pytest.raises(ConfigError) as error:
        parse_stack_config(values, stack="demo", source="stacks/Pulumi.demo.yaml", region="us-east-1")
    [(path, message)] = error.value.problems
    assert path == f"gpu-cloud:groups[0].{key}"
    assert message.startswith("is not a known key (EFA comes with 'multiNode: true'"), message


def test_an_unknown_key_like_no_known_one_points_at_the_reference():
    values = minimal_config() | {"zzzzzz": 1}
    with pytest.raises(ConfigError) as error:
        parse_stack_config(values, stack="demo", source="stacks/Pulumi.demo.yaml", region="us-east-1")
    assert ("gpu-cloud:zzzzzz", "is not a known key (check its spelling against the config reference)") in error.value.problems
