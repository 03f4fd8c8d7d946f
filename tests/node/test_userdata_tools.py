"""The rendered user data checked by cloud-init's own schema validator and by shellcheck, and the
storage script run against stand-in disk tools.

cloud-init and shellcheck come from Debian (`apt-get install -y cloud-init shellcheck`). Without
them these tests skip, except under CI=true, where a missing tool is a failure.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from gpucloud.userdata import layout, render, scripts
from gpucloud.userdata.render import NodeBootstrap, bootstrap_env
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


def test_every_shell_script_the_bundle_installs_and_runcmd_pass_shellcheck(tmp_path):
    shellcheck = require_tool("shellcheck")
    written = dict(scripts.SCRIPTS)
    for rendering in RENDERINGS.values():
        document = yaml.safe_load(rendered(rendering))
        assert shell_scripts(document) == {}, "user data carries no shell script"
        written[f"runcmd-{rendering.group_name[:8]}"] = runcmd_script(document, tmp_path)
    assert {layout.AGENT_COMMAND_PATH, layout.STORAGE_SCRIPT_PATH, layout.CLOUDWATCH_SCRIPT_PATH} == set(scripts.SCRIPTS)
    files = []
    for number, (name, content) in enumerate(sorted(written.items())):
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
        input=render.encode_user_data(rendered(TYPICAL)),
        capture_output=True,
        check=True,
    )

    assert result.stdout.decode() == rendered(TYPICAL)


class DiskTools:
    """Stand-ins for blkid, cmp, mkfs, mount, mdadm, lsblk, udevadm and gpucloud-node that log
    their calls. Bash's own `[` is switched off for the script (through BASH_ENV), so that
    `[ -b DEVICE ]` asks a stand-in too: every fake device is a block device unless listed in
    `not_block_devices`; `cmp` finds the first MiB all zeros unless listed in `nonzero_devices`."""

    def __init__(
        self,
        root: Path,
        params: NodeBootstrap,
        instance_store: list[str],
        blkid_status: dict[str, int],
        not_block_devices: tuple[str, ...] = (),
        nonzero_devices: tuple[str, ...] = (),
    ):
        self.root = root
        self.log = root / "calls.log"
        self.bin = root / "bin"
        self.bin.mkdir()
        (root / "bootstrap.env").write_text(bootstrap_env(params))
        (root / "bash_env").write_text("enable -n [ test\nunset BASH_ENV\n")
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
        self.tool("cmp", f'case "$4" in {"|".join(nonzero_devices) or "none"}) exit 1 ;; esac')
        self.tool(
            "[",
            f'if [ "$1" = -b ]; then case "$2" in {"|".join(not_block_devices) or "none"}) exit 1 ;; esac; exit 0; fi\n'
            'builtin [ "$@"',
        )
        for name in ("mkfs.ext4", "mount", "mkdir", "sleep", "udevadm"):
            self.tool(name, "exit 0")

    def tool(self, name: str, body: str) -> None:
        path = self.bin / name
        path.write_text(f'#!/bin/bash\necho "{name} $*" >> "{self.log}"\n{body}\n')
        path.chmod(0o755)

    def run(self) -> tuple[int, list[str]]:
        script = self.root / "gpucloud-storage"
        script.write_text(scripts.STORAGE_SCRIPT)
        environment = {
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "GPUCLOUD_BOOTSTRAP_ENV": str(self.root / "bootstrap.env"),
            "BASH_ENV": str(self.root / "bash_env"),
        }
        result = subprocess.run(
            ["bash", str(script)], env=environment, capture_output=True, text=True, timeout=30
        )
        calls = self.log.read_text().splitlines() if self.log.exists() else []
        uninteresting = ("mountpoint", "lsblk", "mkdir", "[ ")
        return result.returncode, [
            call for call in calls if not call.startswith(uninteresting) or call.startswith("[ -b")
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
        "[ -b /dev/nvme2n1 ]",
        "blkid -p /dev/nvme2n1",
        "mount -o defaults,noatime /dev/nvme2n1 /persist",
    ]


def test_blank_persistent_volume_is_formatted_once_its_first_mib_reads_back_as_zeros(tmp_path):
    tools = DiskTools(tmp_path, storage_params(**PERSIST), [], {"/dev/nvme2n1": 2})

    status, calls = tools.run()

    assert status == 0
    assert calls[-3:] == [
        "cmp -s -n 1048576 /dev/nvme2n1 /dev/zero",
        "mkfs.ext4 -q -L persist /dev/nvme2n1",
        "mount -o defaults,noatime /dev/nvme2n1 /persist",
    ]


def test_volume_without_signature_but_with_data_is_never_formatted(tmp_path):
    """blkid exits 2 for an unreadable device as for a blank one; the zero check tells them apart."""
    tools = DiskTools(tmp_path, storage_params(**PERSIST), [], {"/dev/nvme2n1": 2}, nonzero_devices=("/dev/nvme2n1",))

    status, calls = tools.run()

    assert status == 1
    assert not [call for call in calls if call.startswith("mkfs") or call.endswith("/persist")]


def test_path_that_is_no_block_device_is_never_probed_or_formatted(tmp_path):
    tools = DiskTools(tmp_path, storage_params(**PERSIST), [], {}, not_block_devices=("/dev/nvme2n1",))

    status, calls = tools.run()

    assert status == 1
    assert calls == ["gpucloud-node attach-volume", "[ -b /dev/nvme2n1 ]"]


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
        "udevadm settle --timeout=60",
        "mdadm --examine /dev/nvme3n1",
        "mdadm --create /dev/md/scratch --name=scratch --level=0 --run --raid-devices=2 /dev/nvme3n1 /dev/nvme4n1",
        "udevadm settle --timeout=60",
        "[ -b /dev/md/scratch ]",
        "blkid -p /dev/md/scratch",
        "cmp -s -n 1048576 /dev/md/scratch /dev/zero",
        "mkfs.ext4 -q -L scratch /dev/md/scratch",
        "mount -o defaults,noatime /dev/md/scratch /scratch",
    ]


def test_single_instance_store_disk_is_used_without_raid(tmp_path):
    tools = DiskTools(tmp_path, storage_params(scratch_disk_count=1), ["/dev/nvme3n1"], {})

    status, calls = tools.run()

    assert status == 0
    assert calls == [
        "udevadm settle --timeout=60",
        "[ -b /dev/nvme3n1 ]",
        "blkid -p /dev/nvme3n1",
        "cmp -s -n 1048576 /dev/nvme3n1 /dev/zero",
        "mkfs.ext4 -q -L scratch /dev/nvme3n1",
        "mount -o defaults,noatime /dev/nvme3n1 /scratch",
    ]


def test_data_disk_is_resolved_through_the_agent(tmp_path):
    tools = DiskTools(tmp_path, storage_params(data_disk_device="/dev/sdf"), [], {})

    status, calls = tools.run()

    assert status == 0
    assert calls[0] == "gpucloud-node ebs-device /dev/sdf"
    assert calls[-1] == "mount -o defaults,noatime /dev/nvme1n1 /data"
