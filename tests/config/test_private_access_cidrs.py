"""The ranges the nodes' own ports admit (`access.sshCidrs`, `jupyterCidrs`, `tensorboardCidrs`) are
private ones: the nodes have no public address and sit in private subnets, so only a network routed
into the VPC reaches them, from its private ranges (RFC 1918, RFC 4193). A load balancer's
`allowedCidrs` may still name public callers."""

from __future__ import annotations

import pytest

from gpucloud.config import ConfigError
from support import minimal_config, settings_for


@pytest.mark.parametrize("cidr", ["203.0.113.0/24", "8.8.8.8/32", "172.32.0.0/16", "10.0.0.0/7", "2001:db8::/32"])
@pytest.mark.parametrize("key", ["sshCidrs", "jupyterCidrs", "tensorboardCidrs"])
def test_a_public_range_is_refused_on_one_line_naming_the_key(key, cidr):
    access = {key: [cidr], **({"ssm": False} if key == "sshCidrs" else {})}

    with pytest.raises(ConfigError) as error:
        settings_for(minimal_config(access=access))
    [(named, why)] = error.value.problems
    assert named == f"gpu-cloud:access.{key}[0]" and "\n" not in why
    assert f"{cidr} is not in a private range (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7)" in why
    assert "Session Manager (gpucloud connect)" in why


@pytest.mark.parametrize("cidr", ["10.20.0.0/16", "172.31.255.0/24", "192.168.1.7/32", "fd00:ab::/32"])
def test_private_ranges_are_admitted(cidr):
    config = settings_for(minimal_config(access={"jupyterCidrs": [cidr], "tensorboardCidrs": [cidr]})).config
    assert config.access.jupyter_cidrs == [cidr]


def test_a_load_balancer_may_still_admit_public_callers():
    from pydantic import TypeAdapter, ValidationError

    from gpucloud.config.endpoint import EndpointConfig
    from gpucloud.config.fields import PrivateCidr

    assert TypeAdapter(EndpointConfig.model_fields["allowed_cidrs"].annotation).validate_python(
        ["203.0.113.0/24"]) == ["203.0.113.0/24"]
    with pytest.raises(ValidationError):
        TypeAdapter(PrivateCidr).validate_python("203.0.113.0/24")
