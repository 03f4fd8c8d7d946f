"""`gpucloud init <dir>`: a new repository that runs the stack-file workflow from the installed package.

It writes the Pulumi project (Pulumi.yaml with stackConfigDir, a two-line program), one example
stack file with its JSON Schema, the policy pack wrapping gpucloud.policy, the requirements and a
CI workflow that plans every stack offline. It never overwrites: one existing file stops it first.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from importlib import metadata
from pathlib import Path

from gpucloud.cli.common import PLAN_BAD_INPUT

PULUMI_PROJECT = """\
# The Pulumi project (https://www.pulumi.com/docs/iac/concepts/projects/project-file/, read 2026-11-28):
# the program is __main__.py beside this file (main defaults to this folder), the stack files are
# stacks/Pulumi.<stack>.yaml (stackConfigDir), and Pulumi installs requirements.txt into .venv.
name: {name}
description: Per-project GPU environments on AWS (gpu-cloud), one stack per ML project
runtime:
  name: python
  options:
    toolchain: pip
    virtualenv: .venv
stackConfigDir: stacks
"""

PROGRAM = """\
from gpucloud.program import main

main()
"""

STACK_FILE = """\
# yaml-language-server: $schema=stack-config.schema.json
# stacks/Pulumi.{stack}.yaml: one project, one GPU group. The file name's middle part is the stack name.
config:
  aws:region: us-east-1
  gpu-cloud:project: {stack}
  gpu-cloud:owner: ml-team@example.com
  gpu-cloud:costCenter: cc-1234
  gpu-cloud:budget:
    monthlyUsd: 1000
  gpu-cloud:data:
    bucket: example-ml-data
    readPrefixes: [datasets/]
    writePrefixes: [experiments/{stack}/]
  gpu-cloud:groups:
    - name: gpus
      instanceTypes: [g5.xlarge, g6.xlarge]
      minSize: 0
      maxSize: 2
      desiredCapacity: 1
      onDemandBaseCapacity: 1
      idleShutdown:
        utilizationPercent: 5
        minutes: 60
"""

REQUIREMENTS = """\
# The program's and the offline plan's dependencies (the plan extra: moto, the policies, the views).
# Until a release is on PyPI, name a commit or tag from git instead of a version:
#   gpucloud[plan] @ git+https://github.com/OWNER/REPO@COMMIT
{requirement}
"""

POLICY_PROJECT = """\
# The review gate: `pulumi preview --policy-pack policies` from the repository root. Pulumi creates
# ./venv (relative to this file) and installs requirements.txt into it.
runtime:
  name: python
  options:
    virtualenv: venv
version: 0.1.0
description: gpu-cloud review gate (the rules of gpucloud.policy, as `gpucloud plan` runs them).
"""

POLICY_PROGRAM = '''\
"""The gpu-cloud policy pack: the rules `gpucloud plan` runs, served to the Pulumi engine."""

from pulumi_policy import PolicyPack

from gpucloud.policy.crossguard import PACK_NAME, POLICIES

if __name__ == "__main__":
    PolicyPack(name=PACK_NAME, policies=POLICIES)
'''

POLICY_REQUIREMENTS = """\
# The rules live in the gpucloud package; the policy extra brings parliament, which lints IAM.
{requirement}
pulumi-policy>=1.21,<2
"""

PLAN_WORKFLOW = """\
# The offline plan of every stack file in stacks/ on each pull request and push to main: no AWS
# credentials, no Pulumi CLI. A stack's policy config is policies/config/<stack>.json (optional),
# which `gpucloud plan --stack` reads by itself.
name: plan

on:
  pull_request:
  push:
    branches: [main]

permissions:
  contents: read

jobs:
  plan:
    name: offline plan of every stack
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v6
        with:
          persist-credentials: false

      - uses: actions/setup-python@v6
        with:
          python-version: "3.11"

      - name: Install gpucloud with its plan extra
        run: |
          python3 -m venv .venv
          .venv/bin/pip install --quiet -r requirements.txt

      - name: Offline plan of every stack (fails on a bad stack file or a mandatory policy violation)
        run: |
          status=0
          for stack_file in stacks/Pulumi.*.yaml; do
            [ -e "$stack_file" ] || continue
            stack=$(basename "$stack_file" .yaml)
            stack=${{stack#Pulumi.}}
            echo "::group::gpucloud plan --stack ${{stack}}"
            .venv/bin/gpucloud plan --stack "$stack" || status=1
            echo "::endgroup::"
          done
          exit "$status"
"""

STACK_NAME = re.compile(r"[a-z][a-z0-9-]{0,22}[a-z0-9]")
"""The example stack's name is also its gpu-cloud:project, so it follows the project's rule (config/fields.py)."""


def installed_requirement() -> str:
    """The requirement naming this very gpucloud: its git commit when pip installed it from git
    (PEP 610's direct_url.json), else its version."""
    distribution = metadata.distribution("gpucloud")
    direct = distribution.read_text("direct_url.json")
    if direct:
        origin = json.loads(direct)
        vcs = origin.get("vcs_info", {})
        if vcs.get("vcs") == "git" and vcs.get("commit_id"):
            return f"gpucloud @ git+{origin['url']}@{vcs['commit_id']}"
    return f"gpucloud=={distribution.version}"


def with_extra(requirement: str, extra: str) -> str:
    """The same requirement with the one extra (`gpucloud[plan] @ git+…` -> `gpucloud[policy] @ git+…`)."""
    return re.sub(r"^\s*gpucloud(\[[^\]]*\])?", f"gpucloud[{extra}]", requirement, count=1)


def repository_files(name: str, stack: str, requirement: str | None) -> dict[str, str]:
    """Each file of the new repository, by its path relative to the repository."""
    from gpucloud.config.schema import packaged_schema_text

    requirement = requirement or installed_requirement()
    return {
        "Pulumi.yaml": PULUMI_PROJECT.format(name=name),
        "__main__.py": PROGRAM,
        "requirements.txt": REQUIREMENTS.format(requirement=with_extra(requirement, "plan")),
        f"stacks/Pulumi.{stack}.yaml": STACK_FILE.format(stack=stack),
        "stacks/stack-config.schema.json": packaged_schema_text(),
        "policies/PulumiPolicy.yaml": POLICY_PROJECT,
        "policies/__main__.py": POLICY_PROGRAM,
        "policies/requirements.txt": POLICY_REQUIREMENTS.format(requirement=with_extra(requirement, "policy")),
        ".github/workflows/plan.yml": PLAN_WORKFLOW.format(),
    }


def init_repository(arguments: argparse.Namespace) -> int:
    """Write the files, or none of them when one already exists."""
    directory = Path(arguments.directory)
    stack = arguments.stack or directory.resolve().name
    if not STACK_NAME.fullmatch(stack):
        print(f"error: stack name {stack!r}: 2 to 24 lowercase letters, digits and hyphens, starting with a "
              "letter (pass --stack NAME)", file=sys.stderr)
        return PLAN_BAD_INPUT
    files = repository_files(directory.resolve().name, stack, arguments.requirement)
    existing = [path for path in files if (directory / path).exists()]
    if existing:
        print(f"error: {directory}: {', '.join(existing)} already exist; gpucloud init writes only new files",
              file=sys.stderr)
        return PLAN_BAD_INPUT
    for path, text in files.items():
        (directory / path).parent.mkdir(parents=True, exist_ok=True)
        (directory / path).write_text(text, encoding="utf-8")
        print(f"wrote {directory / path}", file=sys.stderr)
    print(f"next: cd {directory} && gpucloud plan --stack {stack}", file=sys.stderr)
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    """Add `init`."""
    init = commands.add_parser(
        "init",
        help="write a new repository's Pulumi project, example stack, policy pack and CI plan workflow",
        epilog="it refuses to overwrite: an existing file among those it writes stops it before it writes any",
    )
    init.add_argument("directory", help="the repository's folder (created when missing)")
    init.add_argument("--stack", help="the example stack's name (default: the folder's name)")
    init.add_argument(
        "--requirement",
        help="how the requirements name gpucloud (default: this install's git commit, else its version), e.g. "
        "'gpucloud @ git+https://github.com/OWNER/REPO@main'; the plan and policy extras are added",
    )
    init.set_defaults(handler=init_repository)
