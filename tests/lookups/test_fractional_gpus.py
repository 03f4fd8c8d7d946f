"""Fractional GPU types (g6f, gr6f: a slice of an NVIDIA L4) are GPU types.

DescribeInstanceTypes reports them with a GPU name and memory but a GPU count of 0; the instance
sees the slice as one GPU of that model, so the node check expects one. A type with neither a GPU
count nor a GPU name is still refused, in words that say what DescribeInstanceTypes reported.
"""

from __future__ import annotations


import pytest

from gpucloud.config import ConfigError
from gpucloud.lookups.facts import InstanceTypeFacts
from gpucloud.lookups.pulumi_aws import PulumiAwsLookups
from gpucloud.lookups.quotas import ON_DEMAND_QUOTAS, quota_family, quota_needs
from gpucloud.testing import registry, run_program
from gpucloud.testing.handlers import invokes
from support import deploy, minimal_config, node_configs, settings_for

FRACTIONAL = [("g6f.xlarge", 2861), ("gr6f.4xlarge", 11444)]
"""A slice of an L4: an eighth, and half (moto's DescribeInstanceTypes data)."""


def group(*instance_types: str) -> dict:
    return {"name": "workers", "instanceTypes": list(instance_types), "minSize": 0, "maxSize": 2}


def looked_up(account, *names: str) -> dict[str, InstanceTypeFacts | None]:
    """What PulumiAwsLookups makes of the data source's answers, inside a program on the engine."""
    seen = {}

    def program() -> None:
        lookups = PulumiAwsLookups()
        seen.update({name: lookups.instance_type(name) for name in names})

    run_program(program, account)
    return seen


def test_the_engine_passes_moto_gpu_info_through_as_the_data_source_has_it(account):
    for name, memory in FRACTIONAL:
        [described] = account.client("ec2").describe_instance_types(InstanceTypes=[name])["InstanceTypes"]
        [gpu] = described["GpuInfo"]["Gpus"]

        answer = invokes.instance_type(account, {"instanceType": name})

        assert gpu["Count"] == 0 and gpu["Name"] == "L4"
        assert answer["gpuses"] == [{"count": 0, "manufacturer": "NVIDIA", "name": "L4", "memorySize": memory}]
        assert answer["totalGpuMemory"] == described["GpuInfo"]["TotalGpuMemoryInMiB"] == memory


def test_lookups_say_fractional_for_a_slice_of_a_gpu_only(account):
    facts = looked_up(account, *[name for name, _memory in FRACTIONAL], "g6.xlarge")

    for name, memory in FRACTIONAL:
        assert facts[name].fractional_gpu and facts[name].has_gpu and facts[name].gpu_info_listed
        assert (facts[name].gpu_count, facts[name].gpu_model, facts[name].gpu_memory_mib, facts[name].node_gpu_count) == (0, "L4", memory, 1)
        assert facts[name].gpu_report == f"a fraction of one L4 ({memory} MiB of GPU memory, GPU count 0)"
    whole = facts["g6.xlarge"]
    assert not whole.fractional_gpu and whole.has_gpu
    assert (whole.gpu_count, whole.gpu_model, whole.gpu_memory_mib, whole.node_gpu_count) == (1, "L4", 22888, 1)


@pytest.mark.parametrize(("name", "memory"), FRACTIONAL)
def test_a_fractional_type_plans_and_its_node_expects_one_gpu_of_that_model(account, name, memory):
    deployment = deploy(settings_for(minimal_config(groups=[group(name)])), account)

    [node] = node_configs(account)
    assert (node["expected_gpu_count"], node["expected_gpu_model"]) == (1, "L4")
    assert node["nvlink_expected"] is False and node["fabric_expected"] is False
    assert f"gpu-cloud:groups[0].instanceTypes[0]: {name} is fractional: a fraction of one L4 ({memory} MiB of GPU memory, GPU count 0); its node sees one L4 and its gate expects one" in deployment.warnings


def test_fractional_and_whole_types_share_a_group(account):
    deployment = deploy(settings_for(minimal_config(groups=[group("g6f.xlarge", "g6.xlarge")])), account)

    assert [(node["expected_gpu_count"], node["expected_gpu_model"]) for node in node_configs(account)] == [(1, "L4"), (1, "L4")]
    fractional = [warning for warning in deployment.warnings if " is fractional: " in warning]
    assert len(fractional) == 1 and "g6f.xlarge is fractional" in fractional[0]


def refusal(account, *instance_types: str) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as error:
        deploy(settings_for(minimal_config(groups=[group(*instance_types)])), account)
    return error.value.problems


def test_a_type_without_gpu_info_is_refused_saying_so(account):
    assert refusal(account, "m5.large") == [
        ("gpu-cloud:groups[0].instanceTypes[0]", "m5.large has no GPU: DescribeInstanceTypes reports no GpuInfo for it")
    ]


def test_gpu_info_with_neither_count_nor_name_is_refused_saying_so(account, monkeypatch):
    """No such type exists today; the refusal must still say what EC2 answered, not 'no GpuInfo'."""
    answer = registry.INVOKES["aws:ec2/getInstanceType:getInstanceType"]

    def nameless(account, args):
        found = answer(account, args)
        if args["instanceType"] == "m5.large":
            found["gpuses"] = [{"count": 0, "manufacturer": "", "name": "", "memorySize": 0}]
        return found

    monkeypatch.setitem(registry.INVOKES, "aws:ec2/getInstanceType:getInstanceType", nameless)

    assert refusal(account, "m5.large") == [
        ("gpu-cloud:groups[0].instanceTypes[0]",
         "m5.large has no GPU: DescribeInstanceTypes reports GpuInfo with a GPU count of 0 and no GPU name for it")
    ]


def test_fractional_types_count_against_the_g_quota():
    g6f = InstanceTypeFacts("g6f.xlarge", 0, "L4", 2861, False, 0, 1, 1, ("x86_64",), vcpus=4, fractional_gpu=True)
    gr6f = InstanceTypeFacts("gr6f.4xlarge", 0, "L4", 11444, False, 0, 1, 1, ("x86_64",), vcpus=16, fractional_gpu=True)
    settings = settings_for(minimal_config(groups=[{**group("g6f.xlarge", "gr6f.4xlarge"), "minSize": 1, "spotPercent": 0}]))

    [need] = quota_needs([(settings.config.groups[0], (g6f, gr6f))])

    assert quota_family("g6f.xlarge") == quota_family("gr6f.4xlarge") == "G"
    assert (need.code, need.name) == ON_DEMAND_QUOTAS["G"]
    assert (need.vcpus_at_min, need.vcpus_at_max) == (4, 2 * 16)
