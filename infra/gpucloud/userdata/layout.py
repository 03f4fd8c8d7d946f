"""Where the node's files, units and mounts live, and how long each boot step may take.

The scripts, the units and the agent all read these; the launch hook's heartbeat limit is derived
from the boot steps' own timeouts.
"""

USER_DATA_LIMIT_BYTES = 16 * 1024
"""EC2 rejects user data larger than this (counted before base64 encoding)."""

AGENT_LIB_DIR = "/opt/gpucloud/lib"
"""Where the stub unpacks the agent bundle (the bootstrap stub's AGENT_LIB, without the root)."""
NODE_CONFIG_PATH = "/etc/gpucloud/node.json"
SERVICES_CONFIG_PATH = "/etc/gpucloud/services.json"
"""What the group serves (JupyterLab, TensorBoard, containers); only on nodes of a group that asks."""
SERVICES_UNIT = "gpucloud-node-services.service"
BOOTSTRAP_ENV_PATH = "/etc/gpucloud/bootstrap.env"
BOOTSTRAP_STUB_PATH = "/usr/local/sbin/gpucloud-bootstrap"
NODE_PYTHON = "/usr/bin/python3"
"""The image's own Python: 3.10 on the default AMI (Deep Learning Base OSS Nvidia Driver GPU AMI,
Ubuntu 22.04: "python_location /usr/bin/python3.10" in its release notes,
https://docs.aws.amazon.com/dlami/latest/devguide/ , read 2026-11-24), which also carries boto3.
The agent keeps to Python 3.9 so that Amazon Linux 2023 images run it too (the services choose
their user and Python per image family: gpucloud.node.services.image_family)."""
AGENT_COMMAND_PATH = "/usr/local/bin/gpucloud-node"
BOOT_MANIFEST_MEMBER = "boot/manifest.json"
STORAGE_SCRIPT_PATH = "/usr/local/sbin/gpucloud-storage"
CLOUDWATCH_SCRIPT_PATH = "/usr/local/sbin/gpucloud-cloudwatch"
CLOUDWATCH_CONFIG_PATH = "/opt/aws/amazon-cloudwatch-agent/etc/gpucloud.json"
BOOT_PHASE_LOG_PATH = "/var/log/gpucloud/boot-phases.log"
"""The node's boot-phase lines (gpucloud.node.boot_phases.LOG), which the CloudWatch agent sends on."""
STORAGE_UNIT = "gpucloud-storage.service"
GATE_UNIT = "gpucloud-node-gate.service"
DRAIN_UNIT = "gpucloud-node-drain.service"
TUNE_UNIT = "gpucloud-node-tune.service"
CLOUDWATCH_UNIT = "gpucloud-cloudwatch.service"
WATCH_UNIT = "gpucloud-node-watch.service"
COLLECT_UNIT = "gpucloud-node-collect.service"
HEARTBEAT_UNIT = "gpucloud-node-heartbeat"
"""A transient unit (systemd-run): it runs once, at first boot, and needs no unit file."""

SCRATCH_MOUNT = "/scratch"
DATA_MOUNT = "/data"
PERSIST_MOUNT = "/persist"
LUSTRE_MOUNT_PATH = "/fsx"
"""The project's FSx for Lustre file system (`storage.lustre`); `gpucloud.config.storage` names it too."""

# Instance families whose multi-GPU sizes join their GPUs with NVLink (NVSwitch from p4d on).
NVLINK_FAMILIES = frozenset({"p3", "p3dn", "p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6e-gb200"})
NVSWITCH_FAMILIES = frozenset({"p4d", "p4de", "p5", "p5e", "p5en", "p6-b200"})
"""Their GPUs talk through NVSwitches, which the fabric manager must have set up before use."""

VOLUME_WAIT_SECONDS = 600
"""How long the node waits for the data disk, and again for the persistent volume to come free."""
SCRATCH_DISK_WAIT_SECONDS = 120
"""How long the storage script waits for the instance-store disks to show up."""
STORAGE_TIMEOUT_SECONDS = 2 * VOLUME_WAIT_SECONDS + SCRATCH_DISK_WAIT_SECONDS + 600
"""systemd's limit for the storage script: both volume waits, the disk wait, and ten minutes
for udev, RAID assembly and mkfs."""
CLOUDWATCH_SETUP_TIMEOUT_SECONDS = 600
GATE_TIMEOUT_SECONDS = 1200
"""systemd's limit for the gate: boot checks with their pauses, each nvidia-smi call bounded."""
BUNDLE_FETCH_ATTEMPTS = 6
BUNDLE_FETCH_TIMEOUT_SECONDS = 30
BUNDLE_BACKOFF_SECONDS = (5, 60)
"""The stub's retries (first pause, longest pause): its bootstrap_stub.py constants, which a test
holds equal to these."""
BUNDLE_FETCH_WORST_SECONDS = BUNDLE_FETCH_ATTEMPTS * BUNDLE_FETCH_TIMEOUT_SECONDS + sum(
    min(BUNDLE_BACKOFF_SECONDS[0] * 2**attempt, BUNDLE_BACKOFF_SECONDS[1]) for attempt in range(BUNDLE_FETCH_ATTEMPTS - 1)
)
"""How long the stub may take before it gives up: before the heartbeat starts, so it must end well
within the launch hook's own timeout."""
LAUNCH_HEARTBEAT_LIMIT_SECONDS = STORAGE_TIMEOUT_SECONDS + CLOUDWATCH_SETUP_TIMEOUT_SECONDS + GATE_TIMEOUT_SECONDS
"""The agent keeps the launch action pending this long at most: storage, CloudWatch set-up and the
gate, one after the other. Past it, the launch hook's timeout ABANDONs a node that never got ready."""
