"""The API key store: SQLite (through sqlite-utils) in the data dir, shared by the CLI and every server.

A key is ``tst_`` + 43 random URL-safe characters (32 bytes). Only its SHA-256 digest is stored, with
a preview (``tst_abcd…``) to recognise it by. Lookups read the database every time, never a cache, so
a key created or deactivated by any process counts at once in all of them. The same database keeps the
operator console's live sessions, so a logout in one server process ends the session in all of them.

The database is in WAL mode, so readers never wait for a writer. Writers do wait for each other: the
CLI waits up to WAIT_FOR_WRITER_SECONDS, a server (whose waits stall its event loop) up to
SERVER_WAIT_FOR_WRITER_SECONDS, then gives up with KeyStoreBusy.

Every change of a key (created, deactivated, reactivated, or asked for the status it had) is one INFO line of the
logger solarserv.keys, naming the key and who changed it: the audit trail an incident review reads.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import hmac
import logging
import os
import re
import secrets
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from solarserv.sqlite import Migrations, is_busy, is_file_failure, sqlite_utils
from solarserv.text import escaped, has_hidden_characters, shortened

log = logging.getLogger("solarserv.keys")

KEY_PREFIX = "tst_"
SECRET_BYTES = 32  # token_urlsafe(32) → 43 characters
PREVIEW_CHARACTERS = 4  # after the prefix; unique among keys, so a preview names one key
PREVIEW_DRAWS = 5  # new keys drawn before giving up when their previews are already taken
ELLIPSIS = "…"
_KEY_PATTERN = re.compile(re.escape(KEY_PREFIX) + r"[A-Za-z0-9_-]{43}")  # the prefix, then token_urlsafe(SECRET_BYTES)
# An API key, or the start of one, in text bound for a log line (a key sent as a place name, pasted as a label).
_KEY_SHAPED = re.compile(re.escape(KEY_PREFIX) + r"[A-Za-z0-9_-]*")
LABEL_MAX_LENGTH = 100

ACTIVE, INACTIVE = "active", "inactive"

# Who changes a key, as its audit line names them (KeyStore.create, set_status); the console names its client.
BY_THE_CLI = "the CLI"

SESSION_ID_BYTES = 32
SESSION_DAYS = 7  # how long a console session lives after its login
# How long a console form's id is kept (see create_console_forms_table): a page's forms carry its session's
# XSRF token, so none is accepted after the session that showed it has expired, at most SESSION_DAYS after
# the form's first sending. A form sent twice seconds or hours apart is told what its first sending did.
FORMS_KEPT_SECONDS = SESSION_DAYS * 24 * 3600

# How long to wait for another process's write lock. The CLI can wait (SQLite's default). A server waits on
# its event loop, stalling every request of the process, so briefly: a write holds the lock 0.4 ms median,
# at most 4.2 ms in 1,200 `create`s measured (WAL, fsync on commit), so only a stuck writer is refused.
WAIT_FOR_WRITER_SECONDS = 5.0
SERVER_WAIT_FOR_WRITER_SECONDS = 0.1
# Opening a store whose migrations are pending (after an upgrade) takes the write lock, waiting up to this long
# for it, in a server too: servers starting together on the upgraded store queue there.
WAIT_FOR_MIGRATION_SECONDS = 5.0


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

    @property
    def rpm_is_chosen(self) -> bool:
        """True when a key of this tier takes its rpm at issuance (`--rpm`, the console's RPM field)."""
        return self.min_rpm != self.max_rpm


TIERS = {tier.name: tier for tier in (Tier("free", 10, 10), Tier("builder", 60, 60), Tier("pro", 120, 300))}
# The spec's other names for two tiers ("Free/Dev", "Pro/Commercial"); keys record the names above.
TIER_ALIASES = {"dev": "free", "commercial": "pro"}
# SQLite's INTEGER holds no more: a larger id names no key.
_MAX_KEY_ID = 2**63 - 1


class KeyStoreError(ValueError):
    """A key cannot be issued or found as asked; the message says why, for the console and the CLI. ``field``:
    the key's field it is about (label, tier or rpm), which the console's form marks and focuses."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class KeyStoreBusy(Exception):
    """Another process held the database's write lock for longer than this store waits."""


class FormAlreadySent(Exception):
    """A key was asked for by a form that already created one (sent twice): ``key`` is that one."""

    def __init__(self, key: ApiKey) -> None:
        super().__init__(f"The form already created key {key.id}.")
        self.key = key


class KeyStoreUnusable(Exception):
    """The key store cannot be opened, read or written as it is (read-only to this user, not a database, a data
    dir that is a file); the message names it and says why."""


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

    def described(self) -> str:
        """The key as the CLI and the console name it to an operator: ``key 3 (tst_abcd…, “Acme”)``. A label holds no
        control character (checked_key_fields refuses them): written as it is."""
        return f"key {self.id} ({self.preview}, “{self.label}”)"

    def public_fields(self) -> dict[str, Any]:
        """Everything but the digest: for `keys list --json` and the console."""
        fields = asdict(self)
        del fields["digest"]
        return fields


@dataclass(frozen=True)
class StatusChange:
    """What KeyStore.set_status did: the key as it is now, whether it had another status before, and, when it had
    not, whether the console form asking had already been sent and its first sending changed it."""

    key: ApiKey
    changed: bool
    form_sent_before: bool

    def told(self) -> str:
        """The change in one sentence, as the CLI prints it and the console shows it."""
        sentence = f"{self.key.described()} {'is now' if self.changed else 'was already'} {self.key.status}."
        return sentence[0].upper() + sentence[1:]


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


@migrations()
def create_console_sessions_table(db: sqlite_utils.Database) -> None:
    db["console_sessions"].create({"id": str, "expires": float}, pk="id", not_null={"expires"})


@migrations()
def create_console_forms_table(db: sqlite_utils.Database) -> None:
    """The console's forms that created a key or changed its status, by the id each page gave its form, so that a
    create form sent twice creates one key, and a status form sent twice is told that its first sending changed the
    key. A row a key and a change from the console, as small as its key's."""
    db["console_forms"].create({"id": str, "key_id": int}, pk="id", not_null={"key_id"})


@migrations()
def record_when_console_forms_were_sent(db: sqlite_utils.Database) -> None:
    """When each console form was first sent, so that forms no page can send any more are dropped
    (FORMS_KEPT_SECONDS). Those recorded before are taken as sent now: kept as long as a form sent now."""
    db["console_forms"].add_column("sent", float)
    db.execute("update console_forms set sent = ?", [time.time()])


def _sync_directory(directory: Path) -> None:
    """Write ``directory``'s entries to disk: a name just linked into it survives a power loss only then."""
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


@contextlib.contextmanager
def _failures_explained(path: Path) -> Iterator[None]:
    """SQLite's failures that an operator acts on, as this module's: "database is locked", after the store's
    wait for a writer, as KeyStoreBusy; a file that cannot be used as it is as KeyStoreUnusable."""
    try:
        yield
    except sqlite3.Error as exc:
        if is_busy(exc):
            raise KeyStoreBusy(f"The key store {path} is locked by another process's write; try again in a "
                               "moment.") from exc
        if is_file_failure(exc):
            raise KeyStoreUnusable(f"The key store {path} cannot be used: {exc}.") from exc
        raise


def _migrations_unknown_here(db: sqlite_utils.Database) -> list[str]:
    """The migrations applied to ``db`` that this version does not have: a newer solarserv's."""
    with contextlib.closing(sqlite_utils.Database(memory=True)) as new_store:  # where every migration is pending
        known = {migration.name for migration in migrations.pending(new_store)}
    return [migration.name for migration in migrations.applied(db) if migration.name not in known]


def _explained(method: Callable) -> Callable:
    """A KeyStore method whose SQLite failures are explained (_failures_explained)."""

    @functools.wraps(method)
    def explained(self: KeyStore, *args: Any, **kwargs: Any) -> Any:
        with _failures_explained(self.path):
            return method(self, *args, **kwargs)

    return explained


class KeyStore:
    def __init__(self, path: Path, clock: Callable[[], float] = time.time,
                 wait_for_writer: float = WAIT_FOR_WRITER_SECONDS, *, file: Path | None = None) -> None:
        """The store at ``path``, kept in ``file`` when it is not there yet: a new store set up beside it, which
        its failures name as the store at ``path`` they are (see _put_new_store_at)."""
        self.path = path
        self._clock = clock
        with _failures_explained(path):  # a file that cannot be opened fails here
            self._db = sqlite_utils.Database(file or path, execute_plugins=False)
        try:
            self._wait_for_writer(WAIT_FOR_MIGRATION_SECONDS)
            self._set_up()
        except BaseException:
            self._db.close()  # a store that cannot be opened leaves no connection behind
            raise
        self._wait_for_writer(wait_for_writer)

    @classmethod
    def open(cls, data_dir: Path, wait_for_writer: float = WAIT_FOR_WRITER_SECONDS) -> KeyStore:
        try:
            data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            reason = "it is not a directory" if isinstance(exc, FileExistsError) else exc.strerror
            raise KeyStoreUnusable(f"The key store cannot be kept in the data dir {data_dir}: {reason}.") from None
        path = cls.path_in(data_dir)
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            cls._put_new_store_at(path)
        except OSError:
            pass  # a store that cannot be looked at, SQLite's open reports
        else:
            # A new store is put in place whole, so an empty one is never being set up: it was emptied (a copy cut
            # short by a full disk, `: > keys.db`), or made by another program opening the path before any store was
            # there (`sqlite3 keys.db .tables` makes an empty file). SQLite would take the emptied one for a new
            # store: its keys would be gone without a word, every keyed request refused.
            if size == 0:
                raise KeyStoreUnusable(f"The key store {path} is an empty file, so it holds no keys: it was emptied (a "
                                       "copy cut short), or made by another program opening it before any store was "
                                       "there (sqlite3). Restore it from a backup if it held keys; else delete it to "
                                       "start a new store.")
        return cls(path, wait_for_writer=wait_for_writer)

    @classmethod
    def _put_new_store_at(cls, path: Path) -> None:
        """A new store, set up whole in a file of its own beside ``path`` and put there, unless another process put
        one there meanwhile: that one is used. So ``path`` is never a store being set up, and a start that fails or
        is killed while setting one up (a full disk, a power loss) leaves none there; the file of its own, named
        keys.db-new-…, is left only by one killed.

        The file is readable by its owner alone: it holds the keys' digests and the console's sessions, and SQLite
        gives the -wal and -shm files the mode of the database. Its WAL is checkpointed into it before it is put in
        place, where its -wal file, named after it, would not be found."""
        try:
            handle, name = tempfile.mkstemp(prefix=f"{path.name}-new-", dir=path.parent)  # mode 0600
        except OSError as exc:  # a data dir this user cannot write
            raise KeyStoreUnusable(f"The key store {path} cannot be used: {exc.strerror}.") from None
        os.close(handle)
        new_store = Path(name)
        try:
            with contextlib.closing(cls(path, file=new_store)) as store:
                store._checkpoint()
            try:
                os.link(new_store, path)  # fails where another process's store is, where a rename would replace it
            except FileExistsError:
                pass
            except OSError as exc:  # a file system without hard links
                raise KeyStoreUnusable(f"The key store {path} cannot be used: {exc.strerror}.") from None
            else:
                _sync_directory(path.parent)
        finally:
            for leftover in (new_store, *(Path(f"{new_store}{suffix}") for suffix in ("-wal", "-shm"))):
                leftover.unlink(missing_ok=True)

    @staticmethod
    def path_in(data_dir: Path) -> Path:
        return Path(data_dir) / "keys.db"

    @_explained
    def _set_up(self) -> None:
        # WAL: a writer (the CLI, the console in another process) never blocks the servers' reads, which
        # run on their event loops. A store that cannot have it (an in-memory one) is refused.
        self._enable_wal()
        if self._db.journal_mode != "wal":
            raise KeyStoreError(f"The key store {self.path} cannot be put in WAL mode (its journal mode is "
                                f"{self._db.journal_mode!r}); servers rely on it to read keys without "
                                "waiting for a writer.")
        if unknown := _migrations_unknown_here(self._db):
            # Its rows may have columns this version would fail to read, or constraints it would break by writing.
            raise KeyStoreUnusable(f"The key store {self.path} was set up by a newer solarserv: its schema has the "
                                   f"migration{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}, "
                                   "which this version does not know. Run that version, or restore a copy of the store "
                                   "made by this one.")
        # Nearly every start finds the migrations applied: a read, which waits for no writer, so a store
        # opens while another process holds the write lock. Pending migrations take that lock: two
        # processes starting together after an upgrade queue there, and the second finds them applied
        # instead of racing to create the same table.
        if migrations.pending(self._db):
            with self._writing():
                migrations.apply(self._db)

    def _enable_wal(self) -> None:
        """Switching a new store to WAL needs the file alone, and SQLite refuses it at once, without the busy
        timeout's wait, when another connection opening the store too is between its read and its write (a wait
        there could deadlock): asked again, for as long as a pending migration may wait."""
        deadline = time.monotonic() + WAIT_FOR_MIGRATION_SECONDS
        while True:
            try:
                self._db.enable_wal()
                return
            except sqlite3.OperationalError as exc:
                if not is_busy(exc) or time.monotonic() > deadline:
                    raise
            time.sleep(0.005)

    def _wait_for_writer(self, seconds: float) -> None:
        """How long a write waits for another process's write lock before SQLite says "locked"."""
        self._db.execute(f"pragma busy_timeout = {round(seconds * 1000)}")

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """A transaction that takes the write lock first (BEGIN IMMEDIATE), waiting for it as long as this
        store waits. A plain BEGIN would take it at the first write, and sqlite-utils reads the table's
        columns before inserting: a transaction that has read fails at once when the lock is taken.

        Whatever fails inside, the COMMIT included (which leaves the transaction open, holding the lock),
        is rolled back; `rollback` does nothing when the failure already ended the transaction."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
            self._db.execute("COMMIT")
        except BaseException:
            self._db.rollback()
            raise

    @_explained
    def _checkpoint(self) -> None:
        """Copy every write in the WAL into the database file, and empty the WAL."""
        self._db.execute("pragma wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        self._db.close()

    def _today(self) -> dt.date:
        return dt.datetime.fromtimestamp(self._clock(), dt.UTC).date()

    @_explained
    def create(self, label: str, tier: str, rpm: int | None = None, *, by: str, form: str | None = None) -> IssuedKey:
        """A new key, issued by ``by`` (BY_THE_CLI, or the console and its client) as its audit line says. ``form``:
        the id of the console form asking, which creates one key however often it is sent (FormAlreadySent)."""
        label, tier, rpm = checked_key_fields(label, tier, rpm)
        for _ in range(PREVIEW_DRAWS):
            key = KEY_PREFIX + secrets.token_urlsafe(SECRET_BYTES)
            row = {"digest": _digest(key), "preview": _preview(key), "label": label, "tier": tier, "rpm": rpm,
                   "created": self._today().isoformat(), "status": ACTIVE}
            try:
                with self._writing():  # the form looked up under the lock: of two sendings at once, one creates
                    if (created := self._key_changed_by(form)) is not None:
                        raise FormAlreadySent(self.find(str(created)))
                    key_id = self._db["keys"].insert(row).last_pk
                    self._record_form(form, key_id)
            except sqlite3.IntegrityError:
                continue  # the preview is taken (about one in 16 million per existing key): draw again
            record = ApiKey(id=key_id, **row)
            _log_change(record, "created", by, f"{record.tier}, {record.rpm} requests per minute")
            return IssuedKey(key=key, record=record)
        raise RuntimeError(f"{PREVIEW_DRAWS} new keys in a row had a preview already taken; the store at "
                           f"{self.path} is not behaving as a unique index should.")

    def _record_form(self, form: str | None, key_id: int) -> None:
        """Record that the console form ``form`` created or changed the key ``key_id``, inside the write that did
        it. The forms older than FORMS_KEPT_SECONDS, which no page can send any more, are dropped in the same
        write: the table holds no more than the forms of a session's lifetime, and only console forms pay."""
        if form is None:
            return
        now = self._clock()
        self._db.execute("delete from console_forms where sent <= ?", [now - FORMS_KEPT_SECONDS])
        self._db["console_forms"].insert({"id": form, "key_id": key_id, "sent": now}, ignore=True)

    def _key_changed_by(self, form: str | None) -> int | None:
        """The id of the key the console form ``form`` created or changed, if a sending of it did."""
        if form is None:
            return None
        row = self._db.execute("select key_id from console_forms where id = ?", [form]).fetchone()
        return None if row is None else row[0]

    @_explained
    def active_key(self, key: str) -> ApiKey | None:
        """The active key ``key`` is, or None when it is unknown, malformed or deactivated."""
        if not is_whole_key(key):
            return None
        # Found by its preview, which is not secret; the secret-derived digest is compared in constant time.
        for row in self._db.query("select * from keys where preview = ?", [_preview(key)]):
            if hmac.compare_digest(row["digest"], _digest(key)) and row["status"] == ACTIVE:
                return ApiKey(**row)
        return None

    @_explained
    def all(self) -> list[ApiKey]:
        return [ApiKey(**row) for row in self._db.query("select * from keys order by id")]

    @_explained
    def newest(self, limit: int, offset: int = 0, containing: str = "") -> tuple[list[ApiKey], int]:
        """One page of keys, newest first, and how many there are in all: every key, or those whose label or
        preview holds ``containing`` (ASCII letters in any case, as SQLite's LIKE compares them), or the key that
        ``containing`` is whole (by its digest, as ``find`` takes it)."""
        where, arguments = "", []
        if is_whole_key(containing):
            where, arguments = " where digest = ?", [_digest(containing)]
        elif containing:
            pattern = "%" + re.sub(r"([\\%_])", r"\\\1", containing) + "%"  # the text itself, not a pattern
            where, arguments = r" where label like ? escape '\' or preview like ? escape '\'", [pattern, pattern]
        total = next(self._db.query(f"select count(*) as total from keys{where}", arguments))["total"]
        rows = self._db.query(f"select * from keys{where} order by id desc limit ? offset ?",
                              [*arguments, limit, offset])
        return [ApiKey(**row) for row in rows], total

    @_explained
    def find(self, reference: str) -> ApiKey:
        """A key by its id (``3``), preview (``tst_abcd…``, the ellipsis optional) or whole self (as a client reports
        it, or a leak shows it: found by its digest, so a key that only shares its preview is not it)."""
        reference = reference.strip()
        whole_key = is_whole_key(reference)
        if whole_key:
            rows = list(self._db.query("select * from keys where digest = ?", [_digest(reference)]))
        elif reference.isascii() and reference.isdigit():
            # A number beyond SQLite's integers names no key (and Python refuses to convert thousands of digits).
            in_range = len(reference) <= len(str(_MAX_KEY_ID)) and int(reference) <= _MAX_KEY_ID
            rows = list(self._db.query("select * from keys where id = ?", [int(reference)])) if in_range else []
        else:
            preview = reference.removesuffix(ELLIPSIS).removesuffix("...") + ELLIPSIS
            rows = list(self._db.query("select * from keys where preview = ?", [preview]))
        if not rows:
            # A whole key is not echoed: its preview names it.
            given = f"is the key {_preview(reference)} given whole" if whole_key else (
                f"has the id or preview {shortened(reference, repr)}")
            raise KeyStoreError(f"No key {given}; `solarserv keys list` shows them.")
        return ApiKey(**rows[0])

    @_explained
    def set_status(self, key_id: int, status: str, *, by: str, form: str | None = None) -> StatusChange:
        """Give a key ``status``, as ``by`` asked (see ``create``); one it already has is left as it is, which the
        audit line says too. ``form``: the id of the console form asking, recorded with a change it makes, so that
        its second sending is told the first made it (StatusChange.form_sent_before)."""
        if status not in (ACTIVE, INACTIVE):
            raise KeyStoreError(f"A key's status is {ACTIVE} or {INACTIVE}, not {status!r}.")
        # Read under the write lock, so that the audit line says what this write changed, not what another's did.
        with self._writing():
            before = self.find(str(key_id))  # an unknown id, however large, is a KeyStoreError
            changed = before.status != status
            if changed:
                self._db.execute("update keys set status = ? where id = ?", [status, before.id])
                self._record_form(form, before.id)
            form_sent_before = not changed and self._key_changed_by(form) == before.id
        key = replace(before, status=status)
        if changed:
            _log_change(key, "reactivated" if status == ACTIVE else "deactivated", by)
        else:
            _log_change(key, f"left {status}", by, "it already was")
        return StatusChange(key=key, changed=changed, form_sent_before=form_sent_before)

    # The console's sessions. The session cookie names one; only those recorded here, unexpired, admit.

    @_explained
    def start_session(self, lifetime_seconds: float) -> str:
        """A new session's id, live for ``lifetime_seconds``. Sessions that have expired are dropped."""
        session_id = secrets.token_urlsafe(SESSION_ID_BYTES)
        with self._writing():
            self._drop_expired_sessions()
            self._db["console_sessions"].insert({"id": session_id, "expires": self._clock() + lifetime_seconds})
        return session_id

    @_explained
    def drop_expired_sessions(self) -> None:
        """Forget the console sessions that have expired. A write even when none has: `serve` calls it at start,
        to refuse a store it cannot write before it binds the port."""
        with self._writing():
            self._drop_expired_sessions()

    def _drop_expired_sessions(self) -> None:
        self._db.execute("delete from console_sessions where expires <= ?", [self._clock()])

    @_explained
    def session_is_live(self, session_id: str) -> bool:
        rows = self._db.execute("select 1 from console_sessions where id = ? and expires > ?",
                                [session_id, self._clock()])
        return rows.fetchone() is not None

    @_explained
    def end_session(self, session_id: str) -> None:
        with self._writing():
            self._db.execute("delete from console_sessions where id = ?", [session_id])


def _log_change(key: ApiKey, what: str, by: str, detail: str | None = None) -> None:
    """A key's audit line. The key by its id, preview and label: never the key, which only its client holds."""
    log.info("Key %d (%s, “%s”) %s by %s%s", key.id, key.preview, escaped(without_keys(key.label)), what, by,
             f": {detail}" if detail else "")


def without_keys(text: str) -> str:
    """``text`` for a log line, with anything shaped like an API key, or the start of one, cut to ``tst_…``."""
    return _KEY_SHAPED.sub(KEY_PREFIX + ELLIPSIS, text)


def is_whole_key(text: str) -> bool:
    """Whether ``text`` has a key's form (``tst_`` and 43 characters), not just its preview's."""
    return _KEY_PATTERN.fullmatch(text) is not None


def checked_key_fields(label: str, tier: str, rpm: int | None) -> tuple[str, str, int]:
    """The label, tier name and rpm a new key gets, or a KeyStoreError saying what is wrong with them."""
    spec = _tier_named(tier)
    return _checked_label(label), spec.name, _checked_rpm(spec, rpm)


def _tier_named(name: str) -> Tier:
    """The tier called ``name``, or by one of the spec's other names (TIER_ALIASES)."""
    tier = TIERS.get(TIER_ALIASES.get(name, name))
    if tier is None:
        raise KeyStoreError(f"Unknown tier {shortened(name, repr)}; the tiers are "
                            + "; ".join(t.describe() for t in TIERS.values()) + ".", field="tier")
    return tier


def _checked_rpm(tier: Tier, rpm: int | None) -> int:
    """The rpm a key of ``tier`` gets: the tier's fixed value, or the one chosen within its range."""
    if rpm is None:
        if tier.rpm_is_chosen:
            raise KeyStoreError(f"A {tier.name} key needs its rpm chosen, {tier.min_rpm} to {tier.max_rpm}.",
                                field="rpm")
        return tier.min_rpm
    if not tier.min_rpm <= rpm <= tier.max_rpm:
        raise KeyStoreError(f"A {tier.name} key has {tier.allowance()}; {rpm} is not allowed.", field="rpm")
    return rpm


def _checked_label(label: str) -> str:
    label = label.strip()
    if not label:
        raise KeyStoreError("A key needs a label saying whose it is.", field="label")
    if len(label) > LABEL_MAX_LENGTH:
        raise KeyStoreError(f"A label is at most {LABEL_MAX_LENGTH} characters; this one has {len(label)}.",
                            field="label")
    if has_hidden_characters(label):
        raise KeyStoreError("A label cannot contain control characters (newlines, tabs, …), bytes that are "
                            "not UTF-8, line separators or bidirectional overrides.", field="label")
    return label


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _preview(key: str) -> str:
    return key[: len(KEY_PREFIX) + PREVIEW_CHARACTERS] + ELLIPSIS
