"""User data parameters shared by the renderer tests: typical, minimal and hostile."""

import functools

from gpucloud.userdata.render import NodeBootstrap, render_user_data

HOSTILE = 'it\'s "quoted"\n$(reboot) `reboot` ${HOME} \\ ; rm -rf / # \t end'
BUNDLE = {
    "agent_bucket": "gpu-cloud-ml-1a2b3c4d-123456789012",
    "agent_key": "agent/gpucloud-node-" + "ab" * 32 + ".zip",
    "agent_sha256": "ab" * 32,
}

TYPICAL = NodeBootstrap(
    project="ml",
    group_name="ml-train",
    region="us-east-1",
    expected_gpu_count=8,
    expected_gpu_model="H100",
    launch_hook_name="ml-train-launch",
    terminate_hook_name="ml-train-terminate",
    nvlink_expected=True,
    scratch_disk_count=8,
    data_disk_device="/dev/sdf",
    persistent_volume_tag_key="gpucloud:persistent-volume",
    persistent_volume_tag_value="ml/train",
    checkpoint_bucket="ml-artifacts",
    checkpoint_prefix="ml/train",
    cloudwatch_namespace="GpuCloud/ml",
    **BUNDLE,
)

HOSTILE_PARAMS = NodeBootstrap(
    project=HOSTILE,
    group_name=HOSTILE * 3,
    region="us-east-1",
    expected_gpu_count=8,
    expected_gpu_model=HOSTILE,
    launch_hook_name=HOSTILE,
    terminate_hook_name=HOSTILE,
    scratch_disk_count=8,
    data_disk_device="/dev/sdf",
    persistent_volume_tag_key=f"key {HOSTILE}",
    persistent_volume_tag_value=HOSTILE,
    checkpoint_dir=f"/scratch/{HOSTILE}",
    checkpoint_bucket="bucket",
    checkpoint_prefix=f"prefix/{HOSTILE}/" * 4,
    cloudwatch_namespace=HOSTILE,
    **BUNDLE,
)

LARGEST_REALISTIC = NodeBootstrap(
    project="p" * 24,
    group_name=f"gpu-cloud-{'p' * 24}-{'g' * 24}",
    region="ap-southeast-7",
    expected_gpu_count=8,
    expected_gpu_model="H200",
    launch_hook_name=f"gpu-cloud-{'p' * 24}-{'g' * 24}-launch",
    terminate_hook_name=f"gpu-cloud-{'p' * 24}-{'g' * 24}-terminate",
    nvlink_expected=True,
    fabric_expected=True,
    scratch_disk_count=8,
    data_disk_device="/dev/sdf",
    persistent_volume_tag_key="gpu-cloud:attach-to",
    persistent_volume_tag_value=f"gpu-cloud-{'p' * 24}-{'g' * 24}",
    checkpoint_dir="/scratch/checkpoints/" + "c" * 40,
    checkpoint_bucket="b" * 63,
    checkpoint_prefix="/".join(["prefix"] * 12),
    checkpoint_command=("python3", "/opt/training/save_checkpoint.py", "--to", "s3", "--" + "x" * 60),
    checkpoint_timeout_s=180,
    cloudwatch_namespace="GpuCloud",
    agent_bucket=f"gpu-cloud-{'p' * 28}-1a2b3c4d-123456789012",
    agent_key="agent/gpucloud-node-" + "f" * 64 + ".zip",
    agent_sha256="f" * 64,
    efa_expected=True,
    prometheus_remote_write_url="https://aps-workspaces.ap-southeast-7.amazonaws.com/workspaces/"
    "ws-0f3c1e2d-4a5b-6c7d-8e9f-0a1b2c3d4e5f/api/v1/remote_write",
)
"""A p5e-class node with every disk and the longest names and values a stack realistically has."""

MINIMAL = NodeBootstrap(
    project="p", group_name="g", region="eu-west-1", expected_gpu_count=1, expected_gpu_model="L4", **BUNDLE
)


@functools.cache
def rendered(params: NodeBootstrap) -> str:
    """render_user_data, once per parameter set."""
    return render_user_data(params)
