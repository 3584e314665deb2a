//! Many hosts, one substrate (`design/scale.md`): hosts are network
//! namespaces the test makes (`testkit::Net`), each with its own address
//! and its own checkout of one git repository, all sharing one throwaway
//! PostgreSQL server and one fake model on the bridge's address. `hc` runs
//! in each namespace as a person on that machine would run it.

mod team;

use crate::common::{HC, Ran, SCRUB};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use testkit::{FakeModel, Net, PgCluster, Script};

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
}

fn git(dir: &Path, args: &[&str]) -> String {
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
            url,
            names,
        };
        for i in 0..n {
            git(&top, &["clone", "-q", "origin.git", &team.names[i]]);
            let conf = team.root(i).join(".person/hermitcrab");
            std::fs::create_dir_all(&conf).unwrap();
            std::fs::write(conf.join("config.toml"), config).unwrap();
            let out = team.out(i, &["init"]).await;
            assert_eq!(out.code, 0, "{out:?}");
        }
        team
    }

    /// Host `i`'s checkout.
    pub fn root(&self, i: usize) -> PathBuf {
        self.dir.path().canonicalize().unwrap().join(&self.names[i])
    }

    /// `hc ARGS…` on host `i`, in its checkout, sharing the store as
    /// project `team`.
    pub fn hc(&self, i: usize, args: &[&str]) -> tokio::process::Command {
        let mut command = self.net.host(i).command(HC);
        command.args(args).current_dir(self.root(i));
        for var in SCRUB {
            command.env_remove(var);
        }
        command
            .env("ANTHROPIC_BASE_URL", self.fake.base_url())
            .env("HC_STORE", &self.url)
            .env("HC_PROJECT", "team")
            .env("HC_HOST", &self.names[i])
            .env("XDG_CONFIG_HOME", self.root(i).join(".person"))
            .env("XDG_DATA_HOME", self.root(i).join(".person-data"))
            .stdin(Stdio::null());
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

    /// Where host `i`'s worker writes what it says.
    pub fn log(&self, i: usize) -> PathBuf {
        self.dir
            .path()
            .join(format!("worker-{}.log", self.names[i]))
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
