"""Where the node's files, units and mounts live, and how long each boot step may take.

The scripts, the units and the agent all read these; the launch hook's heartbeat limit is derived
from the boot steps' own timeouts.
"""

USER_DATA_LIMIT_BYTES = 16 * 1024
"""EC2 rejects user data larger than this (counted before base64 encoding)."""

AGENT_LIB_DIR = "/opt/gpucloud/lib"
NODE_CONFIG_PATH = "/etc/gpucloud/node.json"
BOOTSTRAP_ENV_PATH = "/etc/gpucloud/bootstrap.env"
AGENT_COMMAND_PATH = "/usr/local/bin/gpucloud-node"
INSTALL_SCRIPT_PATH = "/usr/local/sbin/gpucloud-install-agent"
STORAGE_SCRIPT_PATH = "/usr/local/sbin/gpucloud-storage"
CLOUDWATCH_SCRIPT_PATH = "/usr/local/sbin/gpucloud-cloudwatch"
CLOUDWATCH_CONFIG_PATH = "/opt/aws/amazon-cloudwatch-agent/etc/gpucloud.json"
STORAGE_UNIT = "gpucloud-storage.service"
GATE_UNIT = "gpucloud-node-gate.service"
DRAIN_UNIT = "gpucloud-node-drain.service"
HEARTBEAT_UNIT = "gpucloud-node-heartbeat"
"""A transient unit (systemd-run): it runs once, at first boot, and needs no unit file."""

SCRATCH_MOUNT = "/scratch"
DATA_MOUNT = "/data"
PERSIST_MOUNT = "/persist"

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
LAUNCH_HEARTBEAT_LIMIT_SECONDS = STORAGE_TIMEOUT_SECONDS + CLOUDWATCH_SETUP_TIMEOUT_SECONDS + GATE_TIMEOUT_SECONDS
"""The agent keeps the launch action pending this long at most: storage, CloudWatch set-up and the
gate, one after the other. Past it, the launch hook's timeout ABANDONs a node that never got ready."""
