"""PostgreSQL schema, as numbered migrations recorded in ``schema_version`` (its own numbering).

Instants are ``timestamptz`` (microsecond precision, like the API); embeddings ``bytea`` holding
little-endian float32 exactly as given; JSON columns are text with the same content as in SQLite,
so both stores read and write them with the same code. Full text is the ``postings`` table both
stores share (chronomem's analyser, BM25 in numpy; see ``stores/sql/``), its primary key
covering every column a query reads. Text columns use the "C" collation: comparisons and
``ORDER BY`` follow code points, as in SQLite, whatever the database's locale (and B-tree lookups
are faster).
"""

from __future__ import annotations

from chronomem.stores.sql import Migration

__all__ = ["PG_MIGRATIONS"]

_INITIAL = (
    """CREATE TABLE store_meta (key TEXT COLLATE "C" PRIMARY KEY, value TEXT COLLATE "C")""",
    """CREATE TABLE spaces (
        space       TEXT COLLATE "C" PRIMARY KEY,
        change_seq  BIGINT NOT NULL DEFAULT 0,
        docs        BIGINT NOT NULL DEFAULT 0,
        doc_len_sum BIGINT NOT NULL DEFAULT 0
    )""",
    """CREATE TABLE agents (
        space                  TEXT COLLATE "C" NOT NULL REFERENCES spaces(space),
        agent                  TEXT COLLATE "C" NOT NULL,
        importance_accumulated DOUBLE PRECISION NOT NULL DEFAULT 0,
        PRIMARY KEY (space, agent)
    )""",
    """CREATE TABLE records (
        pk                 BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id                 TEXT COLLATE "C" NOT NULL UNIQUE,
        space              TEXT COLLATE "C" NOT NULL,
        agent              TEXT COLLATE "C" NOT NULL,
        kind               TEXT COLLATE "C" NOT NULL,
        text               TEXT COLLATE "C" NOT NULL,
        importance         DOUBLE PRECISION NOT NULL,
        occurred_at        TIMESTAMPTZ NOT NULL,
        recorded_at        TIMESTAMPTZ NOT NULL,
        last_accessed_at   TIMESTAMPTZ NOT NULL,
        last_verified_at   TIMESTAMPTZ,
        valid_from         TIMESTAMPTZ,
        valid_until        TIMESTAMPTZ,
        status             TEXT COLLATE "C" NOT NULL DEFAULT 'open',
        superseded_by      TEXT COLLATE "C",
        superseded_at      TIMESTAMPTZ,
        valid_until_before TIMESTAMPTZ,
        closed_reason      TEXT COLLATE "C",
        supersedes         TEXT COLLATE "C" NOT NULL DEFAULT '[]',
        domain             TEXT COLLATE "C",
        tags               TEXT COLLATE "C" NOT NULL DEFAULT '[]',
        metadata           TEXT COLLATE "C" NOT NULL DEFAULT '{}',
        evidence           TEXT COLLATE "C" NOT NULL DEFAULT '[]',
        depth              INTEGER NOT NULL DEFAULT 0,
        event_id           TEXT COLLATE "C",
        sensitivity        TEXT COLLATE "C" NOT NULL DEFAULT 'normal',
        evidence_status    TEXT COLLATE "C" NOT NULL DEFAULT 'ok',
        feedback_score     DOUBLE PRECISION NOT NULL DEFAULT 0,
        embedding          BYTEA,
        change_seq         BIGINT NOT NULL,
        doc_len            INTEGER NOT NULL DEFAULT 0
    )""",
    "CREATE INDEX records_by_agent ON records (space, agent, pk)",
    "CREATE INDEX records_by_change ON records (space, change_seq)",
    "CREATE INDEX records_by_agent_change ON records (space, agent, change_seq)",
    "CREATE INDEX records_by_event ON records (event_id)",
    """CREATE TABLE postings (
        space TEXT COLLATE "C" NOT NULL,
        term  TEXT COLLATE "C" NOT NULL,
        pk    BIGINT NOT NULL,
        agent TEXT COLLATE "C" NOT NULL,
        tf    INTEGER NOT NULL,
        dl    INTEGER NOT NULL,
        PRIMARY KEY (space, term, pk) INCLUDE (agent, tf, dl)
    )""",
    "CREATE INDEX postings_by_record ON postings (pk)",
    """CREATE TABLE tombstones (
        space      TEXT COLLATE "C" NOT NULL,
        record_id  TEXT COLLATE "C" NOT NULL,
        agent      TEXT COLLATE "C" NOT NULL,
        change_seq BIGINT NOT NULL
    )""",
    "CREATE INDEX tombstones_by_change ON tombstones (space, change_seq)",
    """CREATE TABLE audit_log (
        seq       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        space     TEXT COLLATE "C" NOT NULL,
        at        TIMESTAMPTZ NOT NULL,
        action    TEXT COLLATE "C" NOT NULL,
        record_id TEXT COLLATE "C" NOT NULL,
        actor     TEXT COLLATE "C",
        reason    TEXT COLLATE "C",
        detail    TEXT COLLATE "C" NOT NULL DEFAULT '{}'
    )""",
    "CREATE INDEX audit_by_record ON audit_log (record_id)",
    """CREATE TABLE events (
        pk          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id          TEXT COLLATE "C" NOT NULL UNIQUE,
        space       TEXT COLLATE "C" NOT NULL,
        text        TEXT COLLATE "C" NOT NULL,
        kind        TEXT COLLATE "C" NOT NULL,
        scope       TEXT COLLATE "C",
        occurred_at TIMESTAMPTZ NOT NULL,
        recorded_at TIMESTAMPTZ NOT NULL,
        metadata    TEXT COLLATE "C" NOT NULL DEFAULT '{}',
        embedding   BYTEA
    )""",
    "CREATE INDEX events_by_time ON events (space, occurred_at)",
    """CREATE TABLE links (
        space      TEXT COLLATE "C" NOT NULL,
        cause      TEXT COLLATE "C" NOT NULL,
        effect     TEXT COLLATE "C" NOT NULL,
        weight     DOUBLE PRECISION NOT NULL,
        provenance TEXT COLLATE "C" NOT NULL,
        similarity DOUBLE PRECISION,
        created_at TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (space, cause, effect)
    )""",
    "CREATE INDEX links_by_effect ON links (space, effect)",
)

_SERVICE = (
    """CREATE TABLE api_keys (
        id         TEXT COLLATE "C" PRIMARY KEY,
        space      TEXT COLLATE "C",
        scope      TEXT COLLATE "C" NOT NULL,
        label      TEXT COLLATE "C",
        digest     BYTEA NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        revoked_at TIMESTAMPTZ
    )""",
    """CREATE TABLE space_clocks (
        space  TEXT COLLATE "C" PRIMARY KEY,
        now_us BIGINT NOT NULL
    )""",
)

_REVIEW = (
    """CREATE TABLE review_proposals (
        space           TEXT COLLATE "C" NOT NULL,
        id              TEXT COLLATE "C" NOT NULL,
        agent           TEXT COLLATE "C" NOT NULL,
        action          TEXT COLLATE "C" NOT NULL,
        category        TEXT COLLATE "C" NOT NULL,
        record_ids      TEXT COLLATE "C" NOT NULL,
        reasons         TEXT COLLATE "C" NOT NULL,
        figures         TEXT COLLATE "C" NOT NULL,
        created_at      TIMESTAMPTZ NOT NULL,
        status          TEXT COLLATE "C" NOT NULL DEFAULT 'open',
        decided_at      TIMESTAMPTZ,
        decided_by      TEXT COLLATE "C",
        decision_reason TEXT COLLATE "C",
        PRIMARY KEY (space, id)
    )""",
    """CREATE TABLE access_log (
        seq       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        space     TEXT COLLATE "C" NOT NULL,
        at        TIMESTAMPTZ NOT NULL,
        as_of     TIMESTAMPTZ NOT NULL,
        record_id TEXT COLLATE "C" NOT NULL,
        actor     TEXT COLLATE "C",
        verb      TEXT COLLATE "C" NOT NULL,
        query     TEXT COLLATE "C"
    )""",
    "CREATE INDEX access_by_record ON access_log(space, record_id, seq)",
    """CREATE TABLE space_settings (
        space TEXT COLLATE "C" NOT NULL,
        key   TEXT COLLATE "C" NOT NULL,
        value TEXT COLLATE "C" NOT NULL,
        PRIMARY KEY (space, key)
    )""",
)

# The change feed (docs/design/change-feed.md): numbered per space by spaces.feed_seq, under the
# row lock that serialises the space's writers, so a space's feed commits in seq order.
_FEED = (
    "ALTER TABLE spaces ADD COLUMN feed_seq BIGINT NOT NULL DEFAULT 0",
    """CREATE TABLE changes (
        space     TEXT COLLATE "C" NOT NULL,
        seq       BIGINT NOT NULL,
        id        TEXT COLLATE "C" NOT NULL,
        at        TIMESTAMPTZ NOT NULL,
        kind      TEXT COLLATE "C" NOT NULL,
        record_id TEXT COLLATE "C",
        agent     TEXT COLLATE "C",
        actor     TEXT COLLATE "C",
        reason    TEXT COLLATE "C",
        detail    TEXT COLLATE "C" NOT NULL DEFAULT '{}',
        PRIMARY KEY (space, seq)
    )""",
    """CREATE TABLE webhooks (
        id              TEXT COLLATE "C" PRIMARY KEY,
        space           TEXT COLLATE "C" NOT NULL,
        url             TEXT COLLATE "C" NOT NULL,
        secret          TEXT COLLATE "C" NOT NULL,
        created_at      TIMESTAMPTZ NOT NULL,
        delivered       BIGINT NOT NULL DEFAULT 0,
        failures        INTEGER NOT NULL DEFAULT 0,
        last_error      TEXT COLLATE "C",
        next_attempt_at TIMESTAMPTZ,
        lease_owner     TEXT COLLATE "C",
        lease_until     TIMESTAMPTZ
    )""",
    """CREATE TABLE webhook_failures (
        pk         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        webhook_id TEXT COLLATE "C" NOT NULL,
        at         TIMESTAMPTZ NOT NULL,
        seq        BIGINT NOT NULL,
        event_id   TEXT COLLATE "C" NOT NULL,
        attempt    INTEGER NOT NULL,
        status     INTEGER,
        error      TEXT COLLATE "C" NOT NULL
    )""",
    "CREATE INDEX webhook_failures_by_hook ON webhook_failures(webhook_id, pk)",
)

# spaces.graph_seq: the change_seq of the last change to the space's events, links or their
# vectors, so a crisis read keeps its causal inputs while only records change.
_GRAPH_SEQ = (
    "ALTER TABLE spaces ADD COLUMN graph_seq BIGINT NOT NULL DEFAULT 0",
    "UPDATE spaces SET graph_seq = change_seq",
)

PG_MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "records, agents, spaces, lifecycle, audit, events, links, postings", _INITIAL),
    Migration(2, "passage vectors", ("ALTER TABLE records ADD COLUMN passages BYTEA",)),
    Migration(3, "service: API keys and simulated space clocks", _SERVICE),
    Migration(4, "review proposals, the access log, space settings", _REVIEW),
    Migration(5, "who said a record", ('ALTER TABLE records ADD COLUMN speaker TEXT COLLATE "C"',)),
    Migration(
        6,
        "another model's vectors during a switch (reembed)",
        (
            """CREATE TABLE reembed_vectors (
                kind      TEXT COLLATE "C" NOT NULL,
                pk        BIGINT NOT NULL,
                embedding BYTEA NOT NULL,
                passages  BYTEA,
                PRIMARY KEY (kind, pk)
            )""",
        ),
    ),
    Migration(
        7,
        "sessions: the conversation or run a record belongs to",
        (
            'ALTER TABLE records ADD COLUMN session TEXT COLLATE "C"',
            "CREATE INDEX records_by_session ON records(space, session) WHERE session IS NOT NULL",
        ),
    ),
    Migration(
        8,
        "time to live: when an open record closes, and the span a refreshing read extends",
        (
            "ALTER TABLE records ADD COLUMN expires_at TIMESTAMPTZ",
            "ALTER TABLE records ADD COLUMN ttl DOUBLE PRECISION",
            "CREATE INDEX records_expiring ON records(space, expires_at)"
            " WHERE status = 'open' AND expires_at IS NOT NULL",
        ),
    ),
    Migration(
        9,
        "source ids: what a record was made from (a message), one record of each per agent",
        (
            'ALTER TABLE records ADD COLUMN source_id TEXT COLLATE "C"',
            "CREATE UNIQUE INDEX records_by_source ON records(space, agent, source_id)"
            " WHERE source_id IS NOT NULL",
        ),
    ),
    Migration(
        10,
        "review proposals carry the change they propose (extracted memories)",
        ("ALTER TABLE review_proposals ADD COLUMN change TEXT NOT NULL DEFAULT '{}'",),
    ),
    Migration(11, "the change feed and webhook subscriptions", _FEED),
    Migration(12, "the causal graph's own change counter", _GRAPH_SEQ),
)
