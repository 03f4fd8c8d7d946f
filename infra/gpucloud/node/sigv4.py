"""AWS Signature Version 4 for one HTTP request, and the instance role's credentials from IMDSv2.

The collector posts to Amazon Managed Service for Prometheus (service name `aps`) without boto3:
the node image's Python may lack it, and botocore would be megabytes of memory for one signed POST.
The steps are those of AWS's "Create a signed AWS API request" (IAM user guide, read 2026-11-25):
a canonical request (method, path, query, sorted lower-case headers, the signed header names, the
body's SHA-256), the string to sign over the credential scope date/region/service/aws4_request,
and a signature with the key derived by HMAC-SHA256 from the secret through date, region, service.
A test holds the result equal to botocore's SigV4Auth for the same credentials, time and request.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import logging
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from gpucloud.node.imds import InstanceMetadata, MetadataError

ALGORITHM = "AWS4-HMAC-SHA256"
UNSIGNED_HEADERS = frozenset({"user-agent", "expect", "transfer-encoding", "x-amzn-trace-id"})
"""Left out of the signature as botocore leaves them (proxies may rewrite them)."""
CREDENTIALS_PATH = "/latest/meta-data/iam/security-credentials/"
REFRESH_BEFORE_EXPIRY_S = 600.0
"""Instance role credentials rotate hours before they expire; ask again within 10 minutes of it."""

log = logging.getLogger("gpucloud.node.sigv4")


class CredentialsError(RuntimeError):
    """No credentials: the instance has no role, or the metadata service did not answer."""


@dataclass(frozen=True)
class Credentials:
    access_key_id: str
    secret_access_key: str
    session_token: str | None = None
    expires_at: float | None = None
    """Unix time; None for credentials that do not expire."""


def sign(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    credentials: Credentials,
    region: str,
    service: str,
    now: datetime.datetime,
) -> dict[str, str]:
    """The headers to send: `headers` plus X-Amz-Date, X-Amz-Security-Token (for temporary
    credentials) and Authorization."""
    parts = urllib.parse.urlsplit(url)
    stamp = now.astimezone(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    signed = dict(headers)
    signed["X-Amz-Date"] = stamp
    if credentials.session_token:
        signed["X-Amz-Security-Token"] = credentials.session_token
    canonical = {"host": _host(parts)}
    for name, value in signed.items():
        if name.lower() not in UNSIGNED_HEADERS:
            canonical[name.lower()] = " ".join(value.split())
    names = ";".join(sorted(canonical))
    request = "\n".join([
        method.upper(),
        urllib.parse.quote(parts.path or "/", safe="/~"),
        _canonical_query(parts.query),
        "".join(f"{name}:{canonical[name]}\n" for name in sorted(canonical)),
        names,
        hashlib.sha256(body).hexdigest(),
    ])
    scope = f"{stamp[:8]}/{region}/{service}/aws4_request"
    to_sign = "\n".join([ALGORITHM, stamp, scope, hashlib.sha256(request.encode("utf-8")).hexdigest()])
    key = ("AWS4" + credentials.secret_access_key).encode("utf-8")
    for part in (stamp[:8], region, service, "aws4_request"):
        key = hmac.new(key, part.encode("utf-8"), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    signed["Authorization"] = (
        f"{ALGORITHM} Credential={credentials.access_key_id}/{scope}, SignedHeaders={names}, Signature={signature}"
    )
    return signed


def _host(parts: urllib.parse.SplitResult) -> str:
    default_port = {"http": 80, "https": 443}.get(parts.scheme)
    host = parts.hostname or ""
    return host if parts.port in (None, default_port) else f"{host}:{parts.port}"


def _canonical_query(query: str) -> str:
    pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
    return "&".join(
        f"{urllib.parse.quote(name, safe='-_.~')}={urllib.parse.quote(value, safe='-_.~')}"
        for name, value in sorted(pairs)
    )


class InstanceRoleCredentials:
    """The instance profile's role credentials from IMDSv2, fetched again shortly before expiry."""

    def __init__(self, metadata: InstanceMetadata, clock: Callable[[], float] = time.time) -> None:
        self.metadata = metadata
        self.clock = clock
        self._current: Credentials | None = None

    def get(self) -> Credentials:
        current = self._current
        if current is not None and (current.expires_at is None or current.expires_at - self.clock() > REFRESH_BEFORE_EXPIRY_S):
            return current
        try:
            self._current = self._fetch()
        except (MetadataError, ValueError, KeyError) as error:
            if current is not None and current.expires_at is not None and current.expires_at > self.clock():
                log.warning("cannot refresh the instance role's credentials, using the current ones: %s", error)
                return current
            raise CredentialsError(f"no instance role credentials: {error}") from error
        return self._current

    def _fetch(self) -> Credentials:
        roles = (self.metadata.get(CREDENTIALS_PATH) or "").split()
        if not roles:
            raise MetadataError("the instance has no IAM role (no instance profile)")
        document = json.loads(self.metadata.require(CREDENTIALS_PATH + roles[0]))
        if document.get("Code", "Success") != "Success":
            raise MetadataError(f"role {roles[0]}: {document.get('Code')} {document.get('Message', '')}".strip())
        expiration = document.get("Expiration")
        return Credentials(
            access_key_id=document["AccessKeyId"],
            secret_access_key=document["SecretAccessKey"],
            session_token=document.get("Token"),
            expires_at=_unix_time(expiration) if expiration else None,
        )


def _unix_time(text: str) -> float:
    """IMDS writes e.g. 2026-11-25T16:04:11Z."""
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()
