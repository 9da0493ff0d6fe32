"""SQLite schema, as numbered migrations applied in order and recorded in ``schema_version``.

A migration is a tuple of statements run in one transaction. Never edit a released migration;
append a new one. Instants are INTEGER microseconds since the Unix epoch (exact round trip);
embeddings are little-endian float32 BLOBs; JSON columns hold lists and objects. Full text is a
``postings`` table shared in shape with PostgreSQL (see ``stores/sql/``).
"""

from __future__ import annotations

from chronomem.stores.sql import Migration

__all__ = ["APPLICATION_ID", "MIGRATIONS", "Migration"]

#: ``PRAGMA application_id`` of a chronomem store (the bytes "CHRM"): marks the file as ours,
#: so a database of another application is recognised before anything is written to it.
APPLICATION_ID = 0x4348524D


_INITIAL = (
    """CREATE TABLE store_meta (
        key   TEXT PRIMARY KEY,
        value TEXT
    )""",
    """CREATE TABLE spaces (
        space      TEXT PRIMARY KEY,
        change_seq INTEGER NOT NULL DEFAULT 0
    )""",
    """CREATE TABLE agents (
        space                  TEXT NOT NULL REFERENCES spaces(space),
        agent                  TEXT NOT NULL,
        importance_accumulated REAL NOT NULL DEFAULT 0,
        PRIMARY KEY (space, agent)
    )""",
    # pk: AUTOINCREMENT so keys are never reused; the in-memory arrays rely on keys growing.
    """CREATE TABLE records (
        pk               INTEGER PRIMARY KEY AUTOINCREMENT,
        id               TEXT NOT NULL UNIQUE,
        space            TEXT NOT NULL,
        agent            TEXT NOT NULL,
        kind             TEXT NOT NULL,
        text             TEXT NOT NULL,
        importance       REAL NOT NULL,
        occurred_at      INTEGER NOT NULL,
        recorded_at      INTEGER NOT NULL,
        last_accessed_at INTEGER NOT NULL,
        last_verified_at INTEGER,
        valid_from       INTEGER,
        valid_until      INTEGER,
        status           TEXT NOT NULL DEFAULT 'open',
        superseded_by    TEXT,
        superseded_at    INTEGER,
        closed_reason    TEXT,
        supersedes       TEXT NOT NULL DEFAULT '[]',
        domain           TEXT,
        tags             TEXT NOT NULL DEFAULT '[]',
        metadata         TEXT NOT NULL DEFAULT '{}',
        evidence         TEXT NOT NULL DEFAULT '[]',
        depth            INTEGER NOT NULL DEFAULT 0,
        event_id         TEXT,
        sensitivity      TEXT NOT NULL DEFAULT 'normal',
        evidence_status  TEXT NOT NULL DEFAULT 'ok',
        feedback_score   REAL NOT NULL DEFAULT 0,
        embedding        BLOB,
        change_seq       INTEGER NOT NULL
    )""",
    "CREATE INDEX records_by_agent ON records(space, agent, pk)",
    "CREATE INDEX records_by_change ON records(space, change_seq)",
    """CREATE TABLE tombstones (
        space      TEXT NOT NULL,
        record_id  TEXT NOT NULL,
        agent      TEXT NOT NULL,
        change_seq INTEGER NOT NULL
    )""",
    "CREATE INDEX tombstones_by_change ON tombstones(space, change_seq)",
    # External-content FTS5 index over records.text; BM25 for lexical relevance.
    """CREATE VIRTUAL TABLE records_fts USING fts5(
        text, content='records', content_rowid='pk',
        tokenize='porter unicode61 remove_diacritics 2'
    )""",
    """CREATE TRIGGER records_fts_insert AFTER INSERT ON records BEGIN
        INSERT INTO records_fts(rowid, text) VALUES (new.pk, new.text);
    END""",
    """CREATE TRIGGER records_fts_delete AFTER DELETE ON records BEGIN
        INSERT INTO records_fts(records_fts, rowid, text) VALUES ('delete', old.pk, old.text);
    END""",
    """CREATE TRIGGER records_fts_update AFTER UPDATE OF text ON records BEGIN
        INSERT INTO records_fts(records_fts, rowid, text) VALUES ('delete', old.pk, old.text);
        INSERT INTO records_fts(rowid, text) VALUES (new.pk, new.text);
    END""",
)

_LIFECYCLE = (
    # The world-time end a record had before it was closed: reads "as of" an instant before the
    # closing see the window as it was then.
    "ALTER TABLE records ADD COLUMN valid_until_before INTEGER",
    """CREATE TABLE audit_log (
        seq       INTEGER PRIMARY KEY AUTOINCREMENT,
        space     TEXT NOT NULL,
        at        INTEGER NOT NULL,
        action    TEXT NOT NULL,
        record_id TEXT NOT NULL,
        actor     TEXT,
        reason    TEXT,
        detail    TEXT NOT NULL DEFAULT '{}'
    )""",
    "CREATE INDEX audit_by_record ON audit_log(record_id)",
)

_CAUSAL = (
    """CREATE TABLE events (
        pk          INTEGER PRIMARY KEY AUTOINCREMENT,
        id          TEXT NOT NULL UNIQUE,
        space       TEXT NOT NULL,
        text        TEXT NOT NULL,
        kind        TEXT NOT NULL,
        scope       TEXT,
        occurred_at INTEGER NOT NULL,
        recorded_at INTEGER NOT NULL,
        metadata    TEXT NOT NULL DEFAULT '{}',
        embedding   BLOB
    )""",
    "CREATE INDEX events_by_time ON events(space, occurred_at)",
    # One link per (cause, effect); an explicit link replaces an inferred one, never the reverse.
    """CREATE TABLE links (
        space      TEXT NOT NULL,
        cause      TEXT NOT NULL,
        effect     TEXT NOT NULL,
        weight     REAL NOT NULL,
        provenance TEXT NOT NULL,
        similarity REAL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (space, cause, effect)
    )""",
    "CREATE INDEX links_by_effect ON links(space, effect)",
    "CREATE INDEX records_by_event ON records(event_id)",
)

_POSTINGS = (
    # chronomem's own analyser and inverted index replace FTS5, so SQLite and PostgreSQL match and
    # score text identically; SQLStore fills the postings on open (a new analyser value).
    "DROP TRIGGER records_fts_insert",
    "DROP TRIGGER records_fts_delete",
    "DROP TRIGGER records_fts_update",
    "DROP TABLE records_fts",
    "ALTER TABLE records ADD COLUMN doc_len INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE spaces ADD COLUMN docs INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE spaces ADD COLUMN doc_len_sum INTEGER NOT NULL DEFAULT 0",
    """CREATE TABLE postings (
        space TEXT NOT NULL,
        term  TEXT NOT NULL,
        pk    INTEGER NOT NULL,
        agent TEXT NOT NULL,
        tf    INTEGER NOT NULL,
        dl    INTEGER NOT NULL,
        PRIMARY KEY (space, term, pk)
    ) WITHOUT ROWID""",
    "CREATE INDEX postings_by_record ON postings(pk)",
    # What other processes changed, per agent (the sync before every read).
    "CREATE INDEX records_by_agent_change ON records(space, agent, change_seq)",
)

_SERVICE = (
    """CREATE TABLE api_keys (
        id         TEXT PRIMARY KEY,
        space      TEXT,
        scope      TEXT NOT NULL,
        label      TEXT,
        digest     BLOB NOT NULL,
        created_at INTEGER NOT NULL,
        revoked_at INTEGER
    )""",
    """CREATE TABLE space_clocks (
        space  TEXT PRIMARY KEY,
        now_us INTEGER NOT NULL
    )""",
)

# The change feed (docs/design/change-feed.md): numbered per space by spaces.feed_seq.
_FEED = (
    "ALTER TABLE spaces ADD COLUMN feed_seq INTEGER NOT NULL DEFAULT 0",
    # keyed by (space, seq): a read from a position is one range of the key; the random ids
    # are unique without an index of their own
    """CREATE TABLE changes (
        space     TEXT NOT NULL,
        seq       INTEGER NOT NULL,
        id        TEXT NOT NULL,
        at        INTEGER NOT NULL,
        kind      TEXT NOT NULL,
        record_id TEXT,
        agent     TEXT,
        actor     TEXT,
        reason    TEXT,
        detail    TEXT NOT NULL DEFAULT '{}',
        PRIMARY KEY (space, seq)
    ) WITHOUT ROWID""",
    """CREATE TABLE webhooks (
        id              TEXT PRIMARY KEY,
        space           TEXT NOT NULL,
        url             TEXT NOT NULL,
        secret          TEXT NOT NULL,
        created_at      INTEGER NOT NULL,
        delivered       INTEGER NOT NULL DEFAULT 0,
        failures        INTEGER NOT NULL DEFAULT 0,
        last_error      TEXT,
        next_attempt_at INTEGER,
        lease_owner     TEXT,
        lease_until     INTEGER
    )""",
    """CREATE TABLE webhook_failures (
        pk         INTEGER PRIMARY KEY AUTOINCREMENT,
        webhook_id TEXT NOT NULL,
        at         INTEGER NOT NULL,
        seq        INTEGER NOT NULL,
        event_id   TEXT NOT NULL,
        attempt    INTEGER NOT NULL,
        status     INTEGER,
        error      TEXT NOT NULL
    )""",
    "CREATE INDEX webhook_failures_by_hook ON webhook_failures(webhook_id, pk)",
)

_REVIEW = (
    """CREATE TABLE review_proposals (
        space           TEXT NOT NULL,
        id              TEXT NOT NULL,
        agent           TEXT NOT NULL,
        action          TEXT NOT NULL,
        category        TEXT NOT NULL,
        record_ids      TEXT NOT NULL,
        reasons         TEXT NOT NULL,
        figures         TEXT NOT NULL,
        created_at      INTEGER NOT NULL,
        status          TEXT NOT NULL DEFAULT 'open',
        decided_at      INTEGER,
        decided_by      TEXT,
        decision_reason TEXT,
        PRIMARY KEY (space, id)
    )""",
    """CREATE TABLE access_log (
        seq       INTEGER PRIMARY KEY AUTOINCREMENT,
        space     TEXT NOT NULL,
        at        INTEGER NOT NULL,
        as_of     INTEGER NOT NULL,
        record_id TEXT NOT NULL,
        actor     TEXT,
        verb      TEXT NOT NULL,
        query     TEXT
    )""",
    "CREATE INDEX access_by_record ON access_log(space, record_id, seq)",
    """CREATE TABLE space_settings (
        space TEXT NOT NULL,
        key   TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (space, key)
    )""",
)

# spaces.graph_seq: the change_seq of the last change to the space's events, links or their
# vectors, so a crisis read keeps its causal inputs while only records change.
_GRAPH_SEQ = (
    "ALTER TABLE spaces ADD COLUMN graph_seq INTEGER NOT NULL DEFAULT 0",
    "UPDATE spaces SET graph_seq = change_seq",
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "records, agents, spaces, full-text index", _INITIAL),
    Migration(2, "lifecycle: pre-close validity, audit log", _LIFECYCLE),
    Migration(3, "causal graph: events and weighted links", _CAUSAL),
    Migration(4, "full text: chronomem's postings replace FTS5; sync index", _POSTINGS),
    Migration(5, "passage vectors", ("ALTER TABLE records ADD COLUMN passages BLOB",)),
    Migration(6, "service: API keys and simulated space clocks", _SERVICE),
    Migration(7, "review proposals, the access log, space settings", _REVIEW),
    Migration(
        8,
        "the file is marked as a chronomem store (application_id)",
        (f"PRAGMA application_id = {APPLICATION_ID}",),
    ),
    Migration(9, "who said a record", ("ALTER TABLE records ADD COLUMN speaker TEXT",)),
    Migration(
        10,
        "another model's vectors during a switch (reembed)",
        (
            """CREATE TABLE reembed_vectors (
                kind      TEXT NOT NULL,
                pk        INTEGER NOT NULL,
                embedding BLOB NOT NULL,
                passages  BLOB,
                PRIMARY KEY (kind, pk)
            )""",
        ),
    ),
    Migration(
        11,
        "sessions: the conversation or run a record belongs to",
        (
            "ALTER TABLE records ADD COLUMN session TEXT",
            "CREATE INDEX records_by_session ON records(space, session) WHERE session IS NOT NULL",
        ),
    ),
    Migration(
        12,
        "time to live: when an open record closes, and the span a refreshing read extends",
        (
            "ALTER TABLE records ADD COLUMN expires_at INTEGER",
            "ALTER TABLE records ADD COLUMN ttl REAL",
            "CREATE INDEX records_expiring ON records(space, expires_at)"
            " WHERE status = 'open' AND expires_at IS NOT NULL",
        ),
    ),
    Migration(
        13,
        "source ids: what a record was made from (a message), one record of each per agent",
        (
            "ALTER TABLE records ADD COLUMN source_id TEXT",
            "CREATE UNIQUE INDEX records_by_source ON records(space, agent, source_id)"
            " WHERE source_id IS NOT NULL",
        ),
    ),
    Migration(
        14,
        "review proposals carry the change they propose (extracted memories)",
        ("ALTER TABLE review_proposals ADD COLUMN change TEXT NOT NULL DEFAULT '{}'",),
    ),
    Migration(15, "the change feed and webhook subscriptions", _FEED),
    Migration(16, "the causal graph's own change counter", _GRAPH_SEQ),
)
