"""pytest plugin for the mutation runner's baseline: which test ran each line of the module.

Loaded with ``-p mutation_contexts`` in a pytest whose coverage was started by the runner's
``sitecustomize`` (coverage's ``process_startup``). Each test's setup, call and teardown record
their lines under the test's node id; a fixture wider than a function (set up once, used by many
tests) records its setup under its own name, and the JSON written at the end says which tests use
it. The node id also goes to the environment, where a subprocess started by the test (a CLI run)
reads it as its static coverage context, so lines run there count for the test too.
"""

from __future__ import annotations

import json
import os

import coverage
import pytest

CONTEXT = "GPUCLOUD_MUTATION_CONTEXT"
TESTS = "GPUCLOUD_MUTATION_TESTS"


def _switch(name: str) -> None:
    os.environ[CONTEXT] = name
    current = coverage.Coverage.current()
    if current is not None:
        current.switch_context(name)


def fixture_context(fixturedef) -> str:
    return f"fixture {fixturedef.scope} {fixturedef.baseid}::{fixturedef.argname}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _switch(item.nodeid)
    yield
    _switch("(between tests)")


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    if fixturedef.scope == "function":
        yield
        return
    before = os.environ.get(CONTEXT, "")
    _switch(fixture_context(fixturedef))
    yield
    _switch(before)


SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report):
    SECONDS[report.nodeid] = SECONDS.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session):
    """The tests in the order they ran with their seconds (node ids, relative to the rootdir given), and
    for each wider fixture the tests that use it."""
    users: dict[str, list[str]] = {}
    for item in session.items:
        info = getattr(item, "_fixtureinfo", None)
        for definitions in (info.name2fixturedefs.values() if info else ()):
            for fixturedef in definitions:
                if fixturedef.scope != "function":
                    users.setdefault(fixture_context(fixturedef), []).append(item.nodeid)
    with open(os.environ[TESTS], "w", encoding="utf-8") as out:
        json.dump({"rootdir": str(session.config.rootpath), "order": [item.nodeid for item in session.items],
                   "fixtures": users, "seconds": SECONDS}, out)
