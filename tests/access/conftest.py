"""The deployer's calls are measured into gpucloud/data/access_calls.json by the tests marked
`access_calls` (tests/access_recording.py)."""

from access_recording import pytest_configure, pytest_runtest_call, pytest_sessionfinish  # noqa: F401
