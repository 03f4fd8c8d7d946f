"""Reading resource inputs through the preview proxies: plain copies keep every value, wrapping is idempotent."""

from __future__ import annotations

from gpucloud.policy import UNKNOWN
from gpucloud.policy.values import known_only, to_plain


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
