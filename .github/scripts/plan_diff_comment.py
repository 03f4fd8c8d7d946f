"""The pull request's offline diff, as one comment updated in place (stdlib only).

`collect` runs `gpucloud plan --config FILE --base BASE` for every stack file the checked-out
commit changes against BASE and writes the comment (comment.md) and the exit status; it runs in the unprivileged
`pull_request` job, with the pull request's code and no credentials. `post` runs in the
`workflow_run` follow-up, with a token that may write comments, and only reads the comment as
text: it never runs anything from the pull request. It finds the pull request from the event's
head commit and repository (not from the artifact, which the pull request's code wrote), and
edits the bot's earlier comment, found by its marker, instead of adding another.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

MARKER = "<!-- gpucloud-plan-diff -->"
BOT = "github-actions[bot]"
LIMIT = 60000
"""GitHub refuses a comment body over 65,536 characters."""
STACK_FILES = ("stacks/Pulumi.*.yaml", "stacks/*/Pulumi.*.yaml")


def changed_stack_files(base: str, head: str) -> tuple[list[str], list[str]]:
    """(added or modified, deleted) stack files between `base` and `head`. In a `pull_request` run
    the checkout is the pull request merged into its base branch, so base..HEAD is exactly what
    merging it changes, even when the base branch moved on."""
    listed = subprocess.run(["git", "diff", "--name-status", "--no-renames", base, head],
                            capture_output=True, text=True, check=True).stdout
    changed, deleted = [], []
    for line in listed.splitlines():
        status, _, path = line.partition("\t")
        if any(fnmatch.fnmatch(path, pattern) and path.count("/") == pattern.count("/") for pattern in STACK_FILES):
            (deleted if status == "D" else changed).append(path)
    return sorted(changed), sorted(deleted)


def collect(arguments: argparse.Namespace) -> int:
    changed, deleted = changed_stack_files(arguments.base, arguments.head)
    sections, failed = [], False
    for path in changed:
        command = [*arguments.gpucloud.split(), "plan", "--config", path, "--base", arguments.base, "--width", "160"]
        policy = Path("policies/config") / f"{Path(path).name[len('Pulumi.'):-len('.yaml')]}.json"
        if policy.is_file():
            command += ["--policy-config", str(policy)]
        run = subprocess.run(command, capture_output=True, text=True, check=False)
        failed |= run.returncode != 0
        verdict = {0: "no blocking finding", 1: "**blocked**: a mandatory finding (see Findings)"}.get(
            run.returncode, f"**plan failed** (exit {run.returncode})")
        text = (run.stdout + ("\n" + run.stderr if run.stderr.strip() else "")).strip()
        sections.append(f"### `{path}`: {verdict}\n\n<details open><summary>gpucloud plan --config {path} --base "
                        f"{arguments.base[:12]}</summary>\n\n```diff\n{text}\n```\n</details>\n")
    for path in deleted:
        sections.append(f"### `{path}`: deleted\n\nThe stack file is removed; its stack is not destroyed by this "
                        "change (`pulumi destroy` does that).\n")
    if not sections:
        sections.append("No stack file changes in this pull request.\n")
    body = f"{MARKER}\n## Offline plan of this change (moto engine, no AWS credentials)\n\n" + "\n".join(sections)
    if len(body) > LIMIT:
        body = body[:LIMIT] + "\n```\n\n(cut at 60,000 characters: the job log has the whole plan)\n"
    out = Path(arguments.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "comment.md").write_text(body, encoding="utf-8")
    return 1 if failed else 0


def _call(method: str, url: str, token: str, payload: dict | None = None):
    request = urllib.request.Request(url, method=method, data=None if payload is None else json.dumps(payload).encode(),
                                     headers={"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
                                              "X-GitHub-Api-Version": "2022-11-28"})
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - the GitHub API URL of the run
        return json.loads(response.read() or b"null")


def _pages(url: str, token: str):
    page = 1
    while True:
        items = _call("GET", f"{url}{'&' if '?' in url else '?'}per_page=100&page={page}", token)
        yield from items
        if len(items) < 100:
            return
        page += 1


def post(arguments: argparse.Namespace) -> int:
    api = os.environ.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
    token = os.environ["GITHUB_TOKEN"]
    body = Path(arguments.body).read_text(encoding="utf-8")[:LIMIT + 200]
    if not body.startswith(MARKER):
        print("the comment does not start with the plan marker: not posted", file=sys.stderr)
        return 1
    numbers = [pull["number"] for pull in _pages(f"{api}/repos/{arguments.repo}/pulls?state=open", token)
               if pull["head"]["sha"] == arguments.head_sha and (pull["head"].get("repo") or {}).get("full_name") == arguments.head_repo]
    if len(numbers) != 1:
        print(f"{len(numbers)} open pull requests have head {arguments.head_repo}@{arguments.head_sha}: nothing posted")
        return 0
    comments = f"{api}/repos/{arguments.repo}/issues/{numbers[0]}/comments"
    earlier = [comment for comment in _pages(comments, token)
               if comment["user"]["login"] == BOT and comment["body"].startswith(MARKER)]
    if earlier:
        _call("PATCH", f"{api}/repos/{arguments.repo}/issues/comments/{earlier[0]['id']}", token, {"body": body})
        print(f"updated comment {earlier[0]['id']} on #{numbers[0]}")
    else:
        _call("POST", comments, token, {"body": body})
        print(f"commented on #{numbers[0]}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    gather = commands.add_parser("collect", help="plan every changed stack file against the base; write comment.md")
    gather.add_argument("--base", required=True)
    gather.add_argument("--head", default="HEAD", help="the change: the checked-out commit, whose files are planned")
    gather.add_argument("--out", required=True)
    gather.add_argument("--gpucloud", default=".venv/bin/gpucloud", help="the gpucloud command")
    gather.set_defaults(handler=collect)
    send = commands.add_parser("post", help="create or update the pull request's plan comment")
    send.add_argument("--repo", required=True)
    send.add_argument("--head-sha", required=True)
    send.add_argument("--head-repo", required=True)
    send.add_argument("--body", required=True)
    send.set_defaults(handler=post)
    arguments = parser.parse_args(argv)
    return arguments.handler(arguments)


if __name__ == "__main__":
    sys.exit(main())
