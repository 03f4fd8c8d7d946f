"""The rendered user data checked by cloud-init's own schema validator and by shellcheck, and the
storage script run against stand-in disk tools.

cloud-init and shellcheck come from Debian (`apt-get install -y cloud-init shellcheck`). Without
them these tests skip, except under CI=true, where a missing tool is a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from gpucloud import userdata
from gpucloud.userdata import NodeBootstrap, bootstrap_env
from userdata_checks import require_tool, runcmd_script, shell_scripts
from userdata_samples import HOSTILE_PARAMS, MINIMAL, TYPICAL, rendered

RENDERINGS = {"typical": TYPICAL, "hostile": HOSTILE_PARAMS, "minimal": MINIMAL}


@pytest.mark.parametrize("rendering", RENDERINGS)
def test_cloud_init_accepts_the_document(rendering, tmp_path):
    cloud_init = require_tool("cloud-init")
    document = tmp_path / "user-data"
    document.write_text(rendered(RENDERINGS[rendering]))

    result = subprocess.run([cloud_init, "schema", "-c", str(document)], capture_output=True, text=True)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "Valid cloud-config" in result.stdout


@pytest.mark.parametrize("rendering", RENDERINGS)
def test_every_shell_script_passes_shellcheck(rendering, tmp_path):
    shellcheck = require_tool("shellcheck")
    document = yaml.safe_load(rendered(RENDERINGS[rendering]))
    scripts = shell_scripts(document)
    scripts["runcmd"] = runcmd_script(document, tmp_path)
    assert scripts.keys() == {
        userdata.AGENT_COMMAND_PATH,
        userdata.INSTALL_SCRIPT_PATH,
        userdata.STORAGE_SCRIPT_PATH,
        userdata.CLOUDWATCH_SCRIPT_PATH,
        "runcmd",
    }
    files = []
    for number, (name, content) in enumerate(sorted(scripts.items())):
        files.append(tmp_path / f"{number}-{Path(name).name}")
        files[-1].write_text(content)

    result = subprocess.run(
        [shellcheck, "--severity=style", *map(str, files)], capture_output=True, text=True
    )

    assert result.returncode == 0, result.stdout


def test_cloud_init_unpacks_the_gzip_payload():
    cloud_init = require_tool("cloud-init")
    interpreter = Path(cloud_init).read_text().splitlines()[0].removeprefix("#!").split()
    program = "import sys; from cloudinit.util import decomp_gzip; sys.stdout.write(decomp_gzip(sys.stdin.buffer.read()))"

    result = subprocess.run(
        [*interpreter, "-c", program],
        input=userdata.encode_user_data(rendered(TYPICAL)),
        capture_output=True,
        check=True,
    )

    assert result.stdout.decode() == rendered(TYPICAL)


class DiskTools:
    """Stand-ins for blkid, mkfs, mount, mdadm, lsblk and gpucloud-node that log their calls."""

    def __init__(
        self, root: Path, params: NodeBootstrap, instance_store: list[str], blkid_status: dict[str, int]
    ):
        self.root = root
        self.log = root / "calls.log"
        self.bin = root / "bin"
        self.bin.mkdir()
        (root / "bootstrap.env").write_text(bootstrap_env(params))
        statuses = " ".join(f"{device}) exit {status} ;;" for device, status in blkid_status.items())
        store = "\\n".join(f"{disk} Amazon EC2 NVMe Instance Storage" for disk in instance_store)
        self.tool("blkid", f'case "$2" in {statuses} *) exit 2 ;; esac')
        self.tool(
            "lsblk",
            f'case "$1" in -dnpo) printf "{store}\\n/dev/nvme0n1 Amazon Elastic Block Store\\n" ;; esac',
        )
        self.tool("mdadm", 'case "$1" in --examine) exit 1 ;; esac')
        self.tool("mountpoint", "exit 1")
        self.tool(
            "gpucloud-node",
            'case "$1" in ebs-device) echo /dev/nvme1n1 ;; attach-volume) echo /dev/nvme2n1 ;; esac',
        )
        for name in ("mkfs.ext4", "mount", "mkdir", "sleep"):
            self.tool(name, "exit 0")

    def tool(self, name: str, body: str) -> None:
        path = self.bin / name
        path.write_text(f'#!/bin/bash\necho "{name} $*" >> "{self.log}"\n{body}\n')
        path.chmod(0o755)

    def run(self) -> tuple[int, list[str]]:
        script = self.root / "gpucloud-storage"
        script.write_text(userdata.STORAGE_SCRIPT)
        environment = {
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "GPUCLOUD_BOOTSTRAP_ENV": str(self.root / "bootstrap.env"),
        }
        result = subprocess.run(
            ["bash", str(script)], env=environment, capture_output=True, text=True, timeout=30
        )
        calls = self.log.read_text().splitlines() if self.log.exists() else []
        return result.returncode, [
            call for call in calls if not call.startswith(("mountpoint", "lsblk", "mkdir"))
        ]


def storage_params(**changes) -> NodeBootstrap:
    return NodeBootstrap(**{**MINIMAL.__dict__, **changes})


PERSIST = {"persistent_volume_tag_key": "gpucloud:persistent-volume", "persistent_volume_tag_value": "v"}


def test_persistent_volume_with_a_filesystem_is_mounted_never_formatted(tmp_path):
    tools = DiskTools(tmp_path, storage_params(**PERSIST), [], {"/dev/nvme2n1": 0})

    status, calls = tools.run()

    assert status == 0
    assert calls == [
        "gpucloud-node attach-volume",
        "blkid -p /dev/nvme2n1",
        "mount -o defaults,noatime /dev/nvme2n1 /persist",
    ]


def test_blank_persistent_volume_is_formatted_once(tmp_path):
    tools = DiskTools(tmp_path, storage_params(**PERSIST), [], {"/dev/nvme2n1": 2})

    status, calls = tools.run()

    assert status == 0
    assert "mkfs.ext4 -q -L persist /dev/nvme2n1" in calls


def test_volume_that_cannot_be_probed_is_left_alone_and_fails_the_boot(tmp_path):
    tools = DiskTools(
        tmp_path,
        storage_params(**PERSIST, data_disk_device="/dev/sdf"),
        [],
        {"/dev/nvme2n1": 4, "/dev/nvme1n1": 0},
    )

    status, calls = tools.run()

    assert status == 1
    assert not [call for call in calls if call.startswith("mkfs") or "/persist" in call]
    assert "mount -o defaults,noatime /dev/nvme1n1 /data" in calls


def test_several_instance_store_disks_become_one_raid0_scratch(tmp_path):
    disks = ["/dev/nvme3n1", "/dev/nvme4n1"]
    tools = DiskTools(tmp_path, storage_params(scratch_disk_count=2), disks, {})

    status, calls = tools.run()

    assert status == 0
    assert calls == [
        "mdadm --examine /dev/nvme3n1",
        "mdadm --create /dev/md/scratch --name=scratch --level=0 --run --raid-devices=2 /dev/nvme3n1 /dev/nvme4n1",
        "blkid -p /dev/md/scratch",
        "mkfs.ext4 -q -L scratch /dev/md/scratch",
        "mount -o defaults,noatime /dev/md/scratch /scratch",
    ]


def test_single_instance_store_disk_is_used_without_raid(tmp_path):
    tools = DiskTools(tmp_path, storage_params(scratch_disk_count=1), ["/dev/nvme3n1"], {})

    status, calls = tools.run()

    assert status == 0
    assert calls == [
        "blkid -p /dev/nvme3n1",
        "mkfs.ext4 -q -L scratch /dev/nvme3n1",
        "mount -o defaults,noatime /dev/nvme3n1 /scratch",
    ]


def test_data_disk_is_resolved_through_the_agent(tmp_path):
    tools = DiskTools(tmp_path, storage_params(data_disk_device="/dev/sdf"), [], {})

    status, calls = tools.run()

    assert status == 0
    assert calls[0] == "gpucloud-node ebs-device /dev/sdf"
    assert calls[-1] == "mount -o defaults,noatime /dev/nvme1n1 /data"
