//! Many hosts, one substrate (`design/scale.md`): hosts are network
//! namespaces the test makes (`testkit::Net`), each with its own address
//! and its own checkout of one git repository, all sharing one throwaway
//! PostgreSQL server and one fake model on the bridge's address. `hc` runs
//! in each namespace as a person on that machine would run it.

mod faults;
mod handoff;
mod team;

use crate::common::{HC, Ran, SCRUB};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use testkit::{FakeModel, Net, PgCluster, Script};

/// The shared store, opened from this machine as the test's superuser.
pub fn team_store(team: &Team) -> std::sync::Arc<substrate::Substrate> {
    team::store(team)
}

/// Hosts, the server they share, the fake model, a repository's checkouts.
pub struct Team {
    pub net: Net,
    pub cluster: PgCluster,
    pub fake: FakeModel,
    pub dir: tempfile::TempDir,
    /// The store's URL as every host reaches it.
    pub url: String,
    /// Each host's name.
    pub names: Vec<String>,
    /// The store's URL as each host's person logs in (the test's
    /// superuser's, unless [`Team::people`] gave each a role).
    pub logins: Vec<String>,
}

/// `git ARGS…` in `dir` (a committer named), its output.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

impl Team {
    /// `n` hosts (`host-a`, `host-b`, …), each with a checkout of one
    /// repository (`notes.txt` committed, its origin a bare repository
    /// beside them) and `hc init` there; `config` is each person's own
    /// configuration file.
    pub async fn new(n: usize, script: serde_json::Value, config: &str) -> Team {
        let net = Net::make(n).expect("hosts in network namespaces (needs root and iproute2)");
        let cluster = PgCluster::start_on(net.gateway(), &net.subnet()).unwrap();
        let fake = FakeModel::start_at(
            net.gateway(),
            0,
            Script::from_json(&script.to_string()).unwrap(),
        )
        .await
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap();
        let seed = top.join("seed");
        std::fs::create_dir_all(&seed).unwrap();
        git(&seed, &["init", "-q", "-b", "main"]);
        std::fs::write(seed.join("notes.txt"), "original\n").unwrap();
        git(&seed, &["add", "notes.txt"]);
        git(&seed, &["commit", "-qm", "notes"]);
        git(&top, &["clone", "-q", "--bare", "seed", "origin.git"]);
        let url = cluster.tcp_url_at(net.gateway(), "postgres");
        let names: Vec<String> = (0..n)
            .map(|i| format!("host-{}", (b'a' + i as u8) as char))
            .collect();
        let team = Team {
            net,
            cluster,
            fake,
            dir,
            logins: vec![url.clone(); n],
            url,
            names,
        };
        for i in 0..n {
            git(&top, &["clone", "-q", "origin.git", &team.names[i]]);
            let conf = team.person(i).join("config/hermitcrab");
            std::fs::create_dir_all(&conf).unwrap();
            std::fs::write(conf.join("config.toml"), config).unwrap();
            let out = team.out(i, &["init"]).await;
            assert_eq!(out.code, 0, "{out:?}");
        }
        team
    }

    /// Each host's person a role of their own on the server, named as
    /// `people` says (host `i`'s is `people[i]`), granted the project's
    /// schema as the team guide says; from now on each logs in as theirs.
    pub fn people(&mut self, people: &[&str]) {
        for (i, person) in people.iter().enumerate() {
            let password = format!("pw-{person}");
            self.cluster
                .psql(
                    "postgres",
                    &format!(
                        "CREATE ROLE {person} LOGIN PASSWORD '{password}'; \
                         GRANT USAGE ON SCHEMA hc_team TO {person}; \
                         GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA hc_team TO {person}; \
                         GRANT USAGE ON ALL SEQUENCES IN SCHEMA hc_team TO {person};"
                    ),
                )
                .unwrap();
            let login = format!("{}:{}@", testkit::PG_USER, testkit::PG_PASSWORD);
            self.logins[i] = self
                .url
                .replacen(&login, &format!("{person}:{password}@"), 1);
        }
    }

    /// Host `i`'s person's own directories (beside the checkout, not in
    /// it).
    pub fn person(&self, i: usize) -> PathBuf {
        let top = self.dir.path().canonicalize().unwrap();
        top.join(format!("{}-person", self.names[i]))
    }

    /// Host `i`'s checkout.
    pub fn root(&self, i: usize) -> PathBuf {
        self.dir.path().canonicalize().unwrap().join(&self.names[i])
    }

    /// What `hc` is given on host `i` beside the test's own environment:
    /// the fake model, the shared store as project `team`, the host's
    /// name, the person's configuration.
    pub fn env(&self, i: usize) -> Vec<(String, String)> {
        let person = self.person(i);
        [
            ("ANTHROPIC_BASE_URL", self.fake.base_url()),
            ("HC_STORE", self.logins[i].clone()),
            ("HC_PROJECT", "team".to_owned()),
            ("HC_HOST", self.names[i].clone()),
            (
                "XDG_CONFIG_HOME",
                person.join("config").display().to_string(),
            ),
            ("XDG_DATA_HOME", person.join("data").display().to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .chain(crate::common::home_env().map(|(k, v)| (k.to_owned(), v.display().to_string())))
        .collect()
    }

    /// The test's environment without what must not reach `hc`, with
    /// host `i`'s (for a program the test starts that starts `hc`).
    pub fn full_env(&self, i: usize) -> std::collections::HashMap<String, String> {
        std::env::vars()
            .filter(|(k, _)| !SCRUB.contains(&k.as_str()))
            .chain(self.env(i))
            .collect()
    }

    /// `hc ARGS…` on host `i`, in its checkout, sharing the store as
    /// project `team`.
    pub fn hc(&self, i: usize, args: &[&str]) -> tokio::process::Command {
        let mut command = self.net.host(i).command(HC);
        command.args(args).current_dir(self.root(i));
        for var in SCRUB {
            command.env_remove(var);
        }
        command.envs(self.env(i)).stdin(Stdio::null());
        let mut command = tokio::process::Command::from(command);
        command.kill_on_drop(true);
        command
    }

    /// `hc ARGS…` on host `i`, to its end.
    pub async fn out(&self, i: usize, args: &[&str]) -> Ran {
        Ran::of(self.hc(i, args)).await
    }

    /// `hc worker ARGS…` on host `i`, its stderr in `worker-<host>.log`.
    pub fn worker(&self, i: usize, args: &[&str]) -> tokio::process::Child {
        let mut all = vec!["worker"];
        all.extend_from_slice(args);
        let log = self.log(i);
        let file = std::fs::File::create(&log).unwrap();
        self.hc(i, &all)
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .unwrap()
    }

    /// `hc serve --http ARGS…` on host `i`, on its own address: the
    /// server and the addresses it printed (the first person's first).
    pub async fn serve(&self, i: usize, args: &[&str]) -> (tokio::process::Child, Vec<String>) {
        use tokio::io::AsyncBufReadExt as _;
        let addr = self.net.host(i).addr.to_string();
        let mut all = vec!["serve", "--http", "--port", "0", "--host", &addr];
        all.extend_from_slice(args);
        let mut child = self.hc(i, &all).stdout(Stdio::piped()).spawn().unwrap();
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let mut urls = Vec::new();
        while urls.len()
            < 1 + args
                .iter()
                .filter(|a| **a == "--token-file")
                .count()
                .saturating_sub(1)
        {
            let next = tokio::time::timeout(std::time::Duration::from_secs(30), lines.next_line());
            let line = next
                .await
                .expect("hc serve printed no address")
                .unwrap()
                .unwrap();
            if let Some(url) = line.rsplit(' ').next().filter(|u| u.contains("/?token=")) {
                urls.push(url.to_owned());
            }
        }
        (child, urls)
    }

    /// Where host `i`'s worker writes what it says.
    pub fn log(&self, i: usize) -> PathBuf {
        self.dir
            .path()
            .join(format!("worker-{}.log", self.names[i]))
    }

    /// Waits (at most `secs`) until `ready` holds of host `i`'s `hc
    /// agents`; its rows then.
    pub async fn until(
        &self,
        i: usize,
        secs: u64,
        ready: impl Fn(&[serde_json::Value]) -> bool,
    ) -> Vec<serde_json::Value> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        loop {
            let rows = self.agents(i).await;
            if ready(&rows) {
                return rows;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "not there in {secs} s: {rows:#?}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }

    /// `hc agents --json` as host `i` sees it.
    pub async fn agents(&self, i: usize) -> Vec<serde_json::Value> {
        let out = self.out(i, &["agents", "--json"]).await;
        assert_eq!(out.code, 0, "{out:?}");
        serde_json::from_str(&out.stdout).unwrap()
    }

    /// The request bodies the fake model received.
    pub fn sent(&self) -> Vec<Vec<u8>> {
        crate::common::sent_to(&self.fake)
    }

    /// `hc trace SESSION --request N` on host `i`: the request rebuilt,
    /// exactly the body (piped).
    pub async fn rebuilt(&self, i: usize, session: &str, n: usize) -> Vec<u8> {
        let n = n.to_string();
        let out = self.hc(i, &["trace", session, "--request", &n]).output();
        let out = out.await.unwrap();
        assert!(
            out.status.success(),
            "hc trace on {}: {}",
            self.names[i],
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }
}
