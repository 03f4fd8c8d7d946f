"""How the engine maps Pulumi resource types and invokes onto AWS API calls."""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import boto3
import botocore
from botocore.config import Config
from botocore.exceptions import ClientError

from gpucloud.testing import service_model


class UnsupportedResourceError(Exception):
    """The engine has no AWS mapping for this resource type or invoke: it never passes silently."""

    def __init__(self, kind: str, token: str):
        super().__init__(
            f"gpucloud.testing cannot apply {kind} {token!r}: no moto mapping exists for it. "
            "Register a handler for it (gpucloud.testing.register_resource / register_invoke), keep the "
            "type out of the program, or plan with --record-unknown-types to record it unvalidated."
        )
        self.token = token


class BrokenReferenceError(Exception):
    """An input names an AWS object that does not exist in the account (what AWS would refuse)."""


def assume_security_group(account: Account, group_id: str) -> None:
    """Create the group in moto under `group_id` (moto draws group ids from a module function and
    takes no custom one), in the default VPC, and mark it assumed."""
    import moto.ec2.models.security_groups as groups

    original = groups.random_security_group_id
    groups.random_security_group_id = lambda: group_id
    try:
        account.client("ec2").create_security_group(GroupName=group_id, Description="assumed: no account facts")
    finally:
        groups.random_security_group_id = original
    account.assumed_security_groups.add(group_id)


def refused(operation: str, code: str, message: str) -> ClientError:
    """The error AWS answers a call with that moto would accept: the engine raises it where it
    checks a rule moto does not (each caller cites the AWS documentation of its rule)."""
    return ClientError({"Error": {"Code": code, "Message": message}}, operation)


@dataclass
class Created:
    """What a handler made: the physical id, outputs to merge over the inputs, and whether moto
    checked it (False where moto lacks the API and the engine only records the resource)."""

    id: str
    outputs: dict[str, Any] = field(default_factory=dict)
    validated: bool = True
    note: str = ""


@dataclass
class Account:
    """boto3 clients on the in-process moto account, for one region."""

    region: str
    session: boto3.Session
    _clients: dict[str, Any] = field(default_factory=dict)
    _account_id: str | None = field(default=None, repr=False)
    quotas: dict[str, float] = field(default_factory=dict)
    """EC2 quota code -> applied value, from account facts (moto has no EC2 quotas)."""
    capacity_reservations: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Reservation id -> what DescribeCapacityReservations says of it (ODCRs and Capacity Blocks):
    moto has neither, so the engine keeps them, seeded from account facts, and answers lookups."""
    capacity_block_offerings: list[dict[str, Any]] = field(default_factory=list)
    """What DescribeCapacityBlockOfferings would offer, from account facts."""
    image_deprecations: dict[str, str] = field(default_factory=dict)
    """Image id -> deprecation time (ISO 8601, UTC): moto has no EnableImageDeprecation, so the
    engine keeps them and its image lookups answer as EC2 does (`deprecate_image`)."""
    assumed_roles: set[str] = field(default_factory=set)
    """Service-linked roles no account fact says exist or not: they exist in moto, so that the
    policies naming them are taken, and their lookups answer "not known" (`seed_account`)."""
    ecr_repositories_known: bool = False
    """Whether account facts list the stack's ECR repositories: then one missing from moto does not
    exist, else it is not known (`seed_account`)."""
    security_groups_known: bool = False
    """Whether account facts list the stack's security groups (`seed_account`)."""
    assumed_security_groups: set[str] = field(default_factory=set)
    """Security groups no account fact lists: created in moto under their ids, so that rules
    referencing them are taken, and their lookups answer "not known" (`assume_security_group`)."""
    buckets_known: bool = False
    """Whether account facts list the buckets the stack names: then one missing from moto does not
    exist, else it is not known (`seed_account`)."""
    certificates_known: bool = False
    """Whether account facts list the stack's ACM certificates: else a listener's certificate missing
    from moto is assumed to exist (created there under its ARN, `assume_certificate`)."""
    parameters_known: bool = False
    """Whether account facts list the SSM parameters the stack names: then one missing from moto does
    not exist, else it is not known (AWS's public parameters, /aws/service/..., are always known)."""
    secrets_known: bool = False
    """Whether account facts list the Secrets Manager secrets the stack names (`seed_account`)."""
    alert_manager_definitions: dict[str, str] = field(default_factory=dict)
    """Workspace id -> its alert manager definition: moto has none, and AMP keeps one per workspace."""
    bucket_policies: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Bucket name -> its policy: the engine checks bucket policies and keeps them from moto
    (`set_bucket_policy`), so what reads them later (server access logging) reads them here."""
    data_repository_associations: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    """FSx file system id -> its data repository associations (id, path, repository): moto has none."""

    def client(self, service: str) -> Any:
        """The account's boto3 client for `service`; each call it makes is first checked against
        AWS's own model (enums, patterns, maximums: `service_model`), as the service would."""
        if service not in self._clients:
            client = self.session.client(service, region_name=self.region, config=client_config(service))
            service_model.install(client)
            self._clients[service] = client
        return self._clients[service]

    @property
    def account_id(self) -> str:
        """Asked of STS once: handlers build an ARN for nearly every resource, and an account's id never changes."""
        if self._account_id is None:
            self._account_id = self.client("sts").get_caller_identity()["Account"]
        return self._account_id

    def arn(self, service: str, resource: str, region: bool = True) -> str:
        return f"arn:aws:{service}:{self.region if region else ''}:{self.account_id}:{resource}"


UNSIGNED_REQUESTS = Config(signature_version=botocore.UNSIGNED)


def client_config(service: str) -> Config | None:
    """How the engine's clients talk to moto: unsigned, but for S3. moto checks no signature
    and answers an unsigned request for its default account as it does one signed with the fake
    credentials, and Signature Version 4 (hashing every request) took a tenth of the CPU of a warm
    `vision-train` plan (0.757 and 0.704 s signed against 0.661 and 0.627 s so, two runs of eight
    interleaved plans each, medians, 2026-11-27).
    S3 is the exception: moto takes an unsigned S3 request for an anonymous one and checks the
    bucket's ACL and policy (GetObject answers 403)."""
    return None if service == "s3" else UNSIGNED_REQUESTS


@dataclass
class ResourceRequest:
    type: str
    name: str
    inputs: dict[str, Any]

    def physical_name(self, key: str = "name") -> str:
        """The explicit name, or Pulumi's auto-name: the logical name plus a random suffix."""
        return self.inputs.get(key) or f"{self.name}-{secrets.token_hex(4)[:7]}"


ResourceHandler = Callable[[Account, ResourceRequest], Created]
InvokeHandler = Callable[[Account, dict[str, Any]], dict[str, Any]]

UpdateHandler = Callable[[Account, ResourceRequest, str], Created]
"""(account, the new inputs, the resource's physical id) -> what AWS holds after the update."""

RESOURCES: dict[str, ResourceHandler] = {}
UPDATES: dict[str, UpdateHandler] = {}
INVOKES: dict[str, InvokeHandler] = {}


_TOKEN = re.compile(r"[A-Za-z0-9_-]+:[A-Za-z0-9_./-]*:[A-Za-z0-9_]+")
"""`package:module:Type` (`aws:sqs/queue:Queue`), as Pulumi spells resource types and invokes."""


def _registrar(table: dict[str, Any], kind: str, token: str, replace: bool) -> Callable[[Any], Any]:
    if not _TOKEN.fullmatch(token):
        raise ValueError(f"{token!r} is not a Pulumi {kind} token such as 'aws:sqs/queue:Queue'")

    def register(handler: Any) -> Any:
        if token in table and table[token] is not handler and not replace:
            raise ValueError(
                f"the engine already has a handler for {kind} {token!r} ({table[token].__qualname__}); "
                "pass replace=True to swap it"
            )
        table[token] = handler
        return handler

    return register


def register_resource(token: str, *, replace: bool = False) -> Callable[[ResourceHandler], ResourceHandler]:
    """Teach the engine a resource type, from any code (a team's conftest or a --handlers file):

        @register_resource("aws:sqs/queue:Queue")
        def apply_queue(account: Account, request: ResourceRequest) -> Created:
            url = account.client("sqs").create_queue(QueueName=request.physical_name())["QueueUrl"]
            return Created(id=url, outputs={"url": url})

    The handler makes the AWS calls the provider would make, through `account.client(...)`, and
    returns the physical id and the outputs AWS answered. A type that already has a handler is
    refused unless `replace=True`, so a plugin cannot quietly shadow a built-in check.
    """
    return _registrar(RESOURCES, "resource type", token, replace)


def register_update(token: str, *, replace: bool = False) -> Callable[[UpdateHandler], UpdateHandler]:
    """Teach the engine to update a resource type in place, for runs that start from an earlier
    deployment (`run_program(..., previous=...)`): the handler gets the new inputs and the
    physical id, makes the calls the provider's update makes, and returns the id and outputs.
    A changed resource whose type has no update handler fails the run, naming the type."""
    return _registrar(UPDATES, "resource update", token, replace)


def register_invoke(token: str, *, replace: bool = False) -> Callable[[InvokeHandler], InvokeHandler]:
    """Teach the engine a data source (`aws:sqs/getQueue:getQueue`): the handler takes the invoke's
    arguments and returns its result; raising ClientError or LookupError fails the invoke as AWS would."""
    return _registrar(INVOKES, "invoke", token, replace)


resource = register_resource
invoke = register_invoke


def aws_tags(tags: dict[str, str] | None, key: str = "Key", value: str = "Value") -> list[dict[str, str]]:
    return [{key: k, value: v} for k, v in (tags or {}).items()]


def tag_specification(resource_type: str, tags: dict[str, str] | None) -> list[dict[str, Any]]:
    return [{"ResourceType": resource_type, "Tags": aws_tags(tags)}] if tags else []


def as_bool(value: Any) -> bool | None:
    """pulumi-aws passes some launch template booleans as the strings "true"/"false"."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value.lower() == "true"
    return bool(value)


def drop_none(mapping: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in mapping.items() if value is not None and value != [] and value != {}}


def whole_numbers(value: Any) -> Any:
    """Pulumi's wire format carries every number as a float; AWS integer fields need ints."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: whole_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [whole_numbers(item) for item in value]
    return value
