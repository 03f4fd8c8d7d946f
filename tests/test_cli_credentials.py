"""A live command run without AWS credentials says how to give it some, not only botocore's
"Unable to locate credentials" (a newcomer's first `account snapshot` or `run` ends there)."""

from __future__ import annotations

import pytest
import yaml
from botocore.exceptions import ClientError, NoCredentialsError

from gpucloud.cli import main
from gpucloud.cli.common import aws_failure
from support import minimal_config


def test_missing_credentials_say_how_to_give_them():
    message = aws_failure(NoCredentialsError())
    assert message.startswith("Unable to locate credentials")
    assert "AWS_PROFILE" in message and "aws sso login" in message


def test_expired_credentials_say_to_sign_in_again():
    error = ClientError({"Error": {"Code": "ExpiredTokenException", "Message": "The security token included in the request is expired"}},
                        "DescribeAutoScalingGroups")
    assert "sign in again" in aws_failure(error)


def test_other_failures_keep_aws_words_alone():
    error = ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "DescribeAutoScalingGroups")
    assert aws_failure(error) == str(error)


@pytest.mark.parametrize("command", [["jobs"], ["connect", "--print"]])
def test_a_live_command_without_credentials_says_how_to_give_them(tmp_path, monkeypatch, capsys, command):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    stack = tmp_path / "Pulumi.demo.yaml"
    stack.write_text(yaml.safe_dump({"config": {"aws:region": "us-east-1",
                                                **{f"gpu-cloud:{key}": value for key, value in minimal_config().items()}}}))

    assert main([*command, "--config", str(stack)]) == 3

    printed = capsys.readouterr()
    assert "Unable to locate credentials" in printed.err and "AWS_PROFILE" in printed.err, printed.err
    assert printed.out == "", "nothing on stdout (no table header) when the listing failed"
