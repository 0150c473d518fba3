"""Checks AWS Signature Version 4 on a request the test server received, from the published
specification (docs.aws.amazon.com, "Create a signed AWS API request"): the ``Authorization``
header's shape always, and the signature itself when the server knows the secret key.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping
from typing import NamedTuple
from urllib.parse import quote

_AUTHORIZATION = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[A-Z0-9]{16,128})/(?P<date>\d{8})/(?P<region>[a-z0-9-]+)/"
    r"(?P<service>[a-z0-9-]+)/aws4_request, SignedHeaders=(?P<signed>[a-z0-9-]+(?:;[a-z0-9-]+)*), "
    r"Signature=(?P<signature>[0-9a-f]{64})"
)


class Refusal(NamedTuple):
    """Why a request's signature is refused: the AWS error code to answer with, and why."""

    code: str
    message: str


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def check_sigv4(
    method: str,
    raw_path: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    service: str,
    secrets: Mapping[str, str] | None = None,
) -> str | Refusal:
    """The access key id of a well-formed SigV4 request, else the refusal. With ``secrets``
    (access key id -> secret key), the signature must also be right."""
    header = headers.get("Authorization", "")
    found = _AUTHORIZATION.fullmatch(header)
    if found is None:
        return Refusal(
            "MissingAuthenticationTokenException", "Missing or malformed SigV4 Authorization header"
        )
    stamp = headers.get("X-Amz-Date", "")
    if not re.fullmatch(r"\d{8}T\d{6}Z", stamp) or stamp[:8] != found["date"]:
        return Refusal(
            "IncompleteSignatureException", "X-Amz-Date is missing or not the credential's date"
        )
    if found["service"] != service:
        return Refusal(
            "InvalidSignatureException",
            f"Credential should be scoped to {service}, not {found['service']}",
        )
    signed = found["signed"].split(";")
    if "host" not in signed or "x-amz-date" not in signed or signed != sorted(signed):
        return Refusal(
            "IncompleteSignatureException",
            "SignedHeaders must be sorted and include host and x-amz-date",
        )
    if secrets is None:
        return found["key"]
    secret = secrets.get(found["key"])
    if secret is None:
        return Refusal(
            "UnrecognizedClientException", "The security token included in the request is invalid."
        )
    lowered = {name.lower(): value for name, value in headers.items()}
    if any(name not in lowered for name in signed):
        return Refusal(
            "IncompleteSignatureException", "a signed header is missing from the request"
        )
    canonical = "\n".join(
        [
            method.upper(),
            quote(raw_path.split("?", 1)[0], safe="/~"),  # every service but S3 encodes twice
            raw_path.split("?", 1)[1] if "?" in raw_path else "",
            "".join(f"{name}:{' '.join(lowered[name].split())}\n" for name in signed),
            found["signed"],
            lowered.get("x-amz-content-sha256") or hashlib.sha256(body).hexdigest(),
        ]
    )
    scope = f"{found['date']}/{found['region']}/{service}/aws4_request"
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()]
    )
    key = f"AWS4{secret}".encode()
    for part in (found["date"], found["region"], service, "aws4_request"):
        key = _hmac(key, part)
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, found["signature"]):
        return Refusal(
            "InvalidSignatureException",
            "The request signature we calculated does not match the signature you provided.",
        )
    return found["key"]
