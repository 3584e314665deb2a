//! What configuration grants a program beyond what its chunk declares
//! (`[programs.NAME]` in `.hermitcrab/config.toml` or the user's file). The
//! engine applies a grant at run time, over the declaration; a run may
//! still narrow the result. Bootstrap chunks are upgraded on every open, so
//! configuration never lives in them.

use protocol::{Capabilities, ReadAccess};
use std::path::Path;

/// Capabilities configuration adds to a program's own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Grant {
    /// `"all"`, or more readable paths.
    pub read: Option<ReadAccess>,
    /// More writable roots (each must exist).
    pub write: Vec<String>,
    /// Network access on or off (replaces the declaration).
    pub network: Option<bool>,
    /// More environment variables passed through.
    pub env: Vec<String>,
    /// The program's timeout, over its declaration's (a run's own still
    /// wins): e.g. how long an `agent` run may take (default one hour).
    pub timeout_ms: Option<u64>,
    /// Processes (and threads) a run may have at once (default
    /// [`DEFAULT_PROCESSES`](crate::bounds::DEFAULT_PROCESSES)).
    pub processes: Option<u64>,
    /// Bytes of memory a run may hold (default half the machine's).
    pub memory: Option<u64>,
}

impl Grant {
    /// `declared`, with this grant applied: lists are joined, `read =
    /// "all"` reads everything, `network` replaces.
    pub fn apply(&self, declared: &Capabilities) -> Capabilities {
        let mut out = declared.clone();
        match (&self.read, &mut out.filesystem.read) {
            (None, _) | (_, ReadAccess::All) => {}
            (Some(ReadAccess::All), read) => *read = ReadAccess::All,
            (Some(ReadAccess::Paths(more)), ReadAccess::Paths(paths)) => join(paths, more),
        }
        join(&mut out.filesystem.write, &self.write);
        if let Some(network) = self.network {
            out.network = network;
        }
        join(&mut out.env, &self.env);
        out
    }

    /// Checks that every write root exists (a root that does not would
    /// otherwise be silently dropped by containment): the error names it.
    pub fn check(&self, program: &str, root: &Path) -> Result<(), String> {
        for path in &self.write {
            let resolved = crate::policy::resolve(root, path);
            if !resolved.is_dir() {
                return Err(format!(
                    "[programs.{program}] write: `{path}` ({}) is not an existing directory; \
                     create it or remove it from the list",
                    resolved.display()
                ));
            }
        }
        Ok(())
    }
}

fn join(into: &mut Vec<String>, more: &[String]) {
    for item in more {
        if !into.contains(item) {
            into.push(item.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::FilesystemAccess;

    #[test]
    fn a_grant_joins_lists_and_replaces_network() {
        let declared = Capabilities {
            filesystem: FilesystemAccess {
                read: ReadAccess::Paths(vec!["src".into()]),
                write: vec![".".into()],
            },
            network: false,
            env: vec!["CARGO_HOME".into()],
            programs: Vec::new(),
        };
        let grant = Grant {
            read: Some(ReadAccess::Paths(vec!["docs".into()])),
            write: vec!["/tmp/cache".into(), ".".into()],
            network: Some(true),
            env: vec!["GOPATH".into()],
            timeout_ms: None,
            processes: None,
            memory: None,
        };
        let applied = grant.apply(&declared);
        assert_eq!(
            applied.filesystem.read,
            ReadAccess::Paths(vec!["src".into(), "docs".into()])
        );
        assert_eq!(applied.filesystem.write, vec![".", "/tmp/cache"]);
        assert!(applied.network);
        assert_eq!(applied.env, vec!["CARGO_HOME", "GOPATH"]);
        assert_eq!(Grant::default().apply(&declared), declared);
    }

    #[test]
    fn a_missing_write_root_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let grant = Grant {
            write: vec!["nope".into()],
            ..Grant::default()
        };
        let err = grant.check("shell", dir.path()).unwrap_err();
        assert!(
            err.contains("[programs.shell]") && err.contains("`nope`"),
            "{err}"
        );
        std::fs::create_dir(dir.path().join("nope")).unwrap();
        assert!(grant.check("shell", dir.path()).is_ok());
    }
}
