"""Reading resource inputs through the preview proxies: plain copies keep every value, wrapping is idempotent."""

from __future__ import annotations

import pytest

from gpucloud.policy import UNKNOWN, PolicyConfig, UnknownInputError
from gpucloud.policy.rules.network import validate_no_world_open_ingress
from gpucloud.policy.values import as_list, known_only, peek_list, to_plain
from policy_cases import SECURITY_GROUP_RULE


def test_plain_copy_of_proxies_keeps_every_value():
    proxied = known_only({"Statement": [{"Effect": "Allow", "Action": ("s3:GetObject",), "Sid": None, "Weight": 2}]})

    assert to_plain(proxied) == {"Statement": [{"Effect": "Allow", "Action": ["s3:GetObject"], "Sid": None, "Weight": 2}]}


def test_known_only_inputs_count_their_keys_including_unknown_ones():
    inputs = known_only({"size": 100, "encrypted": UNKNOWN})

    assert len(inputs) == 2 and inputs
    assert not known_only({})


def test_wrapping_known_only_inputs_again_keeps_them():
    inputs = known_only({"size": 100})

    assert known_only(inputs) is inputs
    assert known_only(inputs)["size"] == 100


def test_known_only_list_inputs_have_a_length_and_read_as_lists():
    cidrs = known_only({"cidrBlocks": ["10.0.0.0/16", "10.1.0.0/16"]})["cidrBlocks"]

    assert len(cidrs) == 2
    assert as_list(cidrs) == ["10.0.0.0/16", "10.1.0.0/16"]


def test_ingress_rule_whose_whole_source_list_is_unknown_is_undecided():
    rule = known_only({"type": "ingress", "protocol": "tcp", "fromPort": 22, "toPort": 22, "cidrBlocks": UNKNOWN})

    assert peek_list(UNKNOWN) == [UNKNOWN]
    with pytest.raises(UnknownInputError):
        validate_no_world_open_ingress(SECURITY_GROUP_RULE, rule, lambda message: None, PolicyConfig())
