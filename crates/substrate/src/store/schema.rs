//! The SQLite schema, its migrations, and how every connection is set up.
//!
//! History is temporal: each version of a chunk and each placement carries
//! the commit that began it and the commit that ended it (NULL while
//! current). Removal ends rows; nothing is ever deleted, except from the
//! full-text index, which covers current text only.

use crate::error::{Error, Result};
use rusqlite::Connection;

/// Each entry migrates from version `index` to `index + 1`
/// (`PRAGMA user_version`). Append; never edit a released entry.
const MIGRATIONS: &[&str] = &[
    // 1: chunks, placements, commits, full-text.
    r#"
    CREATE TABLE commits (
        id          INTEGER PRIMARY KEY,
        parent_id   INTEGER,
        branch      TEXT NOT NULL DEFAULT 'main',
        timestamp   TEXT NOT NULL,
        dispatch_id TEXT,
        record      TEXT NOT NULL
    );

    -- One row per version of a chunk. A version carries the chunk's own
    -- placements (JSON), so a read of a member is one row; a change of
    -- placements makes a new version. `key` is the vid of the first version
    -- of this life of the chunk: stable, it orders chunks by creation and
    -- keys the full-text index.
    CREATE TABLE chunks (
        vid        INTEGER PRIMARY KEY,
        id         TEXT NOT NULL,
        key        INTEGER NOT NULL,
        name       TEXT,
        spec       TEXT NOT NULL,
        body       TEXT NOT NULL,
        placements TEXT NOT NULL,
        began      INTEGER NOT NULL,
        ended      INTEGER
    );
    -- By id: the current version sorts first (ended NULL), so a head lookup
    -- is one seek; history follows. Covering for version-id lookups.
    CREATE INDEX chunks_by_id ON chunks(id, ended, began);
    -- By key: how members (placements carry the key) find their version.
    CREATE INDEX chunks_by_key ON chunks(key, ended, began);

    -- Membership: who is on which scope, in order, then and now. `ckey` is
    -- the placed chunk's `key`: members join their versions by integer.
    CREATE TABLE placements (
        rid   INTEGER PRIMARY KEY,
        chunk TEXT NOT NULL,
        ckey  INTEGER NOT NULL,
        scope TEXT NOT NULL,
        kind  INTEGER NOT NULL,
        seq   INTEGER,
        began INTEGER NOT NULL,
        pos   INTEGER NOT NULL,
        ended INTEGER
    );
    CREATE UNIQUE INDEX placements_head ON placements(chunk, scope, kind) WHERE ended IS NULL;
    -- By scope: current members first and in seq order, then history.
    -- Covering for member scans at head and as of any commit.
    CREATE INDEX placements_by_scope ON placements(scope, ended, seq, began, pos, kind, ckey);

    CREATE VIRTUAL TABLE chunk_text USING fts5(text, content='', contentless_delete=1);
    "#,
    // 2: how many chunks each scope holds now, kept by triggers, so a
    // scope's size (topology, facets) is one row, not a count of its rows.
    r#"
    CREATE TABLE scope_counts (
        scope   TEXT PRIMARY KEY,
        members INTEGER NOT NULL
    ) WITHOUT ROWID;
    INSERT INTO scope_counts
        SELECT scope, count(DISTINCT ckey) FROM placements WHERE ended IS NULL GROUP BY scope;

    -- A chunk counts once on a scope, however many placement types put it
    -- there: only its first live placement adds, only its last one ending
    -- takes away.
    CREATE TRIGGER scope_counts_placed AFTER INSERT ON placements
    WHEN NEW.ended IS NULL AND NOT EXISTS (
        SELECT 1 FROM placements INDEXED BY placements_head
        WHERE chunk = NEW.chunk AND scope = NEW.scope AND kind != NEW.kind AND ended IS NULL)
    BEGIN
        INSERT INTO scope_counts (scope, members) VALUES (NEW.scope, 1)
            ON CONFLICT (scope) DO UPDATE SET members = members + 1;
    END;
    CREATE TRIGGER scope_counts_ended AFTER UPDATE OF ended ON placements
    WHEN OLD.ended IS NULL AND NEW.ended IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM placements INDEXED BY placements_head
        WHERE chunk = NEW.chunk AND scope = NEW.scope AND kind != NEW.kind AND ended IS NULL)
    BEGIN
        UPDATE scope_counts SET members = members - 1 WHERE scope = NEW.scope;
    END;
    "#,
    // 3: keys whose text the full-text index has yet to take (`text.rs`):
    // a commit queues them, a thread indexes them off the commit's path.
    r#"
    CREATE TABLE text_queue (key INTEGER PRIMARY KEY);
    "#,
    // 4: the index of the words `match_` reads (`words.rs`), as they are
    // cut (no folding of accents by FTS5: PostgreSQL's index keeps them
    // too); every live chunk's text queued to be indexed again
    r#"
    DROP TABLE chunk_text;
    CREATE VIRTUAL TABLE chunk_text USING fts5(
        text, content='', contentless_delete=1, tokenize="unicode61 remove_diacritics 0");
    INSERT OR IGNORE INTO text_queue SELECT DISTINCT key FROM chunks WHERE ended IS NULL;
    "#,
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: usize = MIGRATIONS.len();

/// Brings the database to [`SCHEMA_VERSION`], one transaction per step.
/// Each step takes the write lock first and reads the version again under
/// it, so processes opening a new store at once apply each step once: the
/// others wait for it, then find it done.
pub(crate) fn migrate(conn: &mut Connection) -> Result<()> {
    let version_of = |conn: &Connection| -> Result<usize> {
        Ok(conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))? as usize)
    };
    let current = version_of(conn)?;
    if current > SCHEMA_VERSION {
        return Err(Error::Storage(format!(
            "this substrate has schema version {current}, newer than this build understands \
             ({SCHEMA_VERSION}); upgrade hermitcrab to open it"
        )));
    }
    for (version, sql) in MIGRATIONS.iter().enumerate().skip(current) {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        if version_of(&tx)? > version {
            continue;
        }
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (version + 1) as i64)?;
        tx.commit()?;
    }
    Ok(())
}

/// Settings for the writer: WAL, the chosen durability, and what readers get.
pub(crate) fn configure(conn: &Connection, synchronous_full: bool) -> Result<()> {
    // First: switching a new file to WAL takes a lock another process
    // opening it at the same moment may hold.
    conn.busy_timeout(super::conn::BUSY_WAIT)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(
        None,
        "synchronous",
        if synchronous_full { "FULL" } else { "NORMAL" },
    )?;
    // Checkpoints run on a thread of their own (`checkpoint.rs`); this is
    // only the backstop should that thread fall far behind.
    conn.pragma_update(None, "wal_autocheckpoint", 20_000)?;
    // Once a checkpoint resets the log, its file shrinks back to this.
    conn.pragma_update(None, "journal_size_limit", 16_i64 << 20)?;
    conn.pragma_update(None, "cache_size", -65_536)?;
    configure_reader(conn)
}

/// Settings every connection gets: a busy timeout, a statement cache, and
/// the `rarray` table function reads use to pass id lists.
pub(crate) fn configure_reader(conn: &Connection) -> Result<()> {
    conn.busy_timeout(super::conn::BUSY_WAIT)?;
    // Pages come straight from the OS page cache instead of a copy per
    // read; a large store costs no more to read than a small one.
    conn.pragma_update(None, "mmap_size", 1_i64 << 30)?;
    conn.set_prepared_statement_cache_capacity(256);
    rusqlite::vtab::array::load_module(conn)?;
    Ok(())
}
