"""A small IMDSv2 client: session token first, then token-authenticated GETs.

IMDSv1 is expected to be disabled on gpu-cloud instances (launch templates require tokens), so
every read carries X-aws-ec2-metadata-token, and a 401 (expired token) fetches a new one once.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from gpucloud.node.retry import Backoff, retry

DEFAULT_ENDPOINT = "http://169.254.169.254"
TOKEN_PATH = "/latest/api/token"
TOKEN_TTL_HEADER = "X-aws-ec2-metadata-token-ttl-seconds"
TOKEN_HEADER = "X-aws-ec2-metadata-token"
GROUP_NAME_TAG = "aws:autoscaling:groupName"

log = logging.getLogger("gpucloud.node.imds")


class MetadataError(RuntimeError):
    """The metadata service could not be reached or refused us."""


class _TransientMetadataError(MetadataError):
    pass


class InstanceMetadata:
    """Reads this instance's metadata; `None` from `get` means the path does not exist (404)."""

    def __init__(
        self,
        endpoint: str = DEFAULT_ENDPOINT,
        token_ttl_s: int = 21600,
        timeout_s: float = 2.0,
        backoff: Backoff = Backoff(attempts=4, initial_s=0.5, max_s=4.0),
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.token_ttl_s = token_ttl_s
        self.timeout_s = timeout_s
        self.backoff = backoff
        self.sleep = sleep
        self._token: str | None = None
        # The metadata service is link-local: an HTTP(S)_PROXY from the environment must not apply.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def get(self, path: str) -> str | None:
        return retry(
            lambda: self._get_once(path),
            what=f"metadata GET {path}",
            backoff=self.backoff,
            retryable=lambda error: isinstance(error, _TransientMetadataError),
            sleep=self.sleep,
        )

    def require(self, path: str) -> str:
        value = self.get(path)
        if value is None:
            raise MetadataError(f"instance metadata has no {path}")
        return value

    def instance_id(self) -> str:
        return self.require("/latest/meta-data/instance-id")

    def region(self) -> str:
        return self.require("/latest/meta-data/placement/region")

    def availability_zone(self) -> str:
        return self.require("/latest/meta-data/placement/availability-zone")

    def instance_type(self) -> str:
        """This instance's type, or "" where metadata cannot tell (the checks that key on it then skip)."""
        try:
            return self.get("/latest/meta-data/instance-type") or ""
        except MetadataError:
            return ""

    def autoscaling_group_tag(self) -> str | None:
        """The group name from instance tags; None unless tags are exposed in metadata."""
        return self.get(f"/latest/meta-data/tags/instance/{GROUP_NAME_TAG}")

    def spot_instance_action(self) -> dict[str, Any] | None:
        """The spot interruption notice ({"action": "terminate", "time": ...}), or None."""
        body = self.get("/latest/meta-data/spot/instance-action")
        if body is None:
            return None
        try:
            notice = json.loads(body)
        except json.JSONDecodeError:
            return {"action": body.strip()}
        return notice if isinstance(notice, dict) else {"action": str(notice)}

    def target_lifecycle_state(self) -> str | None:
        """Where Auto Scaling is taking this instance ("InService", "Terminated"), or None."""
        state = self.get("/latest/meta-data/autoscaling/target-lifecycle-state")
        return state.strip() if state is not None else None

    def _get_once(self, path: str) -> str | None:
        for fresh_token in (False, True):
            token = self._session_token(refresh=fresh_token)
            try:
                return self._request("GET", path, {TOKEN_HEADER: token})
            except urllib.error.HTTPError as error:
                if error.code == 404:
                    return None
                if error.code == 401 and not fresh_token:
                    log.info("metadata token rejected; requesting a new one")
                    continue
                raise self._classify(error, path) from error
            except (urllib.error.URLError, OSError) as error:
                raise _TransientMetadataError(f"GET {path}: {error}") from error
        raise MetadataError(f"GET {path}: token rejected twice")

    def _session_token(self, refresh: bool) -> str:
        if self._token is None or refresh:
            try:
                self._token = self._request("PUT", TOKEN_PATH, {TOKEN_TTL_HEADER: str(self.token_ttl_s)})
            except urllib.error.HTTPError as error:
                raise self._classify(error, TOKEN_PATH) from error
            except (urllib.error.URLError, OSError) as error:
                raise _TransientMetadataError(f"PUT {TOKEN_PATH}: {error}") from error
        return self._token

    def _request(self, method: str, path: str, headers: dict[str, str]) -> str:
        request = urllib.request.Request(self.endpoint + path, method=method, headers=headers)
        with self._opener.open(request, timeout=self.timeout_s) as response:
            return response.read().decode("utf-8")

    @staticmethod
    def _classify(error: urllib.error.HTTPError, path: str) -> MetadataError:
        message = f"{path}: HTTP {error.code} {error.reason}"
        if error.code == 429 or error.code >= 500:
            return _TransientMetadataError(message)
        return MetadataError(message)
