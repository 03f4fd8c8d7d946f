"""How the engine sets moto up: what each account holds at the start, and what it skips.

Each piece keeps moto's answers as they are and saves work an account, a plan or a test session
repeated: catalogs moto builds that nothing here reads, service models parsed again, collections
of a heap that only grows, key material nobody asks for, a class inspected on every request.
"""

from __future__ import annotations

import bisect
import contextlib
import datetime
import functools
import gc
import inspect
import os
from collections.abc import Iterator
from typing import Any

import botocore.loaders
import botocore.session
from moto import mock_aws

from gpucloud.lookups import DEEP_LEARNING_AMI_PARAMETER
from gpucloud.testing.registry import Account


def load_well_known_images(account: Account) -> None:
    """moto's catalog of well-known public images (its amis.json: Ubuntu, Amazon Linux, Windows,
    RHEL, SUSE, Deep Learning AMIs), without the thousands of per-region "latest" and ECS-optimized
    images moto adds by default: building those took a second of every account's set-up (a volume
    and a snapshot with random ids each), and nothing the engine runs looks for them."""
    from moto.core.parse import default_timestamp_parser
    from moto.ec2.models import ec2_backends
    from moto.ec2.models.amis import AMIS, Ami

    with _default_images_off():
        backend = ec2_backends[account.account_id][account.region]
    for image in AMIS:
        created = image.get("creation_date")
        fields = {**image, "owner_alias": "amazon"}
        if isinstance(created, str):
            fields["creation_date"] = default_timestamp_parser(created)
        backend.amis.setdefault(image["ami_id"], Ami(backend, **fields))


def seed_public_parameters(account: Account) -> None:
    """Publish the Deep Learning AMI parameter AWS provides in every region, pointing at an
    Ubuntu x86_64 image from moto's catalog (moto ships AWS's other public parameters, not this one)."""
    from moto.ssm.models import Parameter, ssm_backends

    image_id = _deep_learning_image(account)
    account_id = account.account_id
    backend = ssm_backends[account_id][account.region]
    if DEEP_LEARNING_AMI_PARAMETER not in backend._parameters:
        backend._parameters[DEEP_LEARNING_AMI_PARAMETER].append(
            Parameter(
                account_id=account_id,
                name=DEEP_LEARNING_AMI_PARAMETER,
                value=image_id,
                parameter_type="String",
                description="AWS Deep Learning Base OSS Nvidia Driver GPU AMI (seeded by gpucloud.testing)",
                allowed_pattern=None,
                keyid=None,
                last_modified_date=datetime.datetime.now(datetime.UTC),
                version=1,
                data_type="aws:ec2:image",
            )
        )


_DEEP_LEARNING_IMAGES: dict[str, str] = {}
"""Region -> the image the parameter points at. Every account loads the same catalog
(`load_well_known_images`), so EC2 is asked once per region and process: the filtered search,
4 ms of every account's set-up, took 3 s of the test suite's CPU (py-spy, 2026-11-27)."""


def _deep_learning_image(account: Account) -> str:
    if account.region not in _DEEP_LEARNING_IMAGES:
        images = account.client("ec2").describe_images(
            Owners=["amazon"],
            Filters=[{"Name": "architecture", "Values": ["x86_64"]}, {"Name": "name", "Values": ["*ubuntu*"]}],
        )["Images"]
        if not images:
            raise RuntimeError(
                "moto's catalog of public AMIs is empty (MOTO_EC2_LOAD_DEFAULT_AMIS=false, or a mock that "
                "ended while it was set): the engine needs it for the Deep Learning AMI parameter"
            )
        _DEEP_LEARNING_IMAGES[account.region] = sorted(image["ImageId"] for image in images)[0]
    return _DEEP_LEARNING_IMAGES[account.region]


GC_THRESHOLDS = (200_000, 20, 20)
"""Collector thresholds while an account is open (CPython's default: 700, 10, 10). A young
generation of 200,000 rather than 50,000 objects takes parliament's IAM catalog (loaded by the
policies, inside the account) in one pass: collector time in a 10-group plan 0.29 -> 0.11 s."""


@contextlib.contextmanager
def collector_tuned() -> Iterator[None]:
    """Keep Python's cyclic garbage collector from walking the engine's large, long-lived heap over and over.

    Setting up an account loads moto's AMI and instance type catalogs, and a program run allocates
    objects by the hundred thousand (Pulumi outputs and futures, botocore requests, moto models),
    all on top of a heap that outlives them: those catalogs, botocore's service models, the loaded
    pulumi_aws modules, and in a test session everything before. With the default thresholds the
    collector made some fifteen full passes over that heap in a 100-group plan, a fifth of its
    time, and most of each account's set-up. What exists on entry is frozen (left out of
    collections) and young objects are collected less often; both are undone on exit.

    Nested (a program run inside an open account), it freezes what the outer block made since, and
    what it made itself on exit; the outermost block unfreezes it all, into the oldest generation.
    The freeze is the engine's only while it froze first.
    """
    global _FROZEN_BY_ENGINE
    thresholds = gc.get_threshold()
    freeze = _FROZEN_BY_ENGINE or gc.get_freeze_count() == 0  # objects someone else froze stay theirs
    outermost = freeze and not _FROZEN_BY_ENGINE
    if freeze:
        gc.freeze()
        _FROZEN_BY_ENGINE = True
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        if freeze:
            # What the block made is frozen too, as what existed on entry: left young, the plan's
            # resources after a program run, or parliament's IAM catalog after an account, made
            # the next young collection a fifth of a second of a 10-group plan.
            gc.freeze()
        if outermost:
            gc.unfreeze()
            _FROZEN_BY_ENGINE = False


_FROZEN_BY_ENGINE = False
"""Whether the objects now frozen (`gc.freeze`) were frozen by `collector_tuned`."""


class _FilesParsedOnce(botocore.loaders.JSONFileLoader):
    """botocore's loader caches a model per call signature, and a client and `get_available_regions`
    ask for EC2's with different ones: the file is parsed once here instead. Loaders merge the
    sdk-extras into the model they get, which is the same merge again on a second call."""

    def __init__(self) -> None:
        self._parsed: dict[str, Any] = {}

    def load_file(self, file_path: str) -> Any:
        if file_path not in self._parsed:
            self._parsed[file_path] = super().load_file(file_path)
        return self._parsed[file_path]


def service_models(search_path_string: str | None = None) -> botocore.loaders.Loader:
    """One loader of AWS's service models per data path (AWS_DATA_PATH): a new botocore session
    parses the large JSON models again (EC2's alone takes a tenth of a second). boto3 appends its
    own data folder to a session's loader for every session it makes, so the shared loader's search
    paths are kept free of repeats."""
    loader = _loader_for(search_path_string or "")
    loader.search_paths[:] = list(dict.fromkeys(loader.search_paths))
    return loader


@functools.cache
def _loader_for(search_path_string: str) -> botocore.loaders.Loader:
    loader = _create_loader(search_path_string or None)
    loader.file_loader = _FilesParsedOnce()
    return loader


_create_loader = botocore.loaders.create_loader


@contextlib.contextmanager
def models_parsed_once() -> Iterator[None]:
    """Every botocore session made while an account is open reads the service models through the
    shared loader: the engine's own, and the ones moto makes for itself (listing EC2's regions when
    it first builds an EC2 backend made four sessions that each parsed EC2's model and the endpoint
    list, some 0.6 s of a plan). moto's own loader, which merges moto's extras into the models,
    is a different one and stays apart. Nested, it leaves the outer block's loader in place."""
    saved = botocore.session.create_loader
    botocore.session.create_loader = service_models
    try:
        yield
    finally:
        botocore.session.create_loader = saved
        loader = service_models()
        loader.search_paths[:] = list(dict.fromkeys(loader.search_paths))


@contextlib.contextmanager
def mock_reset_without_default_images() -> Iterator[None]:
    """moto's mock, whose reset on the way out builds the backends again without moto's thousands
    of default images: rebuilding EC2's took a quarter of a second of every account, and the next
    account loads the catalog it needs itself (`load_well_known_images`)."""
    mock = mock_aws()
    mock.start()
    try:
        yield
    finally:
        with _default_images_off():
            mock.stop()


@contextlib.contextmanager
def _default_images_off() -> Iterator[None]:
    """moto builds an EC2 backend without its thousands of default images while this holds
    (MOTO_EC2_LOAD_DEFAULT_AMIS=false); the variable is as it was afterwards."""
    saved = os.environ.get("MOTO_EC2_LOAD_DEFAULT_AMIS")
    os.environ["MOTO_EC2_LOAD_DEFAULT_AMIS"] = "false"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("MOTO_EC2_LOAD_DEFAULT_AMIS", None)
        else:
            os.environ["MOTO_EC2_LOAD_DEFAULT_AMIS"] = saved


class _KeyMaterialOnFirstUse:
    """A moto KMS key's private key, made when something first uses it (Sign, Verify,
    GetPublicKey) rather than when the key is created: moto 5 makes a 2048-bit RSA key for every
    key, symmetric ones included (`moto/kms/utils.py`, `generate_private_key`), 20 to 170 ms of
    CPU each (median 74 ms, 20 keys on this machine, 2026-11-27) for every key a plan creates."""

    def __init__(self, key_spec: str) -> None:
        self._key_spec = key_spec
        self._generated: Any = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_key_spec", "_generated"):
            raise AttributeError(name)
        if self._generated is None:
            from moto.kms.utils import generate_private_key

            self._generated = generate_private_key(self._key_spec)
        return getattr(self._generated, name)


class _FunctionsOf:
    """The functions of one of moto's response classes, asked one name at a time. moto lists
    them all with `inspect.getmembers` on every request it answers, to see whether the action is
    among them (`BaseResponse.call_action`): 4.2% of the test suite's samples (py-spy,
    2026-11-27). Looking up the one name answers the same, also for a method added to the class
    later (a handler the engine or a test lends moto)."""

    __slots__ = ("_class",)

    def __init__(self, response_class: type) -> None:
        self._class = response_class

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and inspect.isfunction(getattr(self._class, name, None))

    def __iter__(self) -> Iterator[str]:
        return iter([name for name, _ in inspect.getmembers(self._class, predicate=inspect.isfunction)])


def _no_parameter_under(parser: Any, query_params: Any, prefix: str) -> bool:
    """moto's `QueryParser._gonna_recurse`: whether no request parameter starts with `prefix`, the
    member of the input shape being parsed. moto scans every parameter name for every structure of
    the shape (a CreateLaunchTemplate request's hundreds, through werkzeug's multi-dict, whose keys
    are made anew on each pass): 4.5% of a warm plan's time (cProfile, 2026-11-27). Here the names
    are sorted once per request, and those that start with `prefix` are the ones that sort right
    at or after it, so one bisection answers."""
    if prefix == "":
        return False
    sorted_for = parser.__dict__.get("_sorted_parameter_names")
    if sorted_for is None or sorted_for[0] is not query_params:
        sorted_for = parser._sorted_parameter_names = (query_params, sorted(query_params))
    names = sorted_for[1]
    at = bisect.bisect_left(names, prefix)
    return not (at < len(names) and names[at].startswith(prefix))


_OFFERINGS_BY_TYPE: dict[tuple[str, str], tuple[list, dict[str, list[int]]]] = {}
"""(location type, region) -> moto's list of offerings there, and the positions in it of each
instance type's offerings."""


def _offerings_of_types(scan: Any) -> Any:
    """moto's `describe_instance_type_offerings`, which scans every offering of the region (6,436
    by zone in us-east-1) through its filter for each call: 15 ms a call, one per instance type a
    stack names, 2.2% of the test suite's samples (py-spy, 2026-11-27). With an `instance-type`
    filter, only that type's offerings go through moto's own filter, in moto's order; any other
    call is moto's scan."""
    from moto.ec2.models.instance_types import INSTANCE_TYPE_OFFERINGS

    def describe_instance_type_offerings(self: Any, location_type: str | None = None,
                                         filters: dict[str, Any] | None = None) -> list[Any]:
        location_type = location_type or "region"
        wanted = (filters or {}).get("instance-type")
        offerings = INSTANCE_TYPE_OFFERINGS.get(location_type, {}).get(self.region_name)
        if not wanted or offerings is None:
            return scan(self, location_type, filters)
        indexed = _OFFERINGS_BY_TYPE.get((location_type, self.region_name))
        if indexed is None or indexed[0] is not offerings:
            positions: dict[str, list[int]] = {}
            for position, offering in enumerate(offerings):
                positions.setdefault(offering.get("InstanceType"), []).append(position)
            indexed = _OFFERINGS_BY_TYPE[(location_type, self.region_name)] = (offerings, positions)
        chosen = sorted({position for name in wanted for position in indexed[1].get(name, ())})
        return [offerings[position] for position in chosen
                if self.matches_filters(offerings[position], filters, location_type)]

    describe_instance_type_offerings.scan = scan  # type: ignore[attr-defined]
    return describe_instance_type_offerings


_SERIALIZED_ANSWERS: dict[tuple[Any, ...], tuple[list, tuple[Any, dict, Any]]] = {}
"""(response class, serializer, operation, pretty, the items' identities) -> those items, and moto's
response to them."""


def _catalog_serialized_once(describe: Any, member: str) -> Any:
    """moto's answer to a describe of its EC2 catalog, whose items (`member`: dicts moto loads once
    per process and never changes) are serialized once per list of them. The response is the same
    bytes: moto's EC2 serializer writes a fixed request id, which moto replaces on every answer
    afterwards (`_enrich_response`); the client parses it as before."""
    from moto import settings
    from moto.core.responses import ActionResult

    class SerializedOnce(ActionResult):
        def execute_result(self, context: Any) -> Any:
            items = self.result[member]  # type: ignore[index]
            key = (type(context.response), context.serializer_class, context.operation_model,
                   settings.PRETTIFY_RESPONSES, tuple(map(id, items)))
            kept = _SERIALIZED_ANSWERS.get(key)
            if kept is None:
                kept = _SERIALIZED_ANSWERS[key] = (list(items), super().execute_result(context))
            status, headers, body = kept[1]
            return status, dict(headers), body

    def answer(self: Any) -> Any:
        found = describe(self)
        return SerializedOnce(found.result) if type(found) is ActionResult else found

    answer.__name__ = describe.__name__
    answer.serialized = describe  # type: ignore[attr-defined]
    return answer


def _offerings_serialized_once(describe: Any) -> Any:
    """moto's `describe_instance_type_offerings`: a plan whose capacity fixes name alternatives asks
    for every offering of the region by zone (`offered_gpu_types`, 6,436 in us-east-1), and moto's
    serializer and XML writer took a fifth of a warm plan's CPU on that one answer (2026-11-29)."""
    return _catalog_serialized_once(describe, "InstanceTypeOfferings")


def _instance_types_serialized_once(describe: Any) -> Any:
    """moto's `describe_instance_types`: every plan describes each type a stack names
    (aws.ec2.getInstanceType, once for its GPUs and once for hibernation), and moto took 7 ms to
    write a p5.48xlarge's description (32 network cards) each time (2026-11-29)."""
    return _catalog_serialized_once(describe, "InstanceTypes")


@contextlib.contextmanager
def moto_answers_sooner() -> Iterator[None]:
    """While an account is open: KMS key material made on first use, response classes inspected
    once, a query request's parameter names sorted once, an instance type's offerings found
    without a scan of the region's, the catalog's instance types and offerings serialized once."""
    import moto.core.parse
    import moto.core.responses
    import moto.kms.models
    from moto.ec2.models.instance_types import InstanceTypeOfferingBackend
    from moto.ec2.responses.instances import InstanceResponse

    parser = moto.core.parse.QueryParser
    offerings = InstanceTypeOfferingBackend
    saved = (moto.kms.models.generate_private_key, moto.core.responses.method_names_from_class, parser._gonna_recurse,
             offerings.describe_instance_type_offerings, InstanceResponse.describe_instance_type_offerings,
             InstanceResponse.describe_instance_types)
    moto.kms.models.generate_private_key = _KeyMaterialOnFirstUse
    moto.core.responses.method_names_from_class = _FunctionsOf
    parser._gonna_recurse = _no_parameter_under
    if not hasattr(saved[3], "scan"):
        offerings.describe_instance_type_offerings = _offerings_of_types(saved[3])
    if not hasattr(saved[4], "serialized"):
        InstanceResponse.describe_instance_type_offerings = _offerings_serialized_once(saved[4])
    if not hasattr(saved[5], "serialized"):
        InstanceResponse.describe_instance_types = _instance_types_serialized_once(saved[5])
    try:
        yield
    finally:
        (moto.kms.models.generate_private_key, moto.core.responses.method_names_from_class, parser._gonna_recurse,
         offerings.describe_instance_type_offerings, InstanceResponse.describe_instance_type_offerings,
         InstanceResponse.describe_instance_types) = saved

