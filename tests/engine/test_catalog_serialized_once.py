"""moto's EC2 catalog answers (instance types, their offerings), serialized once per list of items,
reach the engine's client as moto serializes them on every call: the first answer, a repeated one
and moto's own are equal (request id included), and each request gets the answer to its own list."""

from __future__ import annotations

from moto.ec2.responses.instances import InstanceResponse

from gpucloud.testing import moto_account

DESCRIBED = [["p5.48xlarge"], ["g5.xlarge", "p5.48xlarge"], ["g5.xlarge"]]


def described(types: list[str]) -> dict:
    with moto_account() as account:
        answer = account.client("ec2").describe_instance_types(InstanceTypes=types)
    return {**answer, "ResponseMetadata": answer["ResponseMetadata"]["RequestId"]}


def test_an_instance_types_description_reaches_the_engines_client_as_moto_serializes_it_each_time(monkeypatch):
    first = [described(types) for types in DESCRIBED]
    again = [described(types) for types in DESCRIBED]
    monkeypatch.setattr(InstanceResponse, "describe_instance_types", InstanceResponse.describe_instance_types.serialized)
    monkeypatch.setattr("gpucloud.testing.moto_setup._instance_types_serialized_once", lambda describe: describe)
    as_moto_serializes_it = [described(types) for types in DESCRIBED]

    assert first == again == as_moto_serializes_it
    assert [[kind["InstanceType"] for kind in answer["InstanceTypes"]] for answer in first] == [
        ["p5.48xlarge"], ["g5.xlarge", "p5.48xlarge"], ["g5.xlarge"]]
    assert len(first[0]["InstanceTypes"][0]["NetworkInfo"]["NetworkCards"]) == 32
