"""A job's checkpoint store: where `launch` restores a resumed attempt from and syncs to after the
command exits. `s3://bucket/prefix/` is the stack's write prefix (boto3, imported only when used);
`file:///path/` is a directory, such as a shared file system every node mounts (and the stand-in
for S3 in the recorded GPU run, which has no network).

Both decide as `aws s3 sync` does: a file is copied when the other side lacks it, holds another
size, or an older copy (S3 keeps whole seconds). `job.json` at the top of the store is the job's
record, which `gpucloud run` writes and rewrites there (gpucloud.ops.jobs.record): never copied either
way, so a node's stale copy cannot overwrite it. The launcher saves only what its command wrote or
changed (`unchanged_files`), for the same reason: the store is shared by every node of the job.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlparse

from gpucloud.node.checkpoint_save import sync_to_s3


JOB_RECORD = "job.json"


class CheckpointError(RuntimeError):
    """The store could not be read or written."""


class CheckpointStore(Protocol):
    uri: str

    def restore(self, directory: Path) -> int:
        """Copy what the store holds into directory; how many files were copied."""

    def save(self, directory: Path, unchanged: frozenset[str] = frozenset()) -> int:
        """Copy new and changed files of directory to the store, but none named in unchanged
        (relative paths); how many were copied."""


FileStates = dict[str, tuple[int, int]]


def file_states(directory: Path) -> FileStates:
    """Each file under directory (relative path) with its size and modification time in ns."""
    states = {}
    for path in directory.rglob("*"):
        if path.is_file():
            stat = path.stat()
            states[path.relative_to(directory).as_posix()] = (stat.st_size, stat.st_mtime_ns)
    return states


def unchanged_files(directory: Path, before: FileStates) -> frozenset[str]:
    """The files of before that are still there with the same size and modification time."""
    now = file_states(directory)
    return frozenset(name for name, state in before.items() if now.get(name) == state)


def _stale(size: int | None, modified: float, source_size: int, source_modified: float) -> bool:
    return size != source_size or modified < int(source_modified)


def _inside(directory: Path, relative: str) -> Path:
    """directory/relative, refusing a key that would land outside directory."""
    target = (directory / relative).resolve()
    if directory.resolve() not in target.parents:
        raise CheckpointError(f"refusing to write {relative!r} outside {directory}")
    return target


class S3Checkpoints:
    def __init__(self, uri: str, client_factory: Callable[[], Any]) -> None:
        self.uri = uri if uri.endswith("/") else uri + "/"
        self._client_factory = client_factory

    def _call(self, what: str, operation: Callable[[Any], int]) -> int:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return operation(self._client_factory())
        except (BotoCoreError, ClientError, OSError) as error:
            raise CheckpointError(f"{what}: {error}") from error

    def save(self, directory: Path, unchanged: frozenset[str] = frozenset()) -> int:
        return self._call("upload", lambda s3: sync_to_s3(directory, self.uri, s3, exclude=unchanged | {JOB_RECORD}))

    def restore(self, directory: Path) -> int:
        return self._call("download", lambda s3: self._download(directory, s3))

    def _download(self, directory: Path, s3: Any) -> int:
        bucket, _, prefix = self.uri[len("s3://"):].partition("/")
        copied = 0
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                relative = item["Key"][len(prefix):]
                if not relative or relative.endswith("/") or relative == JOB_RECORD:
                    continue
                target = _inside(directory, relative)
                stat = target.stat() if target.is_file() else None
                if stat and not _stale(stat.st_size, stat.st_mtime, item["Size"], item["LastModified"].timestamp()):
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                temporary = target.with_name(f".{target.name}.gpucloud")
                s3.download_file(bucket, item["Key"], str(temporary))
                os.replace(temporary, target)
                copied += 1
        return copied


class DirectoryCheckpoints:
    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.path = Path(unquote(urlparse(uri).path))

    def save(self, directory: Path, unchanged: frozenset[str] = frozenset()) -> int:
        return self._copy(directory, self.path, unchanged)

    def restore(self, directory: Path) -> int:
        if not self.path.is_dir():
            return 0
        return self._copy(self.path, directory)

    @staticmethod
    def _copy(source: Path, target: Path, skip: frozenset[str] = frozenset()) -> int:
        copied = 0
        try:
            for path in sorted(item for item in source.rglob("*") if item.is_file()):
                if path.relative_to(source).as_posix() in skip | {JOB_RECORD}:
                    continue
                destination = _inside(target, path.relative_to(source).as_posix())
                stat = destination.stat() if destination.is_file() else None
                if stat and not _stale(stat.st_size, stat.st_mtime, path.stat().st_size, path.stat().st_mtime):
                    continue
                destination.parent.mkdir(parents=True, exist_ok=True)
                temporary = destination.with_name(f".{destination.name}.gpucloud")
                shutil.copy2(path, temporary)
                os.replace(temporary, destination)
                copied += 1
        except OSError as error:
            raise CheckpointError(str(error)) from error
        return copied


def checkpoint_store(uri: str, s3_client: Callable[[], Any]) -> CheckpointStore:
    scheme = urlparse(uri).scheme
    if scheme == "s3":
        return S3Checkpoints(uri, s3_client)
    if scheme == "file":
        return DirectoryCheckpoints(uri)
    raise CheckpointError(f"checkpoint URI {uri!r} is neither s3:// nor file://")
