#!/usr/bin/env python3
"""gpu-cloud node bootstrap, the only program user data carries: fetch the agent bundle from S3
with the instance's own role, refuse it unless its SHA-256 is the one pinned in node.json, unpack
it and hand over to its boot step. After the retries it ABANDONs the launch lifecycle action, so
Auto Scaling replaces the node instead of leaving it half set up.

Standard library only, Python 3.9 and later (the default AMI runs it on Ubuntu 22.04's Python
3.10). It signs its two AWS calls (S3 GetObject, Auto Scaling CompleteLifecycleAction) with
Signature Version 4 itself, because boto3 is not imported before the bundle is known good.
GPUCLOUD_ROOT, GPUCLOUD_IMDS_ENDPOINT and AWS_ENDPOINT_URL redirect it for tests.
"""

import datetime
import hashlib
import hmac
import json
import os
import shutil
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile

NODE_CONFIG = "etc/gpucloud/node.json"
AGENT_LIB = "opt/gpucloud/lib"
FETCH_ATTEMPTS = 6
FETCH_TIMEOUT_S = 30
BACKOFF_FIRST_S = 5
BACKOFF_MAX_S = 60
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def log(message):
    print("gpucloud-bootstrap: " + message, file=sys.stderr, flush=True)


class Metadata:
    """IMDSv2: a session token, then token-authenticated reads; never through a proxy."""

    def __init__(self, endpoint):
        self.endpoint = endpoint.rstrip("/")
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        self.token = None

    def get(self, path):
        if self.token is None:
            request = urllib.request.Request(
                self.endpoint + "/latest/api/token", method="PUT",
                headers={"X-aws-ec2-metadata-token-ttl-seconds": "21600"},
            )
            self.token = self.opener.open(request, timeout=5).read().decode()
        request = urllib.request.Request(
            self.endpoint + path, headers={"X-aws-ec2-metadata-token": self.token}
        )
        return self.opener.open(request, timeout=5).read().decode()

    def credentials(self):
        role = self.get("/latest/meta-data/iam/security-credentials/").split()[0]
        document = json.loads(self.get("/latest/meta-data/iam/security-credentials/" + role))
        return document["AccessKeyId"], document["SecretAccessKey"], document["Token"]


def _hmac(key, text):
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def sign(method, url, region, service, credentials, body=b"", headers=None, now=None):
    """Headers for a Signature Version 4 request (AWS General Reference, "Create a signed AWS
    API request"): the canonical request, the string to sign, and the derived signing key."""
    access_key, secret_key, token = credentials
    now = now or datetime.datetime.now(datetime.timezone.utc)
    stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    parts = urllib.parse.urlsplit(url)
    payload_hash = hashlib.sha256(body).hexdigest()
    signed = dict(headers or {})
    signed.update({"host": parts.netloc, "x-amz-date": stamp, "x-amz-content-sha256": payload_hash})
    if token:
        signed["x-amz-security-token"] = token
    names = sorted(name.lower() for name in signed)
    values = {name.lower(): " ".join(str(value).split()) for name, value in signed.items()}
    query = "&".join(
        sorted(
            urllib.parse.quote(key, safe="-_.~") + "=" + urllib.parse.quote(value, safe="-_.~")
            for key, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        )
    )
    canonical = "\n".join([
        method, parts.path or "/", query,
        "".join(name + ":" + values[name] + "\n" for name in names),
        ";".join(names), payload_hash,
    ])
    scope = day + "/" + region + "/" + service + "/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(_hmac(_hmac(_hmac(("AWS4" + secret_key).encode(), day), region), service), "aws4_request")
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    signed["Authorization"] = (
        "AWS4-HMAC-SHA256 Credential=" + access_key + "/" + scope
        + ", SignedHeaders=" + ";".join(names) + ", Signature=" + signature
    )
    signed.pop("host")
    return signed


def dns_suffix(region):
    return "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"


def object_url(bucket, key, region):
    """Virtual-hosted style on AWS (S3 user guide, "Virtual hosting of buckets"); path style
    against an AWS_ENDPOINT_URL, where a local server cannot resolve bucket host names."""
    quoted = urllib.parse.quote(key, safe="/-_.~")
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        return endpoint.rstrip("/") + "/" + bucket + "/" + quoted
    return "https://" + bucket + ".s3." + region + "." + dns_suffix(region) + "/" + quoted


def service_url(service, region):
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    return endpoint.rstrip("/") + "/" if endpoint else "https://" + service + "." + region + "." + dns_suffix(region) + "/"


def fetch_bundle(config, metadata):
    url = object_url(config["agent_bucket"], config["agent_key"], config["region"])
    headers = sign("GET", url, config["region"], "s3", metadata.credentials())
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_S) as response:
        return response.read()


def fetch_verified(config, metadata, sleep=None):
    """The bundle whose SHA-256 is the pinned one, or None after FETCH_ATTEMPTS tries."""
    sleep = sleep or time.sleep
    delay = BACKOFF_FIRST_S
    for attempt in range(1, FETCH_ATTEMPTS + 1):
        try:
            data = fetch_bundle(config, metadata)
        except (OSError, ValueError, KeyError, IndexError) as error:
            log("attempt %d: cannot fetch s3://%s/%s: %s" % (attempt, config["agent_bucket"], config["agent_key"], error))
        else:
            digest = hashlib.sha256(data).hexdigest()
            if hmac.compare_digest(digest, config["agent_sha256"]):
                return data
            log("attempt %d: bundle SHA-256 is %s, not the pinned %s; refusing it" % (attempt, digest, config["agent_sha256"]))
        if attempt < FETCH_ATTEMPTS:
            sleep(delay)
            delay = min(delay * 2, BACKOFF_MAX_S)
    return None


def unpack(data, target):
    """Unpack into a fresh directory; a member that would land outside it is refused."""
    staging = target + ".new"
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    archive_path = staging + ".zip"
    with open(archive_path, "wb") as archive:
        archive.write(data)
    with zipfile.ZipFile(archive_path) as archive:
        for name in archive.namelist():
            resolved = os.path.realpath(os.path.join(staging, name))
            if not resolved.startswith(os.path.realpath(staging) + os.sep):
                raise ValueError("bundle member %r lies outside the agent directory" % name)
        archive.extractall(staging)
    os.remove(archive_path)
    shutil.rmtree(target, ignore_errors=True)
    os.rename(staging, target)


def abandon(config, metadata):
    """Complete the launch lifecycle action with ABANDON (Auto Scaling API reference,
    CompleteLifecycleAction), so the group replaces this node now rather than at the hook's timeout."""
    if not config.get("launch_hook_name"):
        return
    instance_id = metadata.get("/latest/meta-data/instance-id")
    body = urllib.parse.urlencode({
        "Action": "CompleteLifecycleAction", "Version": "2011-01-01",
        "AutoScalingGroupName": config["group_name"], "LifecycleHookName": config["launch_hook_name"],
        "LifecycleActionResult": "ABANDON", "InstanceId": instance_id,
    }).encode()
    url = service_url("autoscaling", config["region"])
    headers = sign("POST", url, config["region"], "autoscaling", metadata.credentials(), body,
                   {"content-type": "application/x-www-form-urlencoded; charset=utf-8"})
    urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers), timeout=FETCH_TIMEOUT_S).read()
    log("launch lifecycle action of %s ABANDONed" % instance_id)


def main():
    root = os.environ.get("GPUCLOUD_ROOT", "/")
    with open(os.path.join(root, NODE_CONFIG)) as handle:
        config = json.load(handle)
    metadata = Metadata(os.environ.get("GPUCLOUD_IMDS_ENDPOINT", "http://169.254.169.254"))
    problem = None
    if sys.version_info < (3, 9):
        problem = "Python %d.%d is too old for the agent (3.9 or later)" % sys.version_info[:2]
    else:
        try:
            import boto3  # noqa: F401  (the agent's one dependency; the DLAMI has it)
        except ImportError:
            problem = "the image's Python has no boto3, which the agent needs"
    data = None if problem else fetch_verified(config, metadata)
    if data is None:
        log(problem or "no good bundle after %d attempts; giving up" % FETCH_ATTEMPTS)
        try:
            abandon(config, metadata)
        except (OSError, ValueError, KeyError, IndexError) as error:
            log("could not ABANDON the launch action (the hook's timeout will): %s" % error)
        return 1
    lib = os.path.join(root, AGENT_LIB)
    unpack(data, lib)
    log("agent bundle %s unpacked into %s" % (config["agent_sha256"], lib))
    environment = dict(os.environ, PYTHONPATH=lib)
    os.execve(sys.executable, [sys.executable, "-m", "gpucloud.node", "boot"], environment)
    return 0


if __name__ == "__main__":
    sys.exit(main())
