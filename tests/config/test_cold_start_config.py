"""The cold-start keys refused on one line naming the key: weights outside the node role's read
prefixes or on a tier the stack lacks, a pre-pull with no image, a preload outside the linked prefixes."""

from __future__ import annotations

from support import config_problems, minimal_config, settings_for

SERVER = {"name": "server", "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/server:1", "imageSizeGiB": 12,
          "port": 8000}


def _serving(weights: dict | None = None, **group) -> dict:
    container = {**SERVER, **({"weights": weights} if weights else {})}
    return minimal_config(groups=[{"name": "servers", "instanceTypes": ["g5.xlarge"], "maxSize": 2, "spotPercent": 0,
                                   "services": {"containers": [container]}, **group}])


def test_weights_outside_the_read_prefixes_are_refused_naming_the_source():
    [(key, reason)] = config_problems(_serving({"source": "s3://demo-data/elsewhere/llama/", "sizeGiB": 15}))
    assert key == "gpu-cloud:groups[0].services.containers[0].weights.source"
    assert "stage the weights once under s3://<data.bucket>/<one of data.readPrefixes>/" in reason


def test_weights_on_a_tier_the_stack_lacks_are_refused():
    [(key, reason)] = config_problems(_serving({"source": "s3://demo-data/datasets/llama/", "sizeGiB": 15, "to": "fsx"}))
    assert key == "gpu-cloud:groups[0].services.containers[0].weights.to" and "storage.lustre" in reason
    [(key, reason)] = config_problems(_serving({"source": "s3://demo-data/datasets/llama/", "sizeGiB": 15,
                                                "to": "mountpoint"}))
    assert key.endswith("weights.to") and "storage.s3Mount" in reason


def test_a_weights_source_must_be_an_s3_prefix():
    [(key, reason)] = config_problems(_serving({"source": "https://example.com/llama", "sizeGiB": 15}))
    assert key.endswith("weights.source") and "s3://<bucket>/<prefix>/" in reason


def test_prepull_without_containers_is_refused():
    values = minimal_config()
    values["groups"][0].update(spotPercent=0, warmPool={"prepullImages": True})
    [(key, reason)] = config_problems(values)
    assert key == "gpu-cloud:groups[0].warmPool.prepullImages" and "no services.containers" in reason


def test_a_preload_prefix_outside_the_linked_prefixes_is_refused():
    values = minimal_config(storage={"lustre": {"preloadPrefixes": ["models/"]}})
    [(key, reason)] = config_problems(values)
    assert key == "gpu-cloud:storage.lustre.preloadPrefixes" and "'models/'" in reason


def test_weights_default_to_the_preloaded_file_system_else_scratch():
    from gpucloud.config.cold_start import weights_tier

    values = _serving({"source": "s3://demo-data/datasets/llama/", "sizeGiB": 15})
    container = settings_for(values).config.groups[0].services.containers[0]
    assert weights_tier(settings_for(values).config, container.weights) == "scratch"
    values["storage"] = {"lustre": {"preloadPrefixes": ["datasets/"]}}
    assert weights_tier(settings_for(values).config, container.weights) == "fsx"
