//! The substrate's tables on PostgreSQL, in a schema of their own, and
//! their migrations: the same shape as SQLite's (`../schema.rs`), ids and
//! scopes in bytewise (`C`) order as SQLite's, every JSON kept as the text
//! written (never `jsonb`: a request is rebuilt byte for byte from it).
//! The version is a row of `meta`; migrations run under an advisory lock,
//! so engines opening one store at once apply each step once.

use super::conn::wait;
use crate::error::{Error, Result};

/// Each entry migrates version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: the tables
    r#"
    CREATE TABLE commits (
        id bigint PRIMARY KEY,
        parent_id bigint,
        branch text NOT NULL DEFAULT 'main',
        timestamp text NOT NULL,
        dispatch_id text,
        record text NOT NULL
    );
    CREATE TABLE chunks (
        vid bigint PRIMARY KEY,
        id text COLLATE "C" NOT NULL,
        key bigint NOT NULL,
        name text,
        spec text NOT NULL,
        body text NOT NULL,
        placements text NOT NULL,
        began bigint NOT NULL,
        ended bigint
    );
    CREATE INDEX chunks_by_id ON chunks (id, began);
    CREATE INDEX chunks_live_by_id ON chunks (id) WHERE ended IS NULL;
    CREATE INDEX chunks_by_key ON chunks (key, began);
    CREATE TABLE placements (
        rid bigserial PRIMARY KEY,
        chunk text COLLATE "C" NOT NULL,
        ckey bigint NOT NULL,
        scope text COLLATE "C" NOT NULL,
        kind bigint NOT NULL,
        seq bigint,
        began bigint NOT NULL,
        pos bigint NOT NULL,
        ended bigint
    );
    CREATE UNIQUE INDEX placements_head ON placements (chunk, scope, kind) WHERE ended IS NULL;
    CREATE INDEX placements_by_scope ON placements (scope, seq, began, pos, kind, ckey);
    CREATE INDEX placements_live_by_scope ON placements (scope, seq, began, pos, kind, ckey)
        WHERE ended IS NULL;
    CREATE TABLE chunk_text (
        key bigint PRIMARY KEY,
        text text NOT NULL
    );
    "#,
    // 2: the words of each chunk's text, indexed (`words.rs`; filled
    // from the text kept, in `migrate`)
    r#"
    ALTER TABLE chunk_text ADD COLUMN words tsvector NOT NULL DEFAULT ''::tsvector;
    CREATE INDEX chunk_text_words ON chunk_text USING gin (words);
    "#,
    // 3: who wrote each commit and each version (decision 19), stamped by
    // the database — the role that inserted the row — whatever a client
    // sends, and never changed after. A version another role wrote may
    // only be ended (a commit ends the versions it replaces); only its
    // author rewrites it (a commit rewriting what it made itself), and no
    // commit's record changes
    r#"
    ALTER TABLE commits ADD COLUMN person text;
    ALTER TABLE chunks ADD COLUMN person text;
    CREATE FUNCTION stamp_person() RETURNS trigger LANGUAGE plpgsql AS $stamp$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            NEW.person := current_user;
            RETURN NEW;
        END IF;
        IF TG_TABLE_NAME = 'commits' THEN
            RAISE EXCEPTION 'commit % is history: no one changes it', OLD.id;
        END IF;
        IF OLD.person IS DISTINCT FROM current_user
            AND (NEW.id, NEW.key, NEW.name, NEW.spec, NEW.body, NEW.placements, NEW.began)
                IS DISTINCT FROM
                (OLD.id, OLD.key, OLD.name, OLD.spec, OLD.body, OLD.placements, OLD.began)
        THEN
            RAISE EXCEPTION 'version % of % is %''s: another may only end it',
                OLD.vid, OLD.id, coalesce(OLD.person, 'from before authors were recorded');
        END IF;
        NEW.person := OLD.person;
        RETURN NEW;
    END
    $stamp$;
    CREATE TRIGGER commits_person BEFORE INSERT OR UPDATE ON commits
        FOR EACH ROW EXECUTE FUNCTION stamp_person();
    CREATE TRIGGER chunks_person BEFORE INSERT OR UPDATE ON chunks
        FOR EACH ROW EXECUTE FUNCTION stamp_person();
    "#,
];

/// The schema version this build writes.
pub(crate) const VERSION: i64 = MIGRATIONS.len() as i64;

/// Cuts the words of every text kept (the step to version 2).
fn fill_words(tx: &deadpool_postgres::Transaction<'_>, schema: &str) -> Result<()> {
    let texts = wait(tx.query(
        &format!("SELECT key, text FROM \"{schema}\".chunk_text"),
        &[],
    ))?;
    let update =
        format!("UPDATE \"{schema}\".chunk_text SET words = $2::text::tsvector WHERE key = $1");
    for row in texts {
        let key: i64 = row.get(0);
        let text: String = row.get(1);
        let words = crate::store::words::tsvector(&crate::store::words::words(&text));
        wait(tx.execute(&update, &[&key, &words]))?;
    }
    Ok(())
}

/// A key for the advisory lock that serializes migrations of `schema`.
fn lock_key(schema: &str) -> i64 {
    // FNV-1a: stable across builds (std's hasher is not)
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in schema.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash as i64
}

/// Makes `schema` (when missing) and brings it to [`VERSION`]; refuses a
/// schema that is newer than this build, or that holds tables of another
/// program. Answers the role it connects as.
pub(crate) fn migrate(client: &mut deadpool_postgres::Client, schema: &str) -> Result<String> {
    let tx = wait(client.transaction()).map_err(Error::from)?;
    wait(tx.execute("SELECT pg_advisory_xact_lock($1)", &[&lock_key(schema)]))?;
    let who = wait(tx.query_one("SELECT current_database()::text, current_user::text", &[]))?;
    let (database, role): (String, String) = (who.get(0), who.get(1));
    let exists =
        wait(tx.query_opt("SELECT 1 FROM pg_namespace WHERE nspname = $1", &[&schema]))?.is_some();
    if !exists {
        wait(tx.batch_execute(&format!("CREATE SCHEMA \"{schema}\""))).map_err(|e| {
            let denied = e.code() == Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE);
            match denied {
                true => Error::Storage(format!(
                    "the role `{role}` may not make the schema `{schema}` in the database \
                     `{database}` (permission denied): GRANT CREATE ON DATABASE {database} TO \
                     {role}, or have the schema made for it (CREATE SCHEMA {schema} \
                     AUTHORIZATION {role})"
                )),
                false => Error::from(e),
            }
        })?;
    }
    // every table in it, whether this role may see it or not
    let tables: Vec<String> = wait(tx.query(
        "SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')",
        &[&schema],
    ))?
    .iter()
    .map(|r| r.get(0))
    .collect();
    let ours = |key: &str| -> Result<Option<String>> {
        let row = wait(tx.query_opt(
            &format!("SELECT value::text FROM \"{schema}\".meta WHERE key::text = $1"),
            &[&key],
        ))
        .ok()
        .flatten();
        Ok(row.and_then(|r| r.try_get::<_, String>(0).ok()))
    };
    let version: i64 = if tables.iter().any(|t| t == "meta")
        && ours("made_by")?.as_deref() == Some("hermitcrab")
    {
        ours("schema_version")?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    } else if tables.is_empty() {
        wait(tx.batch_execute(&format!(
            "CREATE TABLE \"{schema}\".meta (key text PRIMARY KEY, value text NOT NULL); \
             INSERT INTO \"{schema}\".meta VALUES ('schema_version', '0'), \
             ('made_by', 'hermitcrab')"
        )))?;
        0
    } else {
        return Err(Error::Storage(format!(
            "the schema `{schema}` holds tables of another program ({}); name another with \
             ?schema=NAME in the store's URL",
            tables.join(", ")
        )));
    };
    if version > VERSION {
        return Err(Error::Storage(format!(
            "the substrate in schema `{schema}` is version {version}, newer than this hermitcrab \
             (version {VERSION}); upgrade hermitcrab"
        )));
    }
    for (i, step) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        wait(tx.batch_execute(&format!("SET LOCAL search_path = \"{schema}\"; {step}")))?;
        if i == 1 {
            fill_words(&tx, schema)?;
        }
        wait(tx.execute(
            &format!("UPDATE \"{schema}\".meta SET value = $1 WHERE key = 'schema_version'"),
            &[&(i as i64 + 1).to_string()],
        ))?;
    }
    wait(tx.commit())?;
    Ok(role)
}
