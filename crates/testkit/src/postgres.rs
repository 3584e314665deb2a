//! A throwaway PostgreSQL cluster for tests: Debian's `postgresql`
//! binaries (`initdb`, `postgres`), a data directory and a Unix socket in
//! a temporary directory, a TCP port on 127.0.0.1, `trust` authentication
//! for the one superuser `hc`. PostgreSQL will not run as root: when the
//! tests do, the cluster runs as `nobody`. Stopped and removed when
//! dropped. No mock: the server the tests talk to is the real one.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The superuser the tests connect as (trusted on the Unix socket).
pub const PG_USER: &str = "hc";

/// Its password, asked for over TCP (`scram-sha-256`).
pub const PG_PASSWORD: &str = "hc-test-password";

/// A running cluster.
pub struct PgCluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    server: Option<Child>,
    /// Run as `nobody` (the tests run as root).
    as_nobody: bool,
    /// Addresses it listens on besides 127.0.0.1.
    also: Vec<std::net::Ipv4Addr>,
}

/// The process-wide cluster ([`PgCluster::shared`]).
#[derive(Clone, Debug)]
pub struct SharedCluster {
    /// A URL of its `postgres` database over the Unix socket.
    pub url: String,
    /// The same over TCP on 127.0.0.1.
    pub tcp_url: String,
    /// Its socket's directory.
    pub socket_dir: PathBuf,
    /// Its port.
    pub port: u16,
    /// Its certificate ([`PgCluster::certificate`]).
    pub certificate: PathBuf,
}

impl SharedCluster {
    /// Runs `sql` with `psql` on its `postgres` database; its output.
    ///
    /// # Errors
    /// What `psql` said when it failed.
    pub fn psql(&self, sql: &str) -> Result<String, PgError> {
        run_psql(&self.socket_dir, self.port, "postgres", sql)
    }
}

/// Why a cluster could not be had.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PgError(pub String);

impl PgCluster {
    /// Makes a cluster (`initdb`) and starts it, waiting until it takes
    /// connections.
    ///
    /// # Errors
    /// No PostgreSQL binaries (Debian: `apt-get install postgresql`), or a
    /// step that failed, with what it said.
    pub fn start() -> Result<PgCluster, PgError> {
        let bin = binaries()?;
        remove_stale();
        let dir = tempfile::Builder::new()
            .prefix("hc-pg-")
            .tempdir()
            .map_err(|e| PgError(format!("cannot make a temporary directory: {e}")))?;
        let as_nobody = is_root();
        if as_nobody {
            run(Command::new("chown").args(["-R", "nobody"]).arg(dir.path()))?;
        }
        let data = dir.path().join("data");
        let pwfile = dir.path().join("pwfile");
        std::fs::write(&pwfile, PG_PASSWORD)
            .map_err(|e| PgError(format!("cannot write {}: {e}", pwfile.display())))?;
        if as_nobody {
            run(Command::new("chown").arg("nobody").arg(&pwfile))?;
        }
        let mut initdb = Self::command_as(as_nobody, &bin.join("initdb"));
        initdb
            .arg("-D")
            .arg(&data)
            .arg(format!("--pwfile={}", pwfile.display()))
            .args([
                "-U",
                PG_USER,
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
            ])
            .arg("--no-sync");
        run(&mut initdb)?;
        make_certificate(dir.path(), as_nobody)?;
        let mut cluster = PgCluster {
            dir,
            bin,
            port: free_port()?,
            server: None,
            as_nobody,
            also: Vec::new(),
        };
        cluster.resume()?;
        Ok(cluster)
    }

    /// Makes and starts a cluster that also listens on `addr`, taking
    /// password logins from `subnet` (`10.B.C.0/24`: hosts a test made,
    /// [`crate::Net`]).
    ///
    /// # Errors
    /// As [`PgCluster::start`].
    pub fn start_on(addr: std::net::Ipv4Addr, subnet: &str) -> Result<PgCluster, PgError> {
        let mut cluster = PgCluster::start()?;
        let hba = cluster.dir.path().join("data").join("pg_hba.conf");
        let mut rules = std::fs::read_to_string(&hba)
            .map_err(|e| PgError(format!("cannot read {}: {e}", hba.display())))?;
        rules.push_str(&format!("host all all {subnet} scram-sha-256\n"));
        std::fs::write(&hba, rules)
            .map_err(|e| PgError(format!("cannot write {}: {e}", hba.display())))?;
        cluster.stop();
        cluster.also.push(addr);
        cluster.resume()?;
        Ok(cluster)
    }

    /// A URL for `database` over TCP at `addr`, with the password.
    pub fn tcp_url_at(&self, addr: std::net::Ipv4Addr, database: &str) -> String {
        format!(
            "postgres://{PG_USER}:{PG_PASSWORD}@{addr}:{}/{database}",
            self.port
        )
    }

    /// `program` as the cluster's user, killed when the thread that
    /// started it ends (so no server outlives the tests).
    fn command_as(as_nobody: bool, program: &Path) -> Command {
        let mut c = Command::new("setpriv");
        c.arg("--pdeathsig=KILL");
        if as_nobody {
            c.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"]);
        }
        c.arg(program);
        c
    }

    /// One cluster for the whole test process: started once on a thread
    /// that lives as long as the process (its server is killed when the
    /// process ends; what it leaves in the temporary directory is removed
    /// by the next start). Its URLs, for schemas of each test's own.
    ///
    /// # Errors
    /// As [`PgCluster::start`].
    pub fn shared() -> Result<&'static SharedCluster, PgError> {
        static SHARED: std::sync::OnceLock<Result<SharedCluster, String>> =
            std::sync::OnceLock::new();
        SHARED
            .get_or_init(|| {
                let (tx, rx) = std::sync::mpsc::channel();
                let started =
                    std::thread::Builder::new()
                        .name("pg-cluster".into())
                        .spawn(move || match PgCluster::start() {
                            Ok(cluster) => {
                                let shared = SharedCluster {
                                    url: cluster.url("postgres"),
                                    tcp_url: cluster.tcp_url("postgres"),
                                    socket_dir: cluster.socket_dir(),
                                    port: cluster.port(),
                                    certificate: cluster.certificate(),
                                };
                                let _ = tx.send(Ok(shared));
                                // the server lives while this thread does
                                let _keep = cluster;
                                loop {
                                    std::thread::park();
                                }
                            }
                            Err(e) => {
                                let _ = tx.send(Err(e.0));
                            }
                        });
                match started {
                    Ok(_) => rx.recv().unwrap_or_else(|e| Err(e.to_string())),
                    Err(e) => Err(e.to_string()),
                }
            })
            .as_ref()
            .map_err(|e| PgError(e.clone()))
    }

    /// The root certificate that signed the server's (issued for
    /// `localhost` and 127.0.0.1): what a client verifying it is given.
    pub fn certificate(&self) -> PathBuf {
        self.dir.path().join("root.crt")
    }

    /// The directory holding the server's Unix socket.
    pub fn socket_dir(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    /// Its TCP port on 127.0.0.1 (the socket's name carries it too).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A URL for `database` over the Unix socket.
    pub fn url(&self, database: &str) -> String {
        format!(
            "postgres://{PG_USER}@/{database}?host={}&port={}",
            self.socket_dir().display(),
            self.port
        )
    }

    /// A URL for `database` over TCP on 127.0.0.1, with the password.
    pub fn tcp_url(&self, database: &str) -> String {
        format!(
            "postgres://{PG_USER}:{PG_PASSWORD}@127.0.0.1:{}/{database}",
            self.port
        )
    }

    /// Runs `sql` with `psql` on `database` (for setting up what a test
    /// needs: another database, a role). Its output.
    ///
    /// # Errors
    /// What `psql` said when it failed.
    pub fn psql(&self, database: &str, sql: &str) -> Result<String, PgError> {
        run_psql(&self.socket_dir(), self.port, database, sql)
    }

    /// Stops the server at once (`immediate`: as a crash would), keeping
    /// its data.
    pub fn stop(&mut self) {
        if let Some(mut server) = self.server.take() {
            // SIGQUIT: PostgreSQL's immediate shutdown
            let _ = Command::new("kill")
                .args(["-QUIT", &server.id().to_string()])
                .status();
            let _ = server.wait();
        }
    }

    /// Starts the server again on the same data, port and socket.
    ///
    /// # Errors
    /// It did not come up, with what it logged.
    pub fn resume(&mut self) -> Result<(), PgError> {
        let data = self.dir.path().join("data");
        let log = self.dir.path().join("server.log");
        let log_file = std::fs::File::create(&log)
            .map_err(|e| PgError(format!("cannot make {}: {e}", log.display())))?;
        if self.as_nobody {
            let _ = Command::new("chown").arg("nobody").arg(&log).status();
        }
        let mut postgres = Self::command_as(self.as_nobody, &self.bin.join("postgres"));
        postgres
            .arg("-D")
            .arg(&data)
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-k")
            .arg(self.dir.path())
            .arg("-c")
            .arg(format!(
                "listen_addresses={}",
                std::iter::once("127.0.0.1".to_owned())
                    .chain(self.also.iter().map(ToString::to_string))
                    .collect::<Vec<_>>()
                    .join(",")
            ))
            .args(["-c", "fsync=off"])
            .args(["-c", "max_connections=200"])
            // TLS over TCP when asked (`sslmode`), with a certificate of
            // its own for localhost and 127.0.0.1 ([`PgCluster::certificate`])
            .args(["-c", "ssl=on"])
            .arg("-c")
            .arg(format!(
                "ssl_cert_file={}",
                self.dir.path().join("server.crt").display()
            ))
            .arg("-c")
            .arg(format!(
                "ssl_key_file={}",
                self.dir.path().join("server.key").display()
            ))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file);
        let server = postgres
            .spawn()
            .map_err(|e| PgError(format!("cannot start postgres: {e}")))?;
        self.server = Some(server);
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if self.psql("postgres", "SELECT 1").is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(PgError(format!(
            "postgres did not take connections within 30 s: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        )))
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Where Debian's PostgreSQL binaries are: the newest
/// `/usr/lib/postgresql/N/bin`, else the directory of `initdb` on `PATH`.
fn binaries() -> Result<PathBuf, PgError> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").exists().then_some((n, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Ok(bin);
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .find(|dir| dir.join("initdb").exists() && dir.join("postgres").exists())
        .ok_or_else(|| {
            PgError(
                "no PostgreSQL binaries (initdb, postgres): install Debian's postgresql \
                 (apt-get install postgresql)"
                    .into(),
            )
        })
}

/// Removes the directories of clusters whose server is gone (a shared
/// cluster's, killed with its process).
fn remove_stale() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with("hc-pg-") {
            continue;
        }
        let pid_file = entry.path().join("data/postmaster.pid");
        let alive = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.lines().next().and_then(|l| l.trim().parse::<u32>().ok()))
            .is_some_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > Duration::from_secs(60));
        if !alive && old {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout == b"0\n")
}

fn free_port() -> Result<u16, PgError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| PgError(format!("no free port: {e}")))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| PgError(format!("no free port: {e}")))
}

fn run(command: &mut Command) -> Result<(), PgError> {
    let out = command
        .output()
        .map_err(|e| PgError(format!("{command:?}: {e}")))?;
    if !out.status.success() {
        return Err(PgError(format!(
            "{command:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(())
}

/// `psql -c sql` on `database` of the cluster at `socket_dir`:`port`, as
/// the tests' user; its output.
fn run_psql(
    socket_dir: &std::path::Path,
    port: u16,
    database: &str,
    sql: &str,
) -> Result<String, PgError> {
    let out = Command::new("psql")
        .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
        .arg("-h")
        .arg(socket_dir)
        .arg("-p")
        .arg(port.to_string())
        .args(["-U", PG_USER, "-d", database, "-c", sql])
        .output()
        .map_err(|e| PgError(format!("psql: {e}")))?;
    if !out.status.success() {
        return Err(PgError(format!(
            "psql -c {sql:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A root certificate (`root.crt`) and a server certificate it signed for
/// `localhost` and 127.0.0.1 (`server.crt`, `server.key`), in `dir`
/// (`openssl`, which Debian's `postgresql` brings).
fn make_certificate(dir: &Path, as_nobody: bool) -> Result<(), PgError> {
    let at = |name: &str| dir.join(name);
    run(Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args(["-subj", "/CN=hermitcrab test root", "-keyout"])
        .arg(at("root.key"))
        .arg("-out")
        .arg(at("root.crt")))?;
    run(Command::new("openssl")
        .args([
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=localhost",
        ])
        .arg("-keyout")
        .arg(at("server.key"))
        .arg("-out")
        .arg(at("server.csr")))?;
    std::fs::write(
        at("server.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
    )
    .map_err(|e| PgError(format!("cannot write server.ext: {e}")))?;
    run(Command::new("openssl")
        .args(["x509", "-req", "-days", "2", "-in"])
        .arg(at("server.csr"))
        .arg("-CA")
        .arg(at("root.crt"))
        .arg("-CAkey")
        .arg(at("root.key"))
        .arg("-CAcreateserial")
        .arg("-extfile")
        .arg(at("server.ext"))
        .arg("-out")
        .arg(at("server.crt")))?;
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(at("server.key"), std::fs::Permissions::from_mode(0o600))
        .map_err(|e| PgError(format!("cannot make server.key private: {e}")))?;
    if as_nobody {
        run(Command::new("chown")
            .arg("nobody")
            .arg(at("server.key"))
            .arg(at("server.crt")))?;
    }
    Ok(())
}
