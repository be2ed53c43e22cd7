"""The API key store: SQLite (through sqlite-utils) in the data dir, shared by the CLI and every server.

A key is ``tst_`` + 43 random URL-safe characters (32 bytes). Only its SHA-256 digest is stored, with
a preview (``tst_abcd…``) to recognise it by. Lookups read the database every time, never a cache, so
a key created or deactivated by any process counts at once in all of them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import re
import secrets
import sqlite3
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import sqlite_utils
from sqlite_utils.migrations import Migrations

KEY_PREFIX = "tst_"
SECRET_BYTES = 32  # token_urlsafe(32) → 43 characters
PREVIEW_CHARACTERS = 4  # after the prefix; unique among keys, so a preview names one key
PREVIEW_DRAWS = 5  # new keys drawn before giving up when their previews are already taken
ELLIPSIS = "…"
_KEY_PATTERN = re.compile(r"tst_[A-Za-z0-9_-]{43}")
LABEL_MAX_LENGTH = 100

ACTIVE, INACTIVE = "active", "inactive"


@dataclass(frozen=True)
class Tier:
    name: str
    min_rpm: int
    max_rpm: int

    def allowance(self) -> str:
        if self.min_rpm == self.max_rpm:
            return f"{self.min_rpm} requests per minute"
        return f"{self.min_rpm} to {self.max_rpm} requests per minute, chosen at issuance"

    def describe(self) -> str:
        return f"{self.name}: {self.allowance()}"


TIERS = {tier.name: tier for tier in (Tier("free", 10, 10), Tier("builder", 60, 60), Tier("pro", 120, 300))}


class KeyStoreError(ValueError):
    """A key cannot be issued or found as asked; the message says why, for the console and the CLI."""


@dataclass(frozen=True)
class ApiKey:
    """One stored key, as the console lists it. Holds the digest, never the key."""

    id: int
    label: str
    preview: str
    tier: str
    rpm: int
    created: str  # YYYY-MM-DD (UTC)
    status: str
    digest: str  # SHA-256 of the full key, hex

    @property
    def active(self) -> bool:
        return self.status == ACTIVE

    def public_fields(self) -> dict[str, Any]:
        """Everything but the digest: for `keys list --json` and the console."""
        fields = asdict(self)
        del fields["digest"]
        return fields


@dataclass(frozen=True)
class IssuedKey:
    """A key just created: the only moment the full key exists outside the client's hands."""

    key: str
    record: ApiKey


migrations = Migrations("solarserv.keys")


@migrations()
def create_keys_table(db: sqlite_utils.Database) -> None:
    db["keys"].create(
        {"id": int, "digest": str, "preview": str, "label": str, "tier": str, "rpm": int, "created": str,
         "status": str},
        pk="id",
        not_null={"digest", "preview", "label", "tier", "rpm", "created", "status"},
    )
    db["keys"].create_index(["digest"], unique=True)
    db["keys"].create_index(["preview"], unique=True)


class KeyStore:
    def __init__(self, path: Path, today: Callable[[], dt.date] | None = None) -> None:
        self.path = path
        self._today = today or (lambda: dt.datetime.now(dt.UTC).date())
        self._db = sqlite_utils.Database(path, execute_plugins=False)
        # WAL: a writer (the CLI, the console in another process) never blocks the servers' reads.
        self._db.enable_wal()
        self._migrate()

    @classmethod
    def open(cls, data_dir: Path) -> KeyStore:
        data_dir.mkdir(parents=True, exist_ok=True)
        return cls(data_dir / "keys.db")

    def _migrate(self) -> None:
        # Two processes starting together on one data dir: the write lock makes the second wait, then
        # find the migrations applied, instead of racing to create the same table.
        self._db.execute("BEGIN IMMEDIATE")
        try:
            migrations.apply(self._db)
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()

    def create(self, label: str, tier: str, rpm: int | None = None) -> IssuedKey:
        label = _checked_label(label)
        rpm = checked_rpm(tier, rpm)
        for _ in range(PREVIEW_DRAWS):
            key = KEY_PREFIX + secrets.token_urlsafe(SECRET_BYTES)
            row = {"digest": _digest(key), "preview": _preview(key), "label": label, "tier": tier, "rpm": rpm,
                   "created": self._today().isoformat(), "status": ACTIVE}
            try:
                with self._db.atomic():
                    key_id = self._db["keys"].insert(row).last_pk
            except sqlite3.IntegrityError:
                continue  # the preview is taken (about one in 16 million per existing key): draw again
            return IssuedKey(key=key, record=ApiKey(id=key_id, **row))
        raise RuntimeError(f"{PREVIEW_DRAWS} new keys in a row had a preview already taken; the store at "
                           f"{self.path} is not behaving as a unique index should.")

    def active_key(self, key: str) -> ApiKey | None:
        """The active key ``key`` is, or None when it is unknown, malformed or deactivated."""
        if not _KEY_PATTERN.fullmatch(key):
            return None
        # Found by its preview, which is not secret; the secret-derived digest is compared in constant time.
        for row in self._db.query("select * from keys where preview = ?", [_preview(key)]):
            if hmac.compare_digest(row["digest"], _digest(key)) and row["status"] == ACTIVE:
                return ApiKey(**row)
        return None

    def all(self) -> list[ApiKey]:
        return [ApiKey(**row) for row in self._db.query("select * from keys order by id")]

    def find(self, reference: str) -> ApiKey:
        """A key by its id (``3``) or preview (``tst_abcd…``, the ellipsis optional)."""
        reference = reference.strip()
        if reference.isascii() and reference.isdigit():
            rows = list(self._db.query("select * from keys where id = ?", [int(reference)]))
        else:
            preview = reference.removesuffix(ELLIPSIS).removesuffix("...") + ELLIPSIS
            rows = list(self._db.query("select * from keys where preview = ?", [preview]))
        if not rows:
            raise KeyStoreError(f"No key has the id or preview {reference!r}; `solarserv keys list` shows "
                                "them.")
        return ApiKey(**rows[0])

    def set_status(self, key_id: int, status: str) -> ApiKey:
        if status not in (ACTIVE, INACTIVE):
            raise KeyStoreError(f"A key's status is {ACTIVE} or {INACTIVE}, not {status!r}.")
        with self._db.atomic():
            self._db.execute("update keys set status = ? where id = ?", [status, key_id])
        return self.find(str(key_id))


def checked_rpm(tier: str, rpm: int | None) -> int:
    """The rpm a key of ``tier`` gets: the tier's fixed value, or for pro the one chosen (120–300)."""
    if tier not in TIERS:
        raise KeyStoreError(f"Unknown tier {tier!r}; the tiers are "
                            + "; ".join(t.describe() for t in TIERS.values()) + ".")
    spec = TIERS[tier]
    if rpm is None:
        if spec.min_rpm != spec.max_rpm:
            raise KeyStoreError(f"A {tier} key needs its rpm chosen, {spec.min_rpm} to {spec.max_rpm}.")
        return spec.min_rpm
    if not spec.min_rpm <= rpm <= spec.max_rpm:
        raise KeyStoreError(f"A {tier} key has {spec.allowance()}; {rpm} is not allowed.")
    return rpm


def _checked_label(label: str) -> str:
    label = label.strip()
    if not label:
        raise KeyStoreError("A key needs a label saying whose it is.")
    if len(label) > LABEL_MAX_LENGTH:
        raise KeyStoreError(f"A label is at most {LABEL_MAX_LENGTH} characters; this one has {len(label)}.")
    if any(ord(character) < 32 or ord(character) == 127 for character in label):
        raise KeyStoreError("A label cannot contain control characters (newlines, tabs, …).")
    return label


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _preview(key: str) -> str:
    return key[: len(KEY_PREFIX) + PREVIEW_CHARACTERS] + ELLIPSIS
