//! Connections to a PostgreSQL server: a pool (`deadpool-postgres`) whose
//! connections a small runtime of the store's own drives, and statements
//! waited for on the caller's thread without a runtime there
//! (`futures-executor`): the substrate's API stays synchronous, no tokio
//! worker of a caller's runs the connections, and a caller on any thread
//! — a plain one, a blocking one, a worker that gave its work away
//! (`block_in_place`) — can wait.

use crate::error::{Error, Result};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use std::future::Future;

/// Waits for `future` on this thread (no runtime needed here: the
/// connections it talks to run on the store's).
pub(crate) fn wait<F: Future>(future: F) -> F::Output {
    futures_executor::block_on(future)
}

/// Where a substrate on PostgreSQL is: the server (a libpq-style URL, its
/// credentials by libpq's conventions) and the schema that holds it.
#[derive(Clone)]
pub struct PgLocation {
    /// The URL without `schema=`.
    pub url: String,
    /// The schema (`?schema=NAME` in the URL given).
    pub schema: String,
    /// What the URL asks of TLS (`sslmode=`, `sslrootcert=`, taken out:
    /// `tokio-postgres` reads three of libpq's six modes).
    pub(crate) tls: super::tls::TlsAsk,
}

impl std::fmt::Debug for PgLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (schema {})", shown_url(&self.url), self.schema)
    }
}

impl PgLocation {
    /// `url` with its `schema=NAME` taken out (else `schema`).
    ///
    /// # Errors
    /// A schema name that is not lowercase letters, digits and `_`.
    pub fn parse(url: &str, schema: &str) -> Result<PgLocation> {
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut kept = Vec::new();
        let mut named = None;
        let (mut sslmode, mut sslrootcert) = (None, None);
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            if let Some(name) = pair.strip_prefix("schema=") {
                named = Some(name.to_owned());
            } else if let Some(mode) = pair.strip_prefix("sslmode=") {
                sslmode = Some(mode.to_owned());
            } else if let Some(file) = pair.strip_prefix("sslrootcert=") {
                sslrootcert = Some(percent_decoded(file));
            } else {
                kept.push(pair);
            }
        }
        let tls = super::tls::TlsAsk::new(sslmode.as_deref(), sslrootcert.as_deref())?;
        let schema = named.unwrap_or_else(|| schema.to_owned());
        let good = !schema.is_empty()
            && schema.len() <= 63
            && schema
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            && !schema.starts_with(|c: char| c.is_ascii_digit())
            && !schema.starts_with("pg_");
        if !good {
            return Err(Error::InvalidRequest(format!(
                "`{schema}` cannot name a schema: use lowercase letters, digits and `_` (a \
                 digit not first, no `pg_` first), at most 63"
            )));
        }
        let url = match kept.is_empty() {
            true => base.to_owned(),
            false => format!("{base}?{}", kept.join("&")),
        };
        Ok(PgLocation { url, schema, tls })
    }
}

/// `text` with its `%XX` escapes decoded (a path in a URL).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A store's URL as it may be shown to a person (see [`shown_url`]), its
/// `?schema=NAME` kept.
pub fn shown_store(url: &str) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut kept = Vec::new();
    let mut schema = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.strip_prefix("schema=") {
            Some(name) => schema = Some(name),
            None => kept.push(pair),
        }
    }
    let shown = shown_url(&match kept.is_empty() {
        true => base.to_owned(),
        false => format!("{base}?{}", kept.join("&")),
    });
    match schema {
        Some(name) => {
            let name: String = name
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                .take(63)
                .collect();
            format!("{shown}?schema={name}")
        }
        None => shown,
    }
}

/// `url` as it may be shown: built from what it names — user, hosts,
/// ports, database — so no password (in the authority, a query
/// parameter or a `key=value` string) can be in it.
pub(crate) fn shown_url(url: &str) -> String {
    let Ok(config) = url.parse::<tokio_postgres::Config>() else {
        return "a PostgreSQL server (its URL does not read)".to_owned();
    };
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .zip(config.get_ports().iter().chain(std::iter::repeat(&5432)))
        .map(|(host, port)| match host {
            tokio_postgres::config::Host::Tcp(name) => format!("{name}:{port}"),
            tokio_postgres::config::Host::Unix(dir) => format!("{}:{port}", dir.display()),
        })
        .collect();
    let shown = format!(
        "postgres://{}@{}/{}",
        config.get_user().unwrap_or_default(),
        hosts.join(","),
        config.get_dbname().unwrap_or_default()
    );
    // (what the URL decoded may hold a terminal's control characters)
    shown.chars().filter(|c| !c.is_control()).collect()
}

/// The password libpq would send for `config` when its URL has none:
/// `PGPASSWORD`, else the first matching line of `PGPASSFILE` or
/// `~/.pgpass` (`host:port:database:user:password`, `*` matching
/// anything; a file others may read is ignored, as libpq does).
fn password_for(config: &tokio_postgres::Config) -> Option<String> {
    if let Some(password) = std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty()) {
        return Some(password);
    }
    let file = std::env::var_os("PGPASSFILE")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".pgpass")))?;
    use std::os::unix::fs::PermissionsExt as _;
    if std::fs::metadata(&file).ok()?.permissions().mode() & 0o077 != 0 {
        return None;
    }
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
        _ => "localhost".to_owned(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let user = config.get_user().unwrap_or_default().to_owned();
    let database = config
        .get_dbname()
        .map_or_else(|| user.clone(), str::to_owned);
    let wanted = [host, port, database, user];
    std::fs::read_to_string(file)
        .ok()?
        .lines()
        .find_map(|line| {
            let fields = pgpass_fields(line);
            let matches = fields.len() == 5
                && fields[..4]
                    .iter()
                    .zip(&wanted)
                    .all(|(field, want)| field == "*" || field == want);
            matches.then(|| fields[4].clone())
        })
}

/// A `.pgpass` line's fields (`\:` and `\\` escaped).
fn pgpass_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let (Some(next), Some(field)) = (chars.next(), fields.last_mut()) {
                    field.push(next);
                }
            }
            ':' => fields.push(String::new()),
            c => {
                if let Some(field) = fields.last_mut() {
                    field.push(c);
                }
            }
        }
    }
    fields
}

/// A pool of connections to one schema, and the runtime driving them.
pub(crate) struct Connections {
    runtime: Option<tokio::runtime::Runtime>,
    pool: Pool,
    /// How a connection is made (the listening one is made apart).
    config: tokio_postgres::Config,
    /// How it speaks TLS (the listening one too); none over a Unix socket.
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    /// The server, as errors name it.
    shown: String,
}

impl Connections {
    /// Connections to `at`, at most `size` at once (none made yet).
    pub fn new(at: &PgLocation, size: usize) -> Result<Connections> {
        let mut config: tokio_postgres::Config = at.url.parse().map_err(|e| {
            Error::InvalidRequest(format!(
                "`{}` is not a PostgreSQL URL: {e}",
                shown_url(&at.url)
            ))
        })?;
        // (after any options the URL gives). A host cut off in the middle
        // of a commit must not hold the head's lock for every other host:
        // the server ends a transaction left idle (unless the URL says).
        let given = config.get_options().unwrap_or_default().to_owned();
        let mut options = format!("{given} -c search_path=\"{}\"", at.schema);
        if !given.contains("idle_in_transaction_session_timeout") {
            options.push_str(" -c idle_in_transaction_session_timeout=3s");
        }
        config.options(options.trim_start());
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(std::time::Duration::from_secs(10));
        }
        // and a host whose link went down finds out in seconds, not hours
        config.keepalives(true);
        config.keepalives_idle(std::time::Duration::from_secs(5));
        config.keepalives_interval(std::time::Duration::from_secs(2));
        config.keepalives_retries(3);
        config.tcp_user_timeout(std::time::Duration::from_secs(15));
        if config.get_password().is_none()
            && let Some(password) = password_for(&config)
        {
            config.password(password);
        }
        if config.get_application_name().is_none() {
            config.application_name("hermitcrab");
        }
        // (never over a Unix socket, as libpq)
        let local = config
            .get_hosts()
            .iter()
            .all(|h| matches!(h, tokio_postgres::config::Host::Unix(_)));
        let tls = match local {
            true => None,
            false => Some(at.tls.connector()?),
        };
        config.ssl_mode(match local {
            true => tokio_postgres::config::SslMode::Disable,
            false => at.tls.ssl_mode(),
        });
        let recycling = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = match &tls {
            Some(tls) => Manager::from_config(config.clone(), tls.clone(), recycling),
            None => Manager::from_config(config.clone(), tokio_postgres::NoTls, recycling),
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("substrate-pg")
            .enable_all()
            .build()
            .map_err(|e| Error::Storage(format!("cannot start the PostgreSQL runtime: {e}")))?;
        let pool = Pool::builder(manager)
            .max_size(size.max(1))
            .wait_timeout(Some(std::time::Duration::from_secs(30)))
            .create_timeout(Some(std::time::Duration::from_secs(15)))
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .build()
            .map_err(|e| Error::Storage(format!("cannot make the connection pool: {e}")))?;
        Ok(Connections {
            runtime: Some(runtime),
            pool,
            config,
            tls,
            shown: shown_url(&at.url),
        })
    }

    /// A connection from the pool (made on the store's runtime when none
    /// is idle).
    pub fn get(&self) -> Result<deadpool_postgres::Object> {
        let runtime = self
            .runtime
            .as_ref()
            .ok_or_else(|| Error::Storage("the PostgreSQL store is closed".into()))?;
        // in the store's runtime's context: a connection made now is
        // spawned there (an idle one is taken with no hop at all)
        let _context = runtime.enter();
        let got = wait(self.pool.get());
        got.map_err(|e| {
            let said = pool_error_text(&e);
            let what_to_do = if said.contains("database") && said.contains("does not exist") {
                "make it (createdb NAME, as a role that may) or name another in the store's URL"
            } else if said.contains("password") || said.contains("authentication") {
                "check the user and password (in the URL, PGPASSWORD or ~/.pgpass)"
            } else if said.contains("TLS") || said.contains("certificate") {
                "check sslmode and sslrootcert (the server's certificate must be signed by that \
                 root, and for verify-full name the host)"
            } else {
                "check that the server is up and the store's URL"
            };
            Error::Storage(format!(
                "cannot connect to PostgreSQL at {}: {said}; {what_to_do}",
                self.shown
            ))
        })
    }
}

/// What a pool's failure to give a connection says: the server's own
/// words when it said any, else the error and its causes, on one line.
fn pool_error_text(e: &deadpool_postgres::PoolError) -> String {
    let text = match e {
        deadpool_postgres::PoolError::Backend(err) => match err.as_db_error() {
            Some(db) => db.message().to_owned(),
            None => {
                let mut text = err.to_string();
                let mut source = std::error::Error::source(err);
                while let Some(cause) = source {
                    text.push_str(": ");
                    text.push_str(&cause.to_string());
                    source = cause.source();
                }
                text
            }
        },
        other => other.to_string(),
    };
    text.replace('\n', " ")
}

impl Connections {
    /// Ends `client`'s read-only transaction on the store's runtime, and
    /// gives the connection back to the pool after (no one waits).
    pub fn end_later(&self, client: deadpool_postgres::Object) {
        match &self.runtime {
            Some(runtime) => {
                runtime.spawn(async move {
                    if let Err(e) = client.batch_execute("COMMIT").await {
                        tracing::debug!("a read's end was not said: {e}");
                    }
                });
            }
            None => {
                let _ = wait(client.batch_execute("COMMIT"));
            }
        }
    }

    /// Listens on `channel` on a connection of its own (see
    /// `follow::listen`).
    pub fn listen(
        &self,
        channel: String,
        wake: std::sync::mpsc::Sender<super::follow::Wake>,
    ) -> Result<()> {
        let runtime = self
            .runtime
            .as_ref()
            .ok_or_else(|| Error::Storage("the PostgreSQL store is closed".into()))?;
        runtime.spawn(super::follow::listen(
            self.config.clone(),
            self.tls.clone(),
            channel,
            wake,
        ));
        Ok(())
    }
}

impl Drop for Connections {
    fn drop(&mut self) {
        // (dropping a runtime inside another's task would panic)
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_loses_its_schema_and_never_shows_a_password() {
        let at = PgLocation::parse(
            "postgres://me:secret@db:5432/team?sslmode=require&schema=proj_1",
            "x",
        )
        .unwrap();
        assert_eq!(at.schema, "proj_1");
        // (sslmode is read here: tokio-postgres knows three of its six)
        assert_eq!(at.url, "postgres://me:secret@db:5432/team");
        assert_eq!(at.tls.ssl_mode(), tokio_postgres::config::SslMode::Require);
        let shown = format!("{at:?}");
        assert!(
            !shown.contains("secret") && shown.contains("me@db:5432/team"),
            "{shown}"
        );
        assert!(PgLocation::parse("postgres://db/team", "Bad-Name").is_err());
        assert_eq!(
            PgLocation::parse("postgres://db/team", "p_2")
                .unwrap()
                .schema,
            "p_2"
        );
    }

    #[test]
    fn a_pgpass_line_reads_as_libpq_reads_it() {
        assert_eq!(
            pgpass_fields(r"db\:1:5432:*:me:pa\:ss\\w"),
            ["db:1", "5432", "*", "me", r"pa:ss\w"]
        );
    }

    /// A statement waited for from every kind of thread a caller may be on.
    #[test]
    fn statements_wait_on_any_thread() {
        let pg = testkit::PgCluster::start().unwrap();
        let at = PgLocation::parse(&pg.url("postgres"), "public").unwrap();
        let conns = std::sync::Arc::new(Connections::new(&at, 4).unwrap());
        let ask = |conns: &Connections| -> i32 {
            let client = conns.get().unwrap();
            let row = wait(client.query_one("SELECT 41 + 1", &[])).unwrap();
            row.get(0)
        };
        assert_eq!(ask(&conns), 42, "a plain thread");
        let current = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let c = conns.clone();
        assert_eq!(
            current.block_on(async move { ask(&c) }),
            42,
            "inside a current-thread runtime"
        );
        let multi = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let c = conns.clone();
        let on_worker = multi.block_on(async move {
            tokio::spawn(async move { tokio::task::block_in_place(|| ask(&c)) })
                .await
                .unwrap()
        });
        assert_eq!(on_worker, 42, "on a worker that gave its work away");
        let c = conns.clone();
        let blocking = multi
            .block_on(async move { tokio::task::spawn_blocking(move || ask(&c)).await.unwrap() });
        assert_eq!(blocking, 42, "on a blocking thread");
        drop(multi);
        drop(current);
    }
}
