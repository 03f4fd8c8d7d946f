"""`tune`: what the guides set on a GPU node, applied once at boot, and read back by `check`.

- The NVIDIA driver, fabric manager and kernel stay as the image shipped them: installed packages
  of those families are held (`apt-mark hold`) and listed in unattended-upgrades' blacklist, so an
  unattended upgrade can never leave a node to reboot into a kernel the driver was not built for.
- TCP BBR with the fq qdisc, for S3 and dataset transfers over long, lossy paths (kernel
  documentation, ip-sysctl: `tcp_congestion_control`, `default_qdisc`). BBR paces its own sending
  since Linux 4.13, so the queues attached before `tune` ran need not be replaced.
- On multi-node (EFA) groups, the NCCL/EFA environment from AWS's guides in a profile file for
  logins and an environment file for systemd units and containers.

GPUCLOUD_ROOT redirects every path, for tests.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Sequence
from pathlib import Path

from gpucloud.node.commands import CommandRunner
from gpucloud.node.packages import Installer, InstallPolicy

ROOT_ENV = "GPUCLOUD_ROOT"
COMMAND_TIMEOUT_S = 120.0
HOLD_POLICY = InstallPolicy(deadline_s=240.0, command_timeout_s=COMMAND_TIMEOUT_S)
"""The hold waits for the package locks within the tune unit's 300 s (userdata/scripts.py)."""

HELD_PACKAGES = re.compile(
    r"^(nvidia-.*|libnvidia-.*|cuda-drivers.*|cuda-compat-.*|.*fabricmanager.*|libnvsdm.*|"
    r"linux-(image|headers|modules|modules-extra|aws|generic)(-.*)?)$"
)
"""The driver, its libraries, fabric manager and the kernel: upgraded only with a new image."""
UNATTENDED_BLACKLIST_PATH = "etc/apt/apt.conf.d/51gpucloud-hold"
UNATTENDED_BLACKLIST = (
    "nvidia-", "libnvidia-", "cuda-drivers", "cuda-compat-", "fabricmanager", "libnvsdm", "linux-",
)
"""Regular expressions matched against package names (unattended-upgrades(8),
`Unattended-Upgrade::Package-Blacklist`, read 2026-11-25)."""

SYSCTL_PATH = "etc/sysctl.d/90-gpucloud-net.conf"
MODULES_LOAD_PATH = "etc/modules-load.d/gpucloud-bbr.conf"
NETWORK_SETTINGS = {"net.core.default_qdisc": "fq", "net.ipv4.tcp_congestion_control": "bbr"}

EFA_PROFILE_PATH = "etc/profile.d/gpucloud-efa.sh"
EFA_ENVIRONMENT_PATH = "etc/gpucloud/efa.env"
EFA_LIBRARY_DIRS = ("/opt/amazon/efa/lib", "/opt/amazon/openmpi/lib", "/opt/aws-ofi-nccl/lib")
EFA_BINARY_DIRS = ("/opt/amazon/efa/bin", "/opt/amazon/openmpi/bin")
FI_INFO = "/opt/amazon/efa/bin/fi_info"
"""Where the EFA installer puts libfabric's tools; not on a systemd unit's PATH."""
RDMA_FAMILIES = frozenset({"p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6-b300", "p6e-gb200"})
"""Types whose EFA does RDMA read and write, so NCCL may move GPU memory straight to the wire
(EC2 user guide, "Elastic Fabric Adapter": supported instance types and their RDMA columns; and
"Get started with EFA and NCCL", which sets FI_EFA_USE_DEVICE_RDMA=1 on them; read 2026-11-25)."""

log = logging.getLogger(__name__)


def root_path() -> Path:
    return Path(os.environ.get(ROOT_ENV, "/"))


def efa_environment(instance_type: str) -> dict[str, str]:
    """FI_PROVIDER=efa makes libfabric pick EFA, not a TCP fallback (EC2 user guide, "Get started
    with EFA and NCCL"); FI_EFA_FORK_SAFE=1 keeps registered memory intact across fork(), which
    data loader workers do (libfabric fi_efa(7)); device RDMA where the type has it."""
    values = {"FI_PROVIDER": "efa", "FI_EFA_FORK_SAFE": "1"}
    if instance_type.split(".", 1)[0] in RDMA_FAMILIES:
        values["FI_EFA_USE_DEVICE_RDMA"] = "1"
    return values


def efa_profile(values: dict[str, str]) -> str:
    lines = ["# gpu-cloud: NCCL over EFA, for logins and the jobs they start (written by gpucloud-node tune)"]
    lines += [f"export {name}={value}" for name, value in sorted(values.items())]
    lines.append('PATH="' + ":".join(EFA_BINARY_DIRS) + ':$PATH"; export PATH')
    lines.append('LD_LIBRARY_PATH="' + ":".join(EFA_LIBRARY_DIRS) + '${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; export LD_LIBRARY_PATH')
    return "\n".join(lines) + "\n"


def held_packages(installed: Sequence[str]) -> list[str]:
    return sorted(name for name in installed if HELD_PACKAGES.match(name))


def _write(root: Path, relative: str, text: str) -> Path:
    target = root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.gpucloud")
    temporary.write_text(text, encoding="utf-8")
    os.chmod(temporary, 0o644)
    os.replace(temporary, target)
    return target


def installed_packages(run: CommandRunner) -> list[str] | None:
    result = run(["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\n"], COMMAND_TIMEOUT_S)
    if not result.ok:
        log.error("cannot list installed packages: %s", result.describe_failure(COMMAND_TIMEOUT_S))
        return None
    return [line.split()[0] for line in result.stdout.splitlines() if line.endswith(" installed")]


def tune(run: CommandRunner, efa_expected: bool, instance_type: str, root: Path | None = None) -> int:
    """Apply everything; 0 when every part took, else 1 (after trying every part)."""
    root = root or root_path()
    failures = 0
    blacklist = "".join(f'    "{pattern}";\n' for pattern in UNATTENDED_BLACKLIST)
    _write(root, UNATTENDED_BLACKLIST_PATH, f"Unattended-Upgrade::Package-Blacklist {{\n{blacklist}}};\n")
    installed = installed_packages(run)
    if installed is None:
        failures += 1
    else:
        held = held_packages(installed)
        if held:
            # apt-mark hold takes the dpkg lock, which cloud-init and unattended-upgrades hold at first boot
            failure = Installer(run, HOLD_POLICY, root=root).run_unlocked(["apt-mark", "hold", *held])
            if failure is None:
                log.info("held %d packages: %s", len(held), " ".join(held))
            else:
                failures += 1
                log.error("%s", failure)
    _write(root, MODULES_LOAD_PATH, "tcp_bbr\n")
    settings = _write(root, SYSCTL_PATH, "".join(f"{key} = {value}\n" for key, value in NETWORK_SETTINGS.items()))
    for argv in (["modprobe", "tcp_bbr"], ["sysctl", "-p", str(settings)]):
        result = run(argv, COMMAND_TIMEOUT_S)
        if not result.ok:
            failures += 1
            log.error("%s: %s", " ".join(argv), result.describe_failure(COMMAND_TIMEOUT_S))
    if efa_expected:
        values = efa_environment(instance_type)
        _write(root, EFA_PROFILE_PATH, efa_profile(values))
        _write(root, EFA_ENVIRONMENT_PATH, "".join(f"{name}={value}\n" for name, value in sorted(values.items())))
        log.info("EFA environment for %s: %s", instance_type or "this type", values)
    return 1 if failures else 0


def network_problems(root: Path | None = None) -> list[str]:
    """What `check` reports when the boot-time network settings are not in effect."""
    root = root or root_path()
    problems = []
    for key, wanted in NETWORK_SETTINGS.items():
        path = root / "proc/sys" / key.replace(".", "/")
        try:
            value = path.read_text(encoding="utf-8").strip()
        except OSError as error:
            problems.append(f"cannot read {key}: {error.strerror or error}")
            continue
        if value != wanted:
            problems.append(f"{key} is {value!r}, not {wanted!r} (gpucloud-node tune sets it at boot)")
    return problems


def efa_problems(run: CommandRunner, fi_info: str = FI_INFO, root: Path | None = None) -> list[str]:
    """An EFA node must show libfabric's efa provider (EC2 user guide, "Get started with EFA and
    NCCL": `fi_info -p efa` lists it once the EFA software is installed) and carry the profile."""
    root = root or root_path()
    problems = []
    result = run([fi_info, "-p", "efa"], 30.0)
    if not result.ok:
        problems.append(f"EFA provider not visible: {result.describe_failure(30.0)}")
    elif "provider: efa" not in result.stdout:
        problems.append("EFA provider not visible: fi_info -p efa lists no efa provider")
    if not (root / EFA_PROFILE_PATH).is_file():
        problems.append(f"/{EFA_PROFILE_PATH} is missing (gpucloud-node tune writes it at boot)")
    return problems
