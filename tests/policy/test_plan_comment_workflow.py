"""The pull request's offline diff comment: the script both workflows run, against a throwaway
git repository with two commits and a local stand-in for GitHub's REST API; and the split that
keeps the pull request's code away from the token that may write comments."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / ".github" / "scripts" / "plan_diff_comment.py"
GPUCLOUD = Path(sys.executable).parent / "gpucloud"


def script():
    spec = importlib.util.spec_from_file_location("plan_diff_comment", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def git(folder: Path, *arguments: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *arguments], cwd=folder,
                          capture_output=True, text=True, check=True).stdout.strip()


def test_collect_plans_each_changed_stack_file_against_the_base(tmp_path):
    (tmp_path / "stacks").mkdir()
    stack = tmp_path / "stacks" / "Pulumi.notebooks.yaml"
    stack.write_text((REPO / "stacks" / "Pulumi.notebooks.yaml").read_text())
    (tmp_path / "README.md").write_text("x\n")
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "base")
    base = git(tmp_path, "rev-parse", "HEAD")
    document = yaml.safe_load(stack.read_text())
    document["config"]["gpu-cloud:groups"][0]["rootVolumeGiB"] = 150
    stack.write_text(yaml.safe_dump(document))
    (tmp_path / "README.md").write_text("y\n")
    git(tmp_path, "commit", "-qam", "change")
    run = subprocess.run([sys.executable, str(SCRIPT), "collect", "--base", base, "--head", "HEAD", "--out", "out",
                          "--gpucloud", str(GPUCLOUD)], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    body = (tmp_path / "out" / "comment.md").read_text()
    assert body.startswith("<!-- gpucloud-plan-diff -->") and body.count("### ") == 1
    assert "### `stacks/Pulumi.notebooks.yaml`: no blocking finding" in body
    assert "blockDeviceMappings[0].ebs.volumeSize: 100 => 150" in body
    assert "warning [diff: rolling-refresh]" in body and "README" not in body


class FakeGitHub(BaseHTTPRequestHandler):
    comments: list[dict] = []
    calls: list[tuple[str, str]] = []

    def _answer(self, payload) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802 - http.server's method name
        self.calls.append(("GET", self.path))
        if self.path.startswith("/repos/o/r/pulls"):
            self._answer([{"number": 7, "head": {"sha": "abc", "repo": {"full_name": "fork/r"}}},
                          {"number": 8, "head": {"sha": "abc", "repo": {"full_name": "o/r"}}}])
        else:
            self._answer(self.comments)

    def _body(self) -> dict:
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))

    def do_POST(self):  # noqa: N802
        self.calls.append(("POST", self.path))
        self.comments.append({"id": 99, "user": {"login": "github-actions[bot]"}, "body": self._body()["body"]})
        self._answer({})

    def do_PATCH(self):  # noqa: N802
        self.calls.append(("PATCH", self.path))
        self.comments[-1]["body"] = self._body()["body"]
        self._answer({})

    def log_message(self, *arguments) -> None:
        pass


@pytest.fixture
def github(monkeypatch):
    server = HTTPServer(("127.0.0.1", 0), FakeGitHub)
    FakeGitHub.comments = [{"id": 5, "user": {"login": "someone"}, "body": "<!-- gpucloud-plan-diff --> not ours"}]
    FakeGitHub.calls = []
    threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()  # stops within 10 ms, not 0.5 s
    monkeypatch.setenv("GITHUB_API_URL", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setenv("GITHUB_TOKEN", "token")
    yield FakeGitHub
    server.shutdown()


def test_post_comments_once_then_edits_its_own_comment_on_the_fork_pull_request(github, tmp_path):
    body = tmp_path / "comment.md"
    post = ["post", "--repo", "o/r", "--head-sha", "abc", "--head-repo", "fork/r", "--body", str(body)]
    body.write_text("<!-- gpucloud-plan-diff -->\nfirst")
    assert script().main(post) == 0
    body.write_text("<!-- gpucloud-plan-diff -->\nsecond")
    assert script().main(post) == 0
    writes = [call for call in github.calls if call[0] != "GET"]
    assert writes == [("POST", "/repos/o/r/issues/7/comments"), ("PATCH", "/repos/o/r/issues/comments/99")]
    assert [comment["body"] for comment in github.comments] == [
        "<!-- gpucloud-plan-diff --> not ours", "<!-- gpucloud-plan-diff -->\nsecond"]


def test_the_commenting_workflow_never_runs_the_pull_requests_code():
    preview = yaml.safe_load((REPO / ".github" / "workflows" / "preview.yml").read_text())
    comment = yaml.safe_load((REPO / ".github" / "workflows" / "plan-comment.yml").read_text())
    assert list(preview.get("on", preview.get(True))) == ["pull_request"]
    assert preview["permissions"] == {"contents": "read"}
    assert comment.get("on", comment.get(True)) == {"workflow_run": {"workflows": ["preview"], "types": ["completed"]}}
    [job] = comment["jobs"].values()
    checkout = next(step for step in job["steps"] if step.get("uses", "").startswith("actions/checkout"))
    assert "ref" not in checkout["with"] and "repository" not in checkout["with"]  # the default branch's own code
    assert job["permissions"] == {"actions": "read", "pull-requests": "write"}
    runs = " ".join(step.get("run", "") for step in job["steps"])
    assert "gpucloud" not in runs.replace("plan_diff_comment.py", "") and "pip" not in runs
