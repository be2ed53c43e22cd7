"""Who is asking, and may they: API-key enforcement (spec: Authentication) and rate limits (spec: Limits).

The one place in the request path where identity and limits are decided. ``ApiHandler.prepare`` calls
``admit`` before any endpoint code runs and writes the headers it returns on every response.

| API_KEY_REQUIRED | X-API-Key              | outcome                                                              |
|------------------|------------------------|----------------------------------------------------------------------|
| false (default)  | none                   | allowed, counted per client IP (ANON_RPM)                            |
| false            | valid                  | allowed, counted per key (the key's rpm)                             |
| false            | invalid/deactivated    | allowed, counted per client IP, ``X-API-Key-Status: invalid``        |
| false            | none, a key in the URL | allowed, counted per client IP, ``X-API-Key-Status: ignored-in-url`` |
| true             | none                   | 401 MISSING_API_KEY (the attempt is counted per client IP)           |
| true             | none, a key in the URL | 401 MISSING_API_KEY, ``X-API-Key-Status: ignored-in-url``            |
| true             | invalid/deactivated    | 401 INVALID_API_KEY (counted per client IP)                          |
| true             | valid                  | allowed, counted per key                                             |

A request over its limit is 429 RATE_LIMIT_EXCEEDED, before any 401: a client hammering with bad keys
is slowed down like any other. A key the store is too busy to look up is counted per client IP, and the
request answered 503 SERVICE_BUSY (when within that limit), with the rate-limit headers like any answer; one
the store cannot be read to look up at all (damaged, not a database any more) likewise, with 503
KEY_STORE_UNAVAILABLE.
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass
from typing import Any

import tornado.httputil

from solarserv.errors import ApiError
from solarserv.keys import KEY_PREFIX, ApiKey, KeyStoreBusy, KeyStoreUnusable
from solarserv.ratelimit import Decision
from solarserv.text import TARGET_SHOWN, escaped, shortened

log = logging.getLogger("solarserv.web")

API_KEY_HEADER = "X-API-Key"
# A 401's WWW-Authenticate (RFC 9110 §11.6.1: every 401 names how to authenticate). No registered scheme sends a
# key in a header of its own; the parameter names the header.
KEY_CHALLENGE = f'ApiKey header="{API_KEY_HEADER}"'
# Query parameters a key is put in where the header was meant, as written with "_" for "-" in lower case.
KEY_PARAMETERS = frozenset({"api_key", "apikey", "x_api_key", "key"})
# A client's next try after the key store was busy: another process held its lock longer than a server waits.
BUSY_RETRY_SECONDS = 1


@dataclass(frozen=True)
class Admission:
    """What ``admit`` decided: headers for the response, and the error to answer with when refused."""

    headers: dict[str, str]
    refusal: ApiError | None = None

    @property
    def over_limit(self) -> bool:
        return self.refusal is not None and self.refusal.status == 429


async def admit(request: tornado.httputil.HTTPServerRequest, services: Any) -> Admission:
    settings = services.settings
    # One key however many X-API-Key headers repeat it (Tornado would join them with commas); different keys in
    # them are no key: the client is told so. Tornado has trimmed each value of its SP and HTAB (RFC 9110 OWS); any
    # other character around a key (str.strip's \xa0, \x85) is part of the key as sent, which is then invalid.
    sent = set(request.headers.get_list(API_KEY_HEADER)) - {""}
    supplied = next(iter(sent)) if len(sent) == 1 else ""
    # The answer when the key could not be looked up: the key stays unknown, so the request is counted per client
    # IP, and the key is not called invalid. Either is one log line, not a traceback.
    lookup_failed: ApiError | None = None
    try:
        key = services.keys.active_key(supplied) if supplied else None
    except KeyStoreBusy as exc:  # another process's write holds the store: the client may retry
        log.warning("%s %s: %s", request.method, escaped(shortened(request.path, longest=TARGET_SHOWN)), exc)
        key, lookup_failed = None, _busy()
    except KeyStoreUnusable as exc:  # the file itself (damaged, replaced): until the operator repairs it
        log.error("%s %s: %s", request.method, escaped(shortened(request.path, longest=TARGET_SHOWN)), exc)
        key, lookup_failed = None, _key_store_unavailable()
    if key is not None:
        decision = await services.limiter.hit(key_counter(key), key.rpm)
    else:
        decision = await services.limiter.hit(ip_counter(client_ip(request, settings.trust_proxy)),
                                              settings.anon_rpm)
    headers = decision.headers()
    if sent and key is None and lookup_failed is None:
        # With enforcement off the request still passes on per-IP limits; say so, so a typo is not silent.
        headers["X-API-Key-Status"] = "invalid"
    elif not sent and key_in_url(request):
        # Not read there (URLs end up in logs), so it counts per client IP like no key: say so, as for a typo.
        headers["X-API-Key-Status"] = "ignored-in-url"
    if not decision.allowed:  # its Retry-After comes with the error (retry_after), as every refusal's does
        return Admission(headers, _rate_limited(decision))
    if lookup_failed is not None:
        return Admission(headers, lookup_failed)
    if settings.api_key_required and key is None:
        return Admission(headers, _invalid_key(len(sent)) if sent else _missing_key())
    return Admission(headers)


def key_in_url(request: tornado.httputil.HTTPServerRequest) -> bool:
    """Whether the query string holds an API key: a parameter named for one (``api_key``, ``X-API-Key``, in any
    case) or a value with the keys' prefix."""
    return bool(parameter_names(request) & KEY_PARAMETERS) or any(
        value.startswith(KEY_PREFIX.encode()) for values in request.query_arguments.values() for value in values)


def parameter_names(request: tornado.httputil.HTTPServerRequest) -> set[str]:
    """The query's parameter names as they are compared with KEY_PARAMETERS: in lower case, "_" for "-"
    (``X-API-Key`` is ``x_api_key``)."""
    return {name.lower().replace("-", "_") for name in request.query_arguments}


def key_counter(key: ApiKey) -> str:
    """The counter of a key's requests. From its digest, not its id: data dirs sharing a Redis never clash."""
    return f"key:{key.digest[:16]}"


def ip_counter(ip: str) -> str:
    return f"ip:{counted_address(ip)}"


def counted_address(ip: str) -> str:
    """Whom the limits count for the client address ``ip`` (client_ip's): an IPv6 client by its /64
    (``2001:db8::/64``), which one subscriber is given whole and can pick a fresh address from for every request;
    an IPv4 address as itself."""
    address = ipaddress.ip_address(ip)
    if address.version == 4:
        return str(address)
    return str(ipaddress.IPv6Network((int(address) >> 64 << 64, 64)))  # int(): a scope id is no part of it


def client_ip(request: tornado.httputil.HTTPServerRequest, trust_proxy: bool) -> str:
    """The socket's peer; with TRUST_PROXY, the address the proxy in front of us reports.

    The last X-Forwarded-For entry wins: it is the one our own proxy appended, while earlier entries (and
    an X-Real-IP the proxy merely passes through) can come from the client and would let it pick a fresh
    address, and so a fresh quota, per request. X-Real-IP is used only when there is no X-Forwarded-For.
    A value that is not a plain IPv4 or IPv6 address is ignored, the socket's peer used: one with a scope id
    (``fe80::1%eth0``) is a name of the client's choosing, a fresh quota per name and text for the log.
    ``::ffff:192.0.2.1`` is given as ``192.0.2.1``, the address the limits count and the log shows.
    """
    if trust_proxy:
        forwarded = (request.headers.get("X-Forwarded-For", "").split(",")[-1].strip()
                     or request.headers.get("X-Real-IP", "")).strip()
        try:
            address = ipaddress.ip_address(forwarded)
        except ValueError:
            address = None
        if address is not None and getattr(address, "scope_id", None) is None:
            # An IPv4-mapped address as the IPv4 one it is: Python 3.11 writes it in hex (::ffff:c000:201).
            return str(getattr(address, "ipv4_mapped", None) or address)
    return request.remote_ip


def _rate_limited(decision: Decision) -> ApiError:
    wait = decision.retry_after
    return ApiError("RATE_LIMIT_EXCEEDED", 429,
                    f"Rate limit of {decision.limit} requests per minute exceeded; retry in {wait} "
                    f"second{'' if wait == 1 else 's'}.",
                    retry_after=wait)


def _busy() -> ApiError:
    return ApiError("SERVICE_BUSY", 503, "The API key store is busy (SQLite reported it locked); retry in a moment.",
                    retry_after=BUSY_RETRY_SECONDS)


def _key_store_unavailable() -> ApiError:
    return ApiError("KEY_STORE_UNAVAILABLE", 503, "The API key store cannot be read, so the key cannot be checked; "
                                                  "the server has logged why for its operator.")


def _missing_key() -> ApiError:
    return ApiError("MISSING_API_KEY", 401,
                    f"This service requires an API key: send it in the {API_KEY_HEADER} header.")


def _invalid_key(keys_sent: int) -> ApiError:
    if keys_sent > 1:
        return ApiError("INVALID_API_KEY", 401, f"The {API_KEY_HEADER} header is given {keys_sent} different keys; "
                                                "send the one key to use.")
    return ApiError("INVALID_API_KEY", 401,
                    f"The API key in the {API_KEY_HEADER} header is not recognised or has been deactivated.")
