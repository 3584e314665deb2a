//! From capabilities (a program's, narrowed by a run's) to the concrete
//! [`Policy`] the trampoline applies: absolute paths, the protected
//! directories inside writable roots, the process's temp dir, and the
//! environment allowlist.

use protocol::{Capabilities, ReadAccess};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Names that stay read-only inside any writable root.
pub const PROTECTED_NAMES: &[&str] = &[".git", ".hermitcrab"];

/// Variables every contained program gets (when the host has them), beside
/// the `HC_*` ones and those its capabilities list.
pub const BASE_ENV: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ", "USER"];

/// Directories a program with restricted reads may still read, or it could
/// not run at all (its interpreter, libraries, locale, devices).
pub const SYSTEM_READ: &[&str] = &[
    "/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/proc", "/sys", "/dev",
];

/// What the trampoline applies: made by [`policy`] from a program's
/// capabilities, every path resolved against the project.
///
/// ```
/// use contain::policy::policy;
/// use protocol::{Capabilities, FilesystemAccess, ReadAccess};
///
/// let project = tempfile::tempdir().unwrap();
/// let root = project.path().canonicalize().unwrap();
/// std::fs::create_dir_all(root.join(".git")).unwrap();
/// let caps = Capabilities {
///     filesystem: FilesystemAccess { read: ReadAccess::All, write: vec![".".into(), "gone".into()] },
///     network: false,
///     ..Capabilities::default()
/// };
/// let run = policy(&caps, &root, "/tmp/p_1".into(), "/usr/bin/true".into(), vec![], None);
/// // the project is writable (a path that is not there is left out) …
/// assert_eq!(run.write, [root.clone()]);
/// // … but never its `.git`
/// assert_eq!(run.protect, [root.join(".git")]);
/// assert!(!run.network && run.read.is_none());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Readable: `None` for everything, else these paths (and [`SYSTEM_READ`]).
    pub read: Option<Vec<PathBuf>>,
    /// Writable roots (existing, absolute).
    pub write: Vec<PathBuf>,
    /// Directories inside writable roots made read-only.
    pub protect: Vec<PathBuf>,
    /// Whether non-Unix sockets are allowed.
    pub network: bool,
    /// Without `network`: the process holding the shared empty network
    /// namespace to join (`None`: make one for this run).
    #[serde(default)]
    pub shared_net: Option<u32>,
    /// The process's own writable temp dir (`TMPDIR`).
    pub tmp: PathBuf,
    /// The program to run and its arguments.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its whole environment (the trampoline's own is not it).
    #[serde(default)]
    pub env: Vec<(String, String)>,
    /// Its working directory: the project root.
    pub cwd: PathBuf,
    /// How many processes and how much memory it may take.
    #[serde(default)]
    pub bounds: crate::bounds::Bounds,
}

/// Narrows `program`'s capabilities by `run`'s; widening is an error that
/// says what was asked for.
pub fn narrow(
    program: &Capabilities,
    run: Option<&Capabilities>,
    root: &Path,
) -> Result<Capabilities, String> {
    let Some(run) = run else {
        return Ok(program.clone());
    };
    if run.network && !program.network {
        return Err("the run asks for network access, which the program does not declare".into());
    }
    let read = match (&program.filesystem.read, &run.filesystem.read) {
        (ReadAccess::All, asked) => asked.clone(),
        (ReadAccess::Paths(_), ReadAccess::All) => {
            return Err(
                "the run asks to read everything; the program reads only the paths it declares"
                    .into(),
            );
        }
        (ReadAccess::Paths(allowed), ReadAccess::Paths(asked)) => {
            for path in asked {
                if !within_any(root, path, allowed) {
                    return Err(format!(
                        "the run asks to read `{path}`, outside what the program declares"
                    ));
                }
            }
            ReadAccess::Paths(asked.clone())
        }
    };
    for path in &run.filesystem.write {
        if !within_any(root, path, &program.filesystem.write) {
            return Err(format!(
                "the run asks to write `{path}`, outside what the program declares"
            ));
        }
    }
    for name in &run.env {
        if !program.env.contains(name) {
            return Err(format!(
                "the run asks for environment variable `{name}`, which the program does not declare"
            ));
        }
    }
    if let Some(name) = run.programs.iter().find(|p| !program.programs.contains(p)) {
        return Err(format!(
            "the run asks to manage programs `{name}`, which the program does not declare"
        ));
    }
    Ok(Capabilities {
        filesystem: protocol::FilesystemAccess {
            read,
            write: run.filesystem.write.clone(),
        },
        network: run.network,
        env: run.env.clone(),
        programs: run.programs.clone(),
    })
}

/// `path` relative to `root` (or absolute, or under `~`), made absolute
/// and, when it exists, free of symlinks and `..`.
pub fn resolve(root: &Path, path: &str) -> PathBuf {
    let joined = root.join(protocol::paths::expand_home(path));
    joined
        .canonicalize()
        .unwrap_or_else(|_| protocol::paths::normalize(&joined))
}

fn within_any(root: &Path, path: &str, roots: &[String]) -> bool {
    let path = resolve(root, path);
    roots.iter().any(|r| path.starts_with(resolve(root, r)))
}

/// The policy for one run.
pub fn policy(
    caps: &Capabilities,
    root: &Path,
    tmp: PathBuf,
    program: String,
    args: Vec<String>,
    shared_net: Option<u32>,
) -> Policy {
    let write: Vec<PathBuf> = caps
        .filesystem
        .write
        .iter()
        .map(|p| resolve(root, p))
        .filter(|p| p.exists())
        .collect();
    let mut protect = Vec::new();
    for dir in &write {
        for name in PROTECTED_NAMES {
            let inside = dir.join(name);
            if inside.exists() {
                protect.push(inside);
            }
        }
        // A writable root inside a protected directory is protected whole
        // — one of the project's: what is above the project's root is not
        // the project's (a background run's root is a worktree under the
        // project's `.hermitcrab/`).
        let above = resolve(root, ".");
        let ours = |a: &Path| !above.starts_with(a) || !dir.starts_with(&above);
        for ancestor in dir.ancestors().filter(|a| ours(a)) {
            if ancestor
                .file_name()
                .is_some_and(|n| PROTECTED_NAMES.iter().any(|p| n == *p))
            {
                protect.push(ancestor.to_path_buf());
            }
        }
    }
    let read = match &caps.filesystem.read {
        ReadAccess::All => None,
        ReadAccess::Paths(paths) => {
            let mut out: Vec<PathBuf> = paths.iter().map(|p| resolve(root, p)).collect();
            // The program must be able to read itself: its executable and
            // any argument naming an existing file (a script).
            for candidate in std::iter::once(&program).chain(args.iter()) {
                let path = Path::new(candidate);
                if path.is_absolute() && path.exists() {
                    out.push(path.to_path_buf());
                }
            }
            Some(out)
        }
    };
    Policy {
        read,
        write,
        protect,
        network: caps.network,
        shared_net: shared_net.filter(|_| !caps.network),
        tmp,
        program,
        args,
        env: Vec::new(),
        cwd: root.to_path_buf(),
        bounds: crate::bounds::Bounds::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::FilesystemAccess;

    fn caps(read: ReadAccess, write: &[&str], network: bool) -> Capabilities {
        Capabilities {
            filesystem: FilesystemAccess {
                read,
                write: write.iter().map(|s| (*s).to_owned()).collect(),
            },
            network,
            env: vec!["A".into()],
            programs: Vec::new(),
        }
    }

    #[test]
    fn a_run_narrows_and_never_widens() {
        let root = Path::new("/proj");
        let program = caps(ReadAccess::All, &["src"], false);
        let ok = narrow(
            &program,
            Some(&caps(
                ReadAccess::Paths(vec!["src".into()]),
                &["src/a"],
                false,
            )),
            root,
        )
        .unwrap();
        assert_eq!(ok.filesystem.write, vec!["src/a"]);
        assert!(
            narrow(
                &program,
                Some(&caps(ReadAccess::All, &["docs"], false)),
                root
            )
            .is_err()
        );
        assert!(
            narrow(
                &program,
                Some(&caps(ReadAccess::All, &["src/../../etc"], false)),
                root
            )
            .is_err()
        );
        assert!(narrow(&program, Some(&caps(ReadAccess::All, &[], true)), root).is_err());
        let reads_some = caps(ReadAccess::Paths(vec!["src".into()]), &[], false);
        assert!(narrow(&reads_some, Some(&caps(ReadAccess::All, &[], false)), root).is_err());
        let mut more_env = caps(ReadAccess::All, &[], false);
        more_env.env = vec!["SECRET".into()];
        assert!(
            narrow(&program, Some(&more_env), root)
                .unwrap_err()
                .contains("SECRET")
        );
    }
}
