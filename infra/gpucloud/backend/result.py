"""What a bootstrap leaves behind, as the user needs it: the backend URL, the secrets provider, and
the lines to run next.

URL forms (Pulumi docs):
- login: "Using a DIY Backend", AWS S3 section:
  `pulumi login 's3://<bucket-name>?region=us-east-1&awssdk=v2&profile=<profile-name>'`
- secrets provider: `pulumi stack init` reference:
  `pulumi stack init --secrets-provider="awskms://alias/ExampleAlias?region=us-east-1"`
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpucloud.backend.names import validate_stack_name


@dataclass(frozen=True)
class BootstrapResult:
    """Where the state and the secrets key live, what this run changed, and the commands that use them."""

    bucket: str
    region: str
    key_arn: str
    key_alias: str
    created: list[str] = field(default_factory=list)

    @property
    def backend_url(self) -> str:
        """The DIY backend URL; `awssdk=v2` makes the CLI honour `region` (Pulumi CLI v3.33.1+)."""
        return f"s3://{self.bucket}?region={self.region}&awssdk=v2"

    @property
    def secrets_provider(self) -> str:
        return f"awskms://{self.key_alias}?region={self.region}"

    @property
    def login_command(self) -> str:
        # Quoted because the shell would otherwise split the URL at `&`.
        return f"pulumi login '{self.backend_url}'"

    def stack_init_command(self, stack: str) -> str:
        """The `pulumi stack init` line that makes the stack encrypt its secrets with the backend's key."""
        validate_stack_name(stack)
        return f"pulumi stack init {stack} --secrets-provider '{self.secrets_provider}'"


def deploy_lines(stack: str) -> list[str]:
    """What a newcomer runs after `stack init`: select the stack, preview it with the policy pack, deploy it."""
    return [f"pulumi stack select {stack}", "pulumi preview --policy-pack policies", "pulumi up --policy-pack policies"]


def format_instructions(result: BootstrapResult, stacks: list[str]) -> str:
    """The lines to print after a bootstrap: how to log in, and how to create each stack."""
    if stacks:
        init_lines = [f"  {result.stack_init_command(stack)}" for stack in stacks]
    else:
        init_lines = [f"  pulumi stack init <stack> --secrets-provider '{result.secrets_provider}'"]
    return "\n".join(
        [
            f"Pulumi state backend: s3://{result.bucket} ({result.region}), secrets key {result.key_alias}",
            "",
            "Log in to the backend:",
            f"  {result.login_command}",
            "",
            "Create each stack with the KMS secrets provider:",
            *init_lines,
            "",
            "`pulumi stack init` writes `secretsprovider:` and `encryptedkey:` into Pulumi.<stack>.yaml;",
            "commit those lines with the stack file, they are how the stack finds and unwraps its secrets key.",
            "",
            "Then preview and deploy a stack, with the review gate's policy pack:",
            *(f"  {line}" for line in deploy_lines(stacks[0] if stacks else "<stack>")),
        ]
    )
