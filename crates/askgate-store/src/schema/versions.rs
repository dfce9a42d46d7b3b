//! Every version of the schema: its SQL for both backends, and what
//! differs between them. Run in order by [`super::migrate`].

/// The SQL of a PostgreSQL trigger function `$function` that notifies the
/// channel `$channel` with the ask's id.
macro_rules! announce {
    ($function:literal, $channel:literal) => {
        concat!(
            "
CREATE FUNCTION ",
            $function,
            "() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('",
            $channel,
            "', NEW.id);
    RETURN NULL;
END
$$ LANGUAGE plpgsql;
"
        )
    };
}

/// Each migration: its version, its SQL for both backends, then the SQL
/// that differs for SQLite and for PostgreSQL.
pub(super) const MIGRATIONS: &[(i64, &str, &str, &str)] = &[
    (1, V1_COMMON, V1_SQLITE, V1_POSTGRES),
    (2, V2_CALLS, "", ""),
    (3, "", "", V3_POSTGRES_NOTIFY),
    (4, V4_TASKS, "", ""),
    (5, V5_DECISION_KEYS, "", ""),
    (6, "", "", V6_POSTGRES_NOTIFY_PARKED),
    (7, V7_CALL_KEYS, V7_SQLITE_BACKFILL, V7_POSTGRES_BACKFILL),
    (8, V8_DEPLOYMENT, "", ""),
    (9, V9_OWNERS, "", ""),
    (10, V10_RETRIES, "", ""),
    (11, V11_AUDIT_HEAD, "", ""),
    (12, V12_WAITING, "", ""),
    (13, V13_LOOKED_UP_ONLY, "", ""),
    (14, V14_PANELS, "", V14_POSTGRES_PANEL),
    (15, "", "", V15_POSTGRES_ANSWER_GROUPS),
    (16, "", V16_SQLITE_COUNTED, V16_POSTGRES_COUNTED),
    (17, "", "", V17_POSTGRES_SEALED_ARGUMENTS),
    (18, "", V18_SQLITE_ERASED, V18_POSTGRES_ERASED),
    (19, "", V19_SQLITE_A_TREE_A_ROW, V19_POSTGRES_OPEN_CALLS),
    (20, V20_IN_THEIR_ORDER, "", ""),
];

/// A call's asks are read newest first before its person is asked (a
/// `no` stands, an ask waiting is not asked twice), and a retry that
/// carries its request's state reads that request's newest call. Their
/// indexes held the rows but not their order's last column (`id`, and
/// `prepared_at`), so SQLite sorted what it found in a temporary B-tree
/// at every read: 110-170 µs each through sqlx here, more than the
/// search. Each index now ends with its query's order; its entries grow
/// by one column, a write touches the same pages. Like v12, it runs
/// again harmlessly on a store whose recorded version was set back, and
/// an askgate from before v20 still running beside this one finds its
/// rows by the new indexes.
const V20_IN_THEIR_ORDER: &str = "
CREATE INDEX IF NOT EXISTS asks_of_call ON asks (call_key, created_at, id);
DROP INDEX IF EXISTS asks_call_key;
CREATE INDEX IF NOT EXISTS calls_of_request ON calls (request, prepared_at)
    WHERE request IS NOT NULL;
DROP INDEX IF EXISTS calls_request;
";

/// Every B-tree a commit changes is a page its WAL frames write and its
/// sync waits on (some 15-20 µs each here), and a confirmed call waits on
/// its record's commit. On SQLite a `TEXT` or `BIGINT` primary key is a
/// B-tree of its own beside the table's, so a call's row and an audit
/// entry each cost two; the calls' two partial indexes, two more. Now a
/// call is one B-tree keyed by its id (`WITHOUT ROWID`; its rows are a
/// few hundred bytes), an entry's `seq` is the table's own key, and one
/// index holds the calls still open, by state (recovery) and by
/// arguments (a retry): a confirmed call's record writes five pages
/// instead of eight, its end two instead of three, a read's record two
/// instead of four. The tables are copied once, as SQLite's own
/// procedure for a changed table does; each is what it was, row for row.
/// Like v12, it runs again harmlessly on a store whose recorded version
/// was set back.
const V19_SQLITE_A_TREE_A_ROW: &str = "
CREATE TABLE calls_v19 (
    id TEXT NOT NULL PRIMARY KEY, owner TEXT NOT NULL, server TEXT NOT NULL, tool TEXT NOT NULL,
    arguments_digest TEXT, state TEXT NOT NULL, marker TEXT, prepared_at BIGINT NOT NULL,
    sent_at BIGINT, finished_at BIGINT, result TEXT, principal TEXT, request TEXT, told_at BIGINT
) WITHOUT ROWID;
INSERT INTO calls_v19 (id, owner, server, tool, arguments_digest, state, marker, prepared_at,
        sent_at, finished_at, result, principal, request, told_at)
    SELECT id, owner, server, tool, arguments_digest, state, marker, prepared_at,
        sent_at, finished_at, result, principal, request, told_at FROM calls;
DROP TABLE calls;
ALTER TABLE calls_v19 RENAME TO calls;
CREATE INDEX calls_open ON calls (state, arguments_digest) WHERE state IN ('sent', 'may_have_run');
CREATE INDEX calls_request ON calls (request) WHERE request IS NOT NULL;
CREATE TABLE audit_v19 (
    seq INTEGER PRIMARY KEY, entry TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL,
    decision_key TEXT
);
INSERT INTO audit_v19 (seq, entry, prev_hash, hash, decision_key)
    SELECT seq, entry, prev_hash, hash, decision_key FROM audit ORDER BY seq;
DROP TABLE audit;
ALTER TABLE audit_v19 RENAME TO audit;
CREATE UNIQUE INDEX audit_decision_key ON audit (decision_key) WHERE decision_key IS NOT NULL;
";

/// [`V19_SQLITE_A_TREE_A_ROW`]'s one index of open calls on PostgreSQL,
/// where a table and its key are two structures anyway. An askgate from
/// before v19 still running beside this one finds its `sent` calls by it
/// too: PostgreSQL knows `state = 'sent'` is one of the index's states.
const V19_POSTGRES_OPEN_CALLS: &str = "
CREATE INDEX IF NOT EXISTS calls_open ON calls (state, arguments_digest)
    WHERE state IN ('sent', 'may_have_run');
DROP INDEX IF EXISTS calls_sent;
DROP INDEX IF EXISTS calls_in_doubt;
";

/// A call's sealed arguments are erased by the store itself as its ask
/// leaves `pending`, whoever writes the status: askgate's own statements
/// leave the column alone, and an askgate from before v17, still running
/// beside this one during a rolling upgrade, settles asks without knowing
/// the column is there. Erased is `''`, not NULL: the ask had arguments
/// (NULL, it never had any — parked before v17, or by `askgate ask`), so
/// its page says they were erased only when they were. A write that sets
/// the column to NULL as the ask ends (an askgate of v17) keeps the mark
/// too. Asks that ended before, their arguments still there, are erased
/// now. Like v12, it runs again harmlessly on a store whose recorded
/// version was set back.
///
/// The trigger on SQLite, which cannot change the row being written
/// before it is: the row is written again, in the same statement.
/// That write ends the chain: it leaves `''`, which the trigger skips
/// (and recursive triggers are off anyway).
const V18_SQLITE_ERASED: &str = "
CREATE TRIGGER IF NOT EXISTS asks_erase_arguments
AFTER UPDATE OF status, sealed_arguments ON asks
FOR EACH ROW WHEN NEW.status <> 'pending'
    AND COALESCE(NEW.sealed_arguments, OLD.sealed_arguments) IS NOT NULL
    AND NEW.sealed_arguments IS NOT ''
BEGIN
    UPDATE asks SET sealed_arguments = '' WHERE id = NEW.id;
END;
UPDATE asks SET sealed_arguments = ''
    WHERE status <> 'pending' AND sealed_arguments IS NOT NULL AND sealed_arguments <> '';
";

/// [`V18_SQLITE_ERASED`]'s trigger on PostgreSQL: the row is erased as it
/// is written. The trigger is made before the asks that ended are erased:
/// its lock on the table holds off an older askgate's settling until the
/// migration commits, so none ends between the two unerased.
const V18_POSTGRES_ERASED: &str = "
CREATE OR REPLACE FUNCTION askgate_erase_arguments() RETURNS trigger AS $$
BEGIN
    NEW.sealed_arguments := '';
    RETURN NEW;
END
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS asks_erase_arguments ON asks;
CREATE TRIGGER asks_erase_arguments BEFORE UPDATE OF status, sealed_arguments ON asks FOR EACH ROW
    WHEN (NEW.status <> 'pending'
        AND COALESCE(NEW.sealed_arguments, OLD.sealed_arguments) IS NOT NULL
        AND NEW.sealed_arguments IS DISTINCT FROM '')
    EXECUTE FUNCTION askgate_erase_arguments();
UPDATE asks SET sealed_arguments = ''
    WHERE status <> 'pending' AND sealed_arguments IS NOT NULL AND sealed_arguments <> '';
";

/// A parked call's arguments, sealed (askgate-core's `ArgumentSeal`: AEAD
/// under a key derived from the deployment key, bound to the ask's id),
/// kept while the ask waits so that its page can show the people who may
/// answer it what they approve; erased when the ask ends (since v18 by
/// the store itself, see [`V18_SQLITE_ERASED`]). On SQLite the column is
/// added by [`SQLITE_COLUMNS`].
const V17_POSTGRES_SEALED_ARGUMENTS: &str = "
ALTER TABLE asks ADD COLUMN IF NOT EXISTS sealed_arguments TEXT;
";

/// An ask a panel decides is approved only by its count: the store itself
/// refuses to settle it `answered` (or `skipped`) before as many people's
/// yes's as its panel needs are recorded with it. The new askgate settles
/// such an ask in the write that records the answer that completes the
/// count; an askgate from before panels, still running beside it during a
/// rolling upgrade, would settle it on one answer — now refused. Declines,
/// withdrawals and expiry are let through: none of them runs the call.
const V16_SQLITE_COUNTED: &str = "
CREATE TRIGGER IF NOT EXISTS asks_approved_by_count BEFORE UPDATE OF status ON asks
FOR EACH ROW WHEN OLD.panel IS NOT NULL AND OLD.status = 'pending'
    AND NEW.status IN ('answered', 'skipped')
    AND (SELECT COUNT(*) FROM ask_answers WHERE ask_id = OLD.id AND verdict = 'accept')
        < COALESCE(json_extract(OLD.panel, '$.need'), 1)
BEGIN
    SELECT RAISE(ABORT, 'askgate: an ask its approval rule decides settles only when its people''s answers are counted (is an older askgate still running? upgrade it)');
END;
";

/// [`V16_SQLITE_COUNTED`] on PostgreSQL.
const V16_POSTGRES_COUNTED: &str = "
CREATE OR REPLACE FUNCTION askgate_approved_by_count() RETURNS trigger AS $$
BEGIN
    IF (SELECT COUNT(*) FROM ask_answers WHERE ask_id = OLD.id AND verdict = 'accept')
        < COALESCE((OLD.panel::json->>'need')::int, 1) THEN
        RAISE EXCEPTION 'askgate: an ask its approval rule decides settles only when its people''s answers are counted (is an older askgate still running? upgrade it)';
    END IF;
    RETURN NEW;
END
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS asks_approved_by_count ON asks;
CREATE TRIGGER asks_approved_by_count BEFORE UPDATE OF status ON asks FOR EACH ROW
    WHEN (OLD.panel IS NOT NULL AND OLD.status = 'pending' AND NEW.status IN ('answered', 'skipped'))
    EXECUTE FUNCTION askgate_approved_by_count();
";

/// An ask a panel decides (a team's approval rule: a quorum, who may
/// answer) keeps its panel with it, and each person's answer is its own
/// row: one per person and ask, by the primary key, so a person answering
/// from two replicas at once counts once.
/// Like v12, it runs again harmlessly on a store whose recorded version
/// was set back: on SQLite, which has no `ADD COLUMN IF NOT EXISTS`, the
/// column is added only when missing (see [`SQLITE_COLUMNS`]).
const V14_PANELS: &str = "
CREATE TABLE IF NOT EXISTS ask_answers (
    ask_id TEXT NOT NULL,
    person TEXT NOT NULL,
    verdict TEXT NOT NULL,
    reply TEXT NOT NULL,
    via TEXT NOT NULL,
    at BIGINT NOT NULL,
    PRIMARY KEY (ask_id, person)
);
";

/// On PostgreSQL, each person's answer is news to every process (as a
/// parked or settled ask is), as `{"id", "person", "verdict"}`.
const V14_POSTGRES_PANEL: &str = "
ALTER TABLE asks ADD COLUMN IF NOT EXISTS panel TEXT;
CREATE OR REPLACE FUNCTION askgate_announce_answered() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('askgate_answered',
        json_build_object('id', NEW.ask_id, 'person', NEW.person, 'verdict', NEW.verdict)::text);
    RETURN NULL;
END
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS ask_answered ON ask_answers;
CREATE TRIGGER ask_answered AFTER INSERT ON ask_answers FOR EACH ROW
    EXECUTE FUNCTION askgate_announce_answered();
";

/// A person's answer keeps the groups their sign-in gave them (an OpenID
/// provider's groups claim), as a JSON array: what made them eligible, for
/// every later count and for the record. On SQLite the column is added by
/// [`SQLITE_COLUMNS`].
const V15_POSTGRES_ANSWER_GROUPS: &str = "
ALTER TABLE ask_answers ADD COLUMN IF NOT EXISTS groups TEXT;
";

/// Columns a migration adds on SQLite, each only when missing: its
/// version, the table, the column and its type.
pub(super) const SQLITE_COLUMNS: &[(i64, &str, &str, &str)] = &[
    (14, "asks", "panel", "TEXT"),
    (15, "ask_answers", "groups", "TEXT"),
    (17, "asks", "sealed_arguments", "TEXT"),
];

/// Each call's record and each decision's audit entry is written into the
/// indexes that find it again, and only those: most calls are reads that
/// end at once, and no query ever looks one up again by its owner, state,
/// arguments or request. A call is found by its arguments while it is
/// `sent` or `may_have_run` (a retry), by its state while `sent`
/// (recovery), by its request when it has one; an audit entry by its
/// decision key when it has one. A read's record had cost six B-tree
/// writes; now two. Like v12, it runs again harmlessly on a store whose
/// recorded version was set back.
const V13_LOOKED_UP_ONLY: &str = "
DROP INDEX IF EXISTS calls_owner_state;
DROP INDEX IF EXISTS calls_state;
CREATE INDEX IF NOT EXISTS calls_sent ON calls (owner) WHERE state = 'sent';
DROP INDEX IF EXISTS calls_arguments;
CREATE INDEX IF NOT EXISTS calls_in_doubt ON calls (arguments_digest)
    WHERE state IN ('sent', 'may_have_run');
DROP INDEX IF EXISTS calls_request;
CREATE INDEX calls_request ON calls (request) WHERE request IS NOT NULL;
DROP INDEX IF EXISTS audit_decision_key;
CREATE UNIQUE INDEX audit_decision_key ON audit (decision_key) WHERE decision_key IS NOT NULL;
";

/// The asks waiting for a person are counted — per principal before each
/// ask is parked (its limit), all of them for the inbox and the metrics —
/// from an index that holds all the count reads. Without it, each count
/// read every pending ask's row, form and all: parking the n-th of n
/// held calls cost n row reads.
const V12_WAITING: &str = "
CREATE INDEX IF NOT EXISTS asks_waiting ON asks (status, principal, expires_at);
";

/// The audit chain's head — the newest entry's position and hash — kept
/// in a row of its own, moved with every append in the same write, and
/// signed when the store has a key (see the `audit` module): deleting the
/// newest entries, or all of them, no longer leaves a chain that verifies.
/// A chain written before has its head recorded now (unsigned); an empty
/// one, a head at entry 0: a store without the row lost it.
const V11_AUDIT_HEAD: &str = "
CREATE TABLE audit_head (
    id BIGINT PRIMARY KEY,
    seq BIGINT NOT NULL,
    hash TEXT NOT NULL,
    tag TEXT
);
INSERT INTO audit_head (id, seq, hash, tag)
    SELECT 1, seq, hash, NULL FROM audit ORDER BY seq DESC LIMIT 1;
INSERT INTO audit_head (id, seq, hash, tag)
    SELECT 1, 0, '0000000000000000000000000000000000000000000000000000000000000000', NULL
    WHERE NOT EXISTS (SELECT 1 FROM audit_head);
";

/// What a retry of a call needs to be told the truth: who made the call
/// and in which request (a sealed `requestState` names its request), and
/// whether a retry was told already that it may have run (see the
/// ledger's `retries` module). Found by request, and by the arguments'
/// digest.
const V10_RETRIES: &str = "
ALTER TABLE calls ADD COLUMN principal TEXT;
ALTER TABLE calls ADD COLUMN request TEXT;
ALTER TABLE calls ADD COLUMN told_at BIGINT;
CREATE INDEX calls_request ON calls (request);
CREATE INDEX calls_arguments ON calls (arguments_digest);
";

/// The processes that send calls, alive while they beat (see the ledger's
/// `owners` module).
///
/// Recovery, run with every beat, looks for `sent` calls of any owner: by
/// state, so it reads the calls in flight, not the whole ledger.
const V9_OWNERS: &str = "
CREATE TABLE owners (
    owner TEXT PRIMARY KEY,
    beat_at BIGINT NOT NULL
);
CREATE INDEX calls_state ON calls (state);
";

/// What a store knows of the deployment over it: the fingerprint of the
/// key every process over it must share (see [`Store::bind_key`]).
const V8_DEPLOYMENT: &str = "
CREATE TABLE deployment (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
";

/// Every ask about one call (the same principal, tool and arguments) is
/// found by one indexed key, so earlier answers to the same call are found
/// in one query: a person's no stands for the same call, an ask waiting
/// for it is not asked twice.
const V7_CALL_KEYS: &str = "
ALTER TABLE asks ADD COLUMN call_key TEXT;
CREATE INDEX asks_call_key ON asks (call_key, created_at);
";

/// The asks parked before v7 by askgate-mcp (`mcp:` keys, later ones of the
/// same call with `#N` appended) get their call's key.
const V7_SQLITE_BACKFILL: &str = "
UPDATE asks SET call_key = CASE WHEN instr(resume_key, '#') > 0
    THEN substr(resume_key, 1, instr(resume_key, '#') - 1) ELSE resume_key END
    WHERE resume_key LIKE 'mcp:%';
";

/// As [`V7_SQLITE_BACKFILL`], for PostgreSQL.
const V7_POSTGRES_BACKFILL: &str = "
UPDATE asks SET call_key = split_part(resume_key, '#', 1) WHERE resume_key LIKE 'mcp:%';
";

/// PostgreSQL: every new ask notifies every process listening, as it
/// commits — whoever parked it (a replica, `askgate ask`, a script). The
/// payload is the id only.
const V6_POSTGRES_NOTIFY_PARKED: &str = concat!(
    announce!("askgate_announce_parked", "askgate_parked"),
    "CREATE TRIGGER asks_parked AFTER INSERT ON asks FOR EACH ROW
    EXECUTE FUNCTION askgate_announce_parked();
"
);

/// Audit entries of decisions that may be reached more than once are
/// recorded once.
const V5_DECISION_KEYS: &str = "
ALTER TABLE audit ADD COLUMN decision_key TEXT;
CREATE UNIQUE INDEX audit_decision_key ON audit (decision_key);
";

/// Durable tasks (the MCP tasks extension).
const V4_TASKS: &str = "
CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    principal TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    capabilities TEXT NOT NULL,
    status TEXT NOT NULL,
    status_message TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    ttl_ms BIGINT,
    poll_interval_ms BIGINT,
    lease_until BIGINT,
    pending TEXT NOT NULL,
    answers TEXT NOT NULL,
    result TEXT,
    error TEXT,
    version BIGINT NOT NULL
);
CREATE INDEX tasks_status ON tasks (status, lease_until);
";

/// PostgreSQL: every settlement notifies every process listening, as it
/// commits — whoever wrote it (a replica, the CLI, a script).
const V3_POSTGRES_NOTIFY: &str = concat!(
    announce!("askgate_announce_settled", "askgate_settled"),
    "CREATE TRIGGER asks_settled AFTER UPDATE OF status ON asks FOR EACH ROW
    WHEN (OLD.status = 'pending' AND NEW.status <> 'pending')
    EXECUTE FUNCTION askgate_announce_settled();
"
);

/// The tool-call ledger.
const V2_CALLS: &str = "
CREATE TABLE calls (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments_digest TEXT,
    state TEXT NOT NULL,
    marker TEXT,
    prepared_at BIGINT NOT NULL,
    sent_at BIGINT,
    finished_at BIGINT,
    result TEXT
);
CREATE INDEX calls_owner_state ON calls (owner, state);
";

const V1_COMMON: &str = "
CREATE TABLE asks (
    id TEXT PRIMARY KEY,
    resume_key TEXT NOT NULL UNIQUE,
    principal TEXT NOT NULL,
    request TEXT NOT NULL,
    server TEXT,
    tool TEXT,
    risk TEXT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT,
    status TEXT NOT NULL,
    reply TEXT,
    outcome TEXT,
    answered_by TEXT,
    answered_via TEXT,
    settled_at BIGINT
);
CREATE INDEX asks_pending ON asks (status, created_at, id);
CREATE TABLE audit (
    seq BIGINT PRIMARY KEY,
    entry TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE TABLE tokens (
    nonce TEXT PRIMARY KEY,
    expires_at BIGINT NOT NULL,
    consumed_at BIGINT NOT NULL
);
";

const V1_SQLITE: &str = "
CREATE TABLE ask_attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ask_id TEXT NOT NULL,
    at BIGINT NOT NULL,
    refusal TEXT NOT NULL,
    answered_by TEXT,
    answered_via TEXT
);
";

const V1_POSTGRES: &str = "
CREATE TABLE ask_attempts (
    id BIGSERIAL PRIMARY KEY,
    ask_id TEXT NOT NULL,
    at BIGINT NOT NULL,
    refusal TEXT NOT NULL,
    answered_by TEXT,
    answered_via TEXT
);
";
