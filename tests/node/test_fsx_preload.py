"""`preload`: one node restores the content of the preload directories into the Lustre file
system (`lfs hsm_restore`, in batches), under a lock on the file system, with its progress as a
reading; the next node finds the work done."""

from __future__ import annotations

import re

from gpucloud.node import boot_phases
from gpucloud.node.commands import CommandResult
from gpucloud.node.preload import BATCH, preload


class Lfs:
    def __init__(self, fail: bool = False):
        self.calls = []
        self.fail = fail

    def __call__(self, argv, timeout_s, env=None):
        self.calls.append(list(argv))
        return CommandResult(tuple(argv), returncode=1 if self.fail else 0, stderr="hsm: no such agent" if self.fail else "")


def _data(root, files: int):
    directory = root / "fsx" / "models" / "llm"
    directory.mkdir(parents=True)
    for index in range(files):
        (directory / f"shard{index:03d}").write_bytes(b"w" * 10)
    return str(directory)


def test_one_node_restores_every_file_in_batches_and_the_next_finds_it_done(tmp_path, monkeypatch):
    monkeypatch.setenv(boot_phases.DIRECTORY_ENV, str(tmp_path / "phases"))
    directory = _data(tmp_path, BATCH + 6)
    textfile = tmp_path / "gpucloud_fsx_preload.prom"
    first = Lfs()
    assert preload([directory], first, state_dir=str(tmp_path / "fsx" / ".gpucloud"), textfile=textfile) == 0
    assert [call[:2] for call in first.calls] == [["lfs", "hsm_restore"]] * 2
    assert sum(len(call) - 2 for call in first.calls) == BATCH + 6
    text = textfile.read_text()
    assert re.search(r'^gpucloud_fsx_preload_files\{state="requested"\} 70$', text, re.M)
    assert re.search(r'^gpucloud_fsx_preload_bytes\{state="total"\} 700$', text, re.M)
    assert "preload" in boot_phases.read()
    second = Lfs()
    assert preload([directory], second, state_dir=str(tmp_path / "fsx" / ".gpucloud"), textfile=textfile) == 0
    assert second.calls == [], "done once for the file system"


def test_a_node_that_finds_the_lock_taken_leaves_the_work_to_its_holder(tmp_path):
    directory = _data(tmp_path, 3)
    state = tmp_path / "fsx" / ".gpucloud"
    (state / "preload.lock").mkdir(parents=True)
    lfs = Lfs()
    assert preload([directory], lfs, state_dir=str(state), textfile=tmp_path / "p.prom") == 0
    assert lfs.calls == []


def test_a_failed_restore_leaves_no_done_marker_so_a_later_node_tries_again(tmp_path):
    directory = _data(tmp_path, 3)
    state = tmp_path / "fsx" / ".gpucloud"
    assert preload([directory], Lfs(fail=True), state_dir=str(state), textfile=tmp_path / "p.prom") == 1
    assert not (state / "preload.done").exists() and not (state / "preload.lock").exists()
