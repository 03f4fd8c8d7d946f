"""What a group's nodes serve once the health gate has passed: JupyterLab, TensorBoard and
container services (`groups[].services`).

The default AMI (Deep Learning Base OSS Nvidia Driver GPU AMI, Ubuntu 22.04) carries Docker and the
NVIDIA container toolkit (its release notes list `nvidia_container_toolkit_version`, docker-ce and
containerd among the installed packages) but no JupyterLab, no TensorBoard and no ML framework
(https://docs.aws.amazon.com/dlami/latest/devguide/appendix-ami-release-notes.html, read
2026-11-25). So JupyterLab and TensorBoard come from PyPI at the service's first start
(`install: pip`), or from an image of your own that has them (`install: image` with `amiId`), and
container images come from a registry the nodes can reach: without the internet
(`network.egress: endpointsOnly`) only the account's ECR in the stack's region, through its
endpoints.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator

from gpucloud.config.weights import WeightsConfig
from gpucloud.config.fields import ConfigModel, JsonShape, ResourceName, json_pattern, shaped

if TYPE_CHECKING:
    from gpucloud.config.access import DataConfig

JUPYTER_PORT = 8888
TENSORBOARD_PORT = 6006
RESERVED_PORTS = {22: "SSH", JUPYTER_PORT: "JupyterLab", TENSORBOARD_PORT: "TensorBoard",
                  9835: "the node's GPU exporter", 9836: "the node's readings endpoint"}
"""Host ports a container service may not publish: taken on every node or by the other services."""

ECR_REPOSITORY = (
    r"(?P<account>[0-9]{12})\.dkr\.ecr(?:-fips)?\.(?P<region>[a-z]{2}(?:-gov)?-[a-z]+-[0-9])\.amazonaws\.com(?:\.cn)?"
    r"/(?P<repository>[a-z0-9][a-z0-9._/-]{1,255})"
)
"""A private ECR repository, `<account>.dkr.ecr.<region>.amazonaws.com/<repository>`."""
ECR_IMAGE = re.compile(ECR_REPOSITORY + r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}|@sha256:[0-9a-f]{64})")
"""A private ECR image: `<account>.dkr.ecr.<region>.amazonaws.com/<repository>:<tag>` or `@sha256:<digest>`
(ECR user guide, "Pulling an image", and the repository name pattern of CreateRepository,
`(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*`, botocore ecr model, read 2026-11-25)."""

IMAGE_REFERENCE = (
    r"(?:[a-z0-9.-]+(?::[0-9]+)?/)?[a-z0-9][a-z0-9._/-]*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}|@sha256:[0-9a-f]{64})"
)
ImageReference = Annotated[str, shaped(
    IMAGE_REFERENCE, "use a pinned image reference, [registry/]repository:tag or [registry/]repository@sha256:<digest>", 400)]
EnvName = Annotated[str, shaped(r"[A-Za-z_][A-Za-z0-9_]*", "use letters, digits and _, not starting with a digit", 128)]
EnvValue = Annotated[str, StringConstraints(max_length=1024),
                     JsonShape(pattern="^[^\\u0000]*$", patternErrorMessage="values must not contain NUL characters")]
Argument = Annotated[str, StringConstraints(min_length=1, max_length=1024)]
RESERVED_PARAMETER_START = "[Aa][Ww][Ss]|[Ss][Ss][Mm]"
"""aws or ssm in any case, spelt without an inline flag so that JSON Schema's patterns can say it too."""
SSM_PARAMETER = re.compile(rf"(?!{RESERVED_PARAMETER_START})[A-Za-z0-9_.-]+"
                           rf"|(?:/(?!{RESERVED_PARAMETER_START})[A-Za-z0-9_.-]+)(?:/[A-Za-z0-9_.-]+){{0,14}}")
"""A parameter name as PutParameter takes it: letters, digits and `_.-`, `/` between up to fifteen
levels with a leading `/` for a hierarchy, not starting with aws or ssm, 2048 characters at most (botocore ssm
model, PutParameter Name and PSParameterName; read 2026-11-28)."""
SECRET_NAME = re.compile(r"[A-Za-z0-9/_+=.@-]{1,512}")
"""A secret name as CreateSecret takes it: ASCII letters, digits and `/_+=.@-`, 512 characters at most
(botocore secretsmanager model, CreateSecret Name and NameType; read 2026-11-28)."""
SECRET_ARN = re.compile(r"arn:aws[a-z-]*:secretsmanager:[a-z]{2}(?:-gov)?-[a-z]+-[0-9]:[0-9]{12}:secret:"
                        r"[A-Za-z0-9/_+=.@-]{1,512}-[A-Za-z0-9]{6}")
"""A secret's whole ARN: its name, then the hyphen and six characters Secrets Manager appends (the
same model's CreateSecret ARN; a partial ARN matches no IAM resource)."""
SECRET_REFERENCE = (rf"ssm:(?=.{{1,2048}}$)(?:{SSM_PARAMETER.pattern})"
                    rf"|secretsmanager:(?:{SECRET_ARN.pattern}|{SECRET_NAME.pattern})")
"""`secret_reference_problem`'s shapes as one pattern, for the JSON Schema."""
SecretReference = Annotated[
    str, StringConstraints(min_length=5, max_length=2100), JsonShape(
        pattern=json_pattern(SECRET_REFERENCE),
        patternErrorMessage="expected ssm:<parameter name> or secretsmanager:<secret name or whole ARN>")
]
SECRET_LOOKING_WORDS = ("SECRET", "PASSWORD", "PASSWD", "TOKEN", "ACCESS_KEY", "PRIVATE_KEY", "CREDENTIAL")
SECRET_LOOKING = re.compile("|".join(SECRET_LOOKING_WORDS), re.IGNORECASE)
SECRET_LOOKING_NAME = "|".join("".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in word)
                               for word in SECRET_LOOKING_WORDS)
"""SECRET_LOOKING without its flag, for the JSON Schema's env names."""
LocalPath = Annotated[str, shaped(r"/[A-Za-z0-9._\-/]*", "use an absolute path of letters, digits and . _ - /", 200)]
Install = Literal["pip", "image"]
"""pip: the node installs a pinned release from PyPI into its own virtual environment at the
service's first start (needs the internet); image: the group's AMI (`amiId`) already has it."""


class JupyterConfig(ConfigModel):
    """JupyterLab on port 8888, started by the node agent after the health gate. Its token lives in
    SSM Parameter Store (SecureString, the project key): `gpucloud connect` says how to read it."""

    install: Install = "pip"
    """pip: the node installs a pinned JupyterLab from PyPI at the service's first start (needs the internet, so
    not with egress endpointsOnly); image: the group's own AMI (amiId) has it."""
    root_dir: LocalPath | None = None
    """Where notebooks live. Default: /persist/home on a group with persistentVolumeGiB (it survives
    the node), else /data/home with dataVolumeGiB, else the home of the image's login user (/home/ubuntu on the
    default image, /home/ec2-user on Amazon Linux 2023)."""
    user_policy: bool = False
    """Create a managed policy for this group's notebook user (`gpu-cloud-<base>-<group>-notebook`):
    start a Session Manager session to this group's nodes, read its token, raise it from zero; nothing
    of another group (documents/notebooks.py). Attaching it is left to the account."""


class TensorBoardConfig(ConfigModel):
    """TensorBoard on port 6006, reading an S3 prefix the nodes may read, or a local directory."""

    install: Install = "pip"
    """pip: the node installs a pinned TensorBoard from PyPI at the service's first start (needs the internet, so
    not with egress endpointsOnly); image: the group's own AMI (amiId) has it."""
    log_dir: Annotated[str, shaped(r"(s3://[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]/[A-Za-z0-9._\-=/]*|/[A-Za-z0-9._\-/]*)",
                                   "use s3://<data.bucket>/<prefix>/ or an absolute local path", 300)] | None = None
    """Default: `s3://<data.bucket>/<the first of data.writePrefixes>`."""


class HealthCheckConfig(ConfigModel):
    """An HTTP GET on the service's port that the node agent polls; a load balancer uses the same path."""

    path: Annotated[str, shaped(r"/[A-Za-z0-9._~\-/?=&%]*", "use a URL path starting with /", 255)] = "/"
    """The URL path the node agent GETs on the service's port; an answer of 2xx or 3xx is healthy."""
    interval_seconds: int = Field(default=30, ge=5, le=300)
    """Seconds between two checks."""
    timeout_seconds: int = Field(default=5, ge=2, le=120)
    """Seconds one check may take; below intervalSeconds."""
    unhealthy_threshold: int = Field(default=3, ge=2, le=10)
    """Failed checks in a row, past startPeriodSeconds, after which the agent stops the container (systemd then
    restarts it per restartPolicy)."""
    start_period_seconds: int = Field(default=600, ge=0, le=3600)
    """How long a starting service (a model server loading weights) may fail checks without counting."""

    @model_validator(mode="after")
    def timeout_within_interval(self) -> HealthCheckConfig:
        if self.timeout_seconds >= self.interval_seconds:
            raise ValueError(f"timeoutSeconds {self.timeout_seconds} must be below intervalSeconds {self.interval_seconds}")
        return self


class ContainerConfig(ConfigModel):
    """One container service, run by systemd with Docker and the NVIDIA container runtime on the
    default bridge network (its port published on the node), restarted per `restartPolicy`."""

    name: ResourceName
    """The service's name, unique in the group: its systemd unit is `gpucloud-container@<name>` and its container
    `gpucloud-<name>`."""
    image: Annotated[ImageReference, JsonShape(
        pattern=json_pattern(rf"(?!.*:latest$)(?:{IMAGE_REFERENCE})"),
        patternErrorMessage="use a pinned image, [registry/]repository:tag (not latest) or @sha256:<digest>")]
    """A pinned image, `[registry/]repository:tag` or `@sha256:<digest>` (the tag latest is refused); with egress
    endpointsOnly, only this account's ECR in the stack's region."""
    command: list[Argument] | None = Field(default=None, min_length=1, max_length=64)
    """Arguments given after the image, as an argv list (no shell): they replace the image's CMD."""
    env: Annotated[dict[EnvName, EnvValue], JsonShape(propertyNames={
        "pattern": json_pattern(rf"(?!.*(?:{SECRET_LOOKING_NAME}))[A-Za-z_][A-Za-z0-9_]*"),
        "patternErrorMessage": "use letters, digits and _; a name that looks like a secret (TOKEN, SECRET, "
                               "PASSWORD, ...) goes in secretEnv"})] = Field(default_factory=dict, max_length=50)
    """Environment variables, name to value. Values travel in clear in the launch template's user data, so names
    that look like secrets (TOKEN, SECRET, PASSWORD, ...) are refused: give those in secretEnv."""
    secret_env: dict[EnvName, SecretReference] = Field(default_factory=dict, max_length=20)
    """Environment variables read at each container start with the node role, name to reference:
    `ssm:<parameter name>` (a SecureString) or `secretsmanager:<secret name or whole ARN>`, in the stack's
    region. The node role may read exactly these (and decrypt them through SSM or Secrets Manager);
    the values never reach user data, logs or the stack's state."""
    gpus: Annotated[int, JsonShape(minimum=0, maximum=16)] | Literal["all"] = "all"
    """GPUs the container sees: all, or a count from 0 (none) to 16."""
    port: int | None = Field(default=None, ge=1, le=65535, json_schema_extra={"not": {"enum": sorted(RESERVED_PORTS)}})
    """The port the service listens on, published on the node as the same port; unique in the group, not 22, 8888,
    6006, 9835 or 9836. A healthCheck and an endpoint need it."""
    health_check: HealthCheckConfig | None = None
    restart_policy: Literal["always", "on-failure", "no"] = "always"
    """When systemd restarts the container after it exits or is stopped for failing its health check."""
    image_size_gib: float | None = Field(default=None, gt=0, le=1024, alias="imageSizeGiB")
    """The image's compressed size in GiB (what the registry stores: ECR's imageSizeInBytes), which the plan's
    cold-start budget pulls at a documented rate. Unset: the pull is not estimated."""
    weights: WeightsConfig | None = None

    @field_validator("image")
    @classmethod
    def image_is_pinned(cls, image: str) -> str:
        if image.endswith(":latest"):
            raise ValueError(f"{image!r} names the tag latest, which moves: nodes launched on different days would run "
                             "different images; pin a version tag or a digest")
        return image

    @field_validator("gpus")
    @classmethod
    def gpu_count_is_sane(cls, gpus: int | str) -> int | str:
        if isinstance(gpus, int) and not 0 <= gpus <= 16:
            raise ValueError(f"{gpus} is not a GPU count: use 0 to 16, or all")
        return gpus

    @field_validator("port")
    @classmethod
    def port_is_free(cls, port: int | None) -> int | None:
        if port in RESERVED_PORTS:
            raise ValueError(f"{port} is taken by {RESERVED_PORTS[port]} on every node; publish another port")
        return port

    @field_validator("env")
    @classmethod
    def env_holds_no_secret(cls, env: dict[str, str]) -> dict[str, str]:
        """Values travel in the launch template's user data, readable by anyone who may describe it."""
        secret = sorted(name for name in env if SECRET_LOOKING.search(name))
        if secret:
            raise ValueError(f"{', '.join(secret)} looks like a secret, and env values travel in clear in the launch "
                             "template's user data: keep it in SSM Parameter Store or Secrets Manager and name it in "
                             "secretEnv (ssm:<parameter name> or secretsmanager:<secret name>)")
        if any("\x00" in value for value in env.values()):
            raise ValueError("values must not contain NUL characters")
        return env

    @field_validator("secret_env")
    @classmethod
    def secret_references_are_well_formed(cls, secret_env: dict[str, str]) -> dict[str, str]:
        for name, reference in sorted(secret_env.items()):
            problem = secret_reference_problem(reference)
            if problem:
                raise ValueError(f"{name}: {problem}")
        return secret_env

    @model_validator(mode="after")
    def secret_env_names_are_not_env_names(self) -> ContainerConfig:
        both = sorted(set(self.env) & set(self.secret_env))
        if both:
            raise ValueError(f"{', '.join(both)} is in both env and secretEnv: keep it in one")
        return self

    @model_validator(mode="after")
    def health_check_needs_a_port(self) -> ContainerConfig:
        if self.health_check is not None and self.port is None:
            raise ValueError("healthCheck polls the service's port: give port")
        return self

    @property
    def ecr(self) -> re.Match[str] | None:
        """The image's ECR account, region and repository, when it is a private ECR image."""
        return ECR_IMAGE.fullmatch(self.image)


def secret_reference_problem(reference: str) -> str | None:
    """What is wrong with a `secretEnv` reference's shape, or None: that the parameter or secret
    exists and is readable is a fact of the account, which the plan does not check."""
    source, _, identifier = reference.partition(":")
    if source == "ssm":
        if len(identifier) <= 2048 and SSM_PARAMETER.fullmatch(identifier):
            return None
        return (f"{identifier!r} is not an SSM parameter name: letters, digits and _.- with / between up to 15 "
                "levels (a hierarchy starts with /), not starting with aws or ssm")
    if source == "secretsmanager":
        if identifier.startswith("arn:"):
            return None if SECRET_ARN.fullmatch(identifier) else (
                f"{identifier!r} is not a whole secret ARN (arn:<partition>:secretsmanager:<region>:<account>:secret:"
                "<name>-<6 characters>): give the whole ARN or the secret's name")
        return None if SECRET_NAME.fullmatch(identifier) else (
            f"{identifier!r} is not a secret name: up to 512 ASCII letters, digits and /_+=.@-")
    return f"{reference!r} names no store: use ssm:<parameter name> or secretsmanager:<secret name or ARN>"


class ServicesConfig(ConfigModel):
    """What a group's nodes serve. Nothing by default: the boot path adds only what is asked for."""

    jupyter: JupyterConfig | None = None
    tensorboard: TensorBoardConfig | None = None
    containers: list[ContainerConfig] = Field(default_factory=list, max_length=8)
    """Container services, with unique names and ports."""

    @field_validator("containers")
    @classmethod
    def names_and_ports_are_unique(cls, containers: list[ContainerConfig]) -> list[ContainerConfig]:
        names = [container.name for container in containers]
        ports = [container.port for container in containers if container.port is not None]
        for what, values in (("name", names), ("port", ports)):
            repeated = sorted({str(value) for value in values if values.count(value) > 1})
            if repeated:
                raise ValueError(f"two containers share the {what} {', '.join(repeated)}")
        return containers

    @property
    def any(self) -> bool:
        return bool(self.jupyter or self.tensorboard or self.containers)

    @property
    def ecr_images(self) -> list[re.Match[str]]:
        return [match for match in (container.ecr for container in self.containers) if match]

    def port_of(self, port: int) -> ContainerConfig | None:
        """The container service that publishes `port` (the endpoint's target), if any."""
        return next((container for container in self.containers if container.port == port), None)


def tensorboard_log_dir(data: DataConfig | None, tensorboard: TensorBoardConfig) -> str:
    """The directory TensorBoard reads: the given logDir, else the stack's first write prefix."""
    if tensorboard.log_dir:
        return tensorboard.log_dir
    assert data is not None and data.write_prefixes, "service_problems refuses this"
    return f"s3://{data.bucket}/{data.write_prefixes[0]}"


def token_parameter_arn(partition: str, region: str, account_id: str, name: str) -> str:
    """A parameter's ARN: its name already starts with `/`."""
    return f"arn:{partition}:ssm:{region}:{account_id}:parameter{name}"
