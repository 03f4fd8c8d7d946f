"""A container's weights, copied from the data bucket at start, pass the plan's access check: the
recorded calls name the stack's own bucket and read prefix (`${dataBucket}/${readPrefix}`), which the
node role's read grant covers, not the bucket the recording test made."""

from __future__ import annotations

from gpucloud.plan.preview import plan_stack
from support import minimal_config, settings_for

SERVER = {"name": "servers", "instanceTypes": ["g6e.2xlarge"], "minSize": 0, "maxSize": 1, "services": {"containers": [{
    "name": "vllm", "image": "vllm/vllm-openai:v0.6.3", "port": 8000, "healthCheck": {"path": "/health"},
    "weights": {"source": "s3://demo-data/datasets/llama-3.1-8b/", "sizeGiB": 16}}]}}


def test_a_stack_with_container_weights_plans_with_every_weights_call_allowed():
    from gpucloud.plan.access import stack_features

    settings = settings_for(minimal_config(groups=[SERVER]))
    assert "containerWeights" in stack_features(settings)
    plan = plan_stack(settings)

    access = plan.to_preview_json()["access"]
    assert access["denied"] == []
    assert not [feature for feature in access["unmeasured"] if feature["feature"] == "containerWeights"]
