//! A project is a directory holding `.hermitcrab/`:
//! found upward from the working directory, like git.

use crate::config::Source;
use anyhow::{Context as _, Result, bail};
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use substrate::Substrate;

/// The project's state directory name.
pub const DIR: &str = ".hermitcrab";

/// A found project.
pub struct Project {
    /// The directory that holds `.hermitcrab/`.
    pub root: PathBuf,
}

const CONFIG_TEMPLATE: &str = "\
# hermitcrab project configuration.
# Settings here override the user file ($XDG_CONFIG_HOME/hermitcrab/config.toml).
#
# What a program may touch beyond what it declares, e.g. let `shell` use the
# network and write a cache outside the project:
#
# [programs.shell]
# network = true
# write = [\"~/.cache/my-tool\"]
# env = [\"GITHUB_TOKEN\"]
";

/// The substrate and configuration are the project's own, not its
/// history's: git (and every tool that reads .gitignore) leaves them out.
const GITIGNORE: &str = "# hermitcrab's own state: not part of the project's history.\n*\n";

impl Project {
    /// The project containing `start` (or `start` itself), searching
    /// upward no further than the git repository `start` is in (decision
    /// 1: a `.hermitcrab/` above the nearest `.git` is another project's —
    /// one made once in the home directory must not swallow every
    /// repository under it); one another user controls is refused (see
    /// [`owned`]).
    pub fn find(start: &Path) -> Result<Project> {
        if let Some(dir) = found_from(start) {
            owned(dir)?;
            return Ok(Project {
                root: dir.to_path_buf(),
            });
        }
        match repository_of(start) {
            Some(repo) => bail!(
                "no project here (no {DIR}/ in {} or above, up to the root of its git repository, \
                 {}); run `hc init` in that root",
                start.display(),
                repo.display()
            ),
            None => bail!(
                "no project here (no {DIR}/ in {} or above); run `hc init`",
                start.display()
            ),
        }
    }

    /// The project containing `start`, or — when there is none — a new
    /// one (as `hc run` and `hc chat` do): at the root of the git
    /// repository `start` is in, saying so, where the agent can work on
    /// the whole repository; else quietly in `start`. The home directory,
    /// `/` and a shared temporary directory are made a project only when
    /// the person says so (`ask`), else refused: everything under them
    /// would be "inside the project".
    pub fn find_or_init(start: &Path, ask: &crate::trust::Ask<'_>) -> Result<Project> {
        if found_from(start).is_some() {
            return Project::find(start);
        }
        let (root, said) = match git_root(start) {
            Some(root) if root != start => (
                root,
                format!(
                    "hc: made a project at {} (the root of the git repository here)",
                    root.display()
                ),
            ),
            _ => (
                start,
                format!(
                    "hc: made a project at {} (its record is kept in {DIR}/ there)",
                    start.display()
                ),
            ),
        };
        if let Some(what) = too_wide(root) {
            confirm_wide(root, &what, ask)?;
        }
        let (project, _) = Project::init(root)?;
        eprintln!("{said}");
        Ok(project)
    }

    /// Creates `.hermitcrab/` in `root` (keeping what is there) and bootstraps
    /// the substrate. Returns the project and whether anything was committed.
    pub fn init(root: &Path) -> Result<(Project, bool)> {
        let dir = root.join(DIR);
        refuse_links(&dir)?;
        // Only its owner reads it: the substrate holds all the tools read.
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        for (name, text) in [("config.toml", CONFIG_TEMPLATE), (".gitignore", GITIGNORE)] {
            let path = dir.join(name);
            if !path.exists() {
                write_new(&path, text)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
        }
        let project = Project {
            root: root.to_path_buf(),
        };
        let (_, changed) = project.open()?;
        Ok((project, changed))
    }

    /// The configuration files (the user's and this project's) and the
    /// project's `.env`, read, nothing applied.
    pub fn read_files(&self) -> Result<(crate::config::Files, crate::config::DotEnv)> {
        let dotenv = crate::config::DotEnv::read(&self.root.join(".env"))?;
        let mut files = crate::config::Files::read(&self.root.join(DIR).join("config.toml"))?;
        files.mcp_json = crate::config::McpJson::read(&self.root)?;
        Ok((files, dotenv))
    }

    /// The configuration that applies: the files, what needs trust kept
    /// only when the project is trusted (settled as `ask` says), and the
    /// `.env` applied under the environment.
    pub fn config(&self, ask: crate::trust::Ask<'_>) -> Result<crate::config::Files> {
        let (mut files, mut dotenv) = self.read_files()?;
        let user = files.user_table();
        let mut mcp_json = files.mcp_json.take();
        let project = crate::trust::ProjectFiles {
            user,
            root: crate::trust::canonical(&self.root),
            config: files.project_mut(),
            dotenv: &mut dotenv,
            mcp_json: &mut mcp_json,
            granting: crate::trust::granting_files(&self.root),
        };
        let trust = project.settle(ask)?;
        files.trust = trust;
        files.mcp_json = mcp_json;
        dotenv.apply();
        Ok(files)
    }

    /// The substrate file.
    pub fn database(&self) -> PathBuf {
        self.root.join(DIR).join("substrate.db")
    }

    /// Opens the substrate where it is kept (see [`Project::store`]) as it
    /// is: nothing bootstrapped, nothing committed (`hc store copy`).
    pub fn open_unseeded(&self) -> Result<Substrate> {
        refuse_links(&self.root.join(DIR))?;
        let path = self.database();
        match self.store()? {
            (Some(url), source) => open_server(&url, &self.root, &path)
                .with_context(|| format!("cannot open the project's substrate ({source})")),
            (None, _) => {
                refuse_project_name()?;
                open_file(&path)
            }
        }
    }

    /// Opens the substrate, bringing its bootstrap chunks (archetypes and
    /// built-in programs) up to date. Returns whether that committed anything.
    ///
    /// What `.hermitcrab/` holds is checked first: hc never follows a link
    /// in it ([`refuse_links`]). Then where the file was made is settled
    /// ([`crate::origin`]): a file this open made is the person's; one
    /// found without this machine's stamp is a stranger's until trusted.
    pub fn open(&self) -> Result<(Arc<Substrate>, bool)> {
        refuse_links(&self.root.join(DIR))?;
        let path = self.database();
        // a server the person named in their own environment is theirs;
        // a file's origin is settled (below)
        let (db, fresh) = match self.store()? {
            (Some(url), source) => {
                let db = open_server(&url, &self.root, &path).with_context(|| {
                    format!("cannot open the project's substrate on PostgreSQL ({source})")
                })?;
                (db, None)
            }
            (None, _) => {
                refuse_project_name()?;
                let fresh = std::fs::symlink_metadata(&path).is_err();
                (open_file(&path)?, Some(fresh))
            }
        };
        let head_before = db.head().context("cannot read the substrate")?;
        let changed = db
            .init(crate::builtins::vocabulary())
            .context("cannot bootstrap the substrate")?
            .is_some();
        let seeded = seed(&db).context("cannot bootstrap the substrate")?;
        if let Some(fresh) = fresh {
            crate::origin::settle(&db, &path, fresh, head_before)?;
        }
        Ok((Arc::new(db), changed || seeded))
    }
}

/// A project named (`--project`, `HC_PROJECT`) names it on a shared
/// store: with the substrate in a file it would be ignored, so it is
/// refused.
fn refuse_project_name() -> Result<()> {
    match project_name() {
        Some(name) => Err(crate::exit::exit(
            2,
            format!(
                "--project {name} names a project on a shared store, and this project's \
                 substrate is the file in .hermitcrab/: give --store postgres://… (or HC_STORE), \
                 or leave --project out"
            ),
        )),
        None => Ok(()),
    }
}

/// The store `--store` names for this process (set once, before any
/// project is opened).
static STORE_FLAG: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Names the store every project this process opens is kept in (the
/// `--store` flag).
pub fn store_flag(url: String) {
    let _ = STORE_FLAG.set(url);
}

/// The project's name on a shared store (`--project`), for this process.
static PROJECT_FLAG: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Names the project on a shared store for this process (`--project`):
/// checkouts on many hosts naming the same project share its substrate.
pub fn project_flag(name: String) {
    let _ = PROJECT_FLAG.set(name);
}

/// The project's name on a shared store: `--project`, else `HC_PROJECT`.
pub fn project_name() -> Option<String> {
    PROJECT_FLAG.get().cloned().or_else(|| {
        std::env::var("HC_PROJECT")
            .ok()
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    })
}

/// The store `--store` named for this process, if it did (a program `hc`
/// starts for the project — a worker — is given it as `HC_STORE`).
pub fn store_given() -> Option<&'static str> {
    STORE_FLAG.get().map(String::as_str)
}

/// A project's checkout naming a store it may not use is said once.
static SAID_UNTRUSTED: std::sync::Once = std::sync::Once::new();

impl Project {
    /// Where the project's substrate is kept: a PostgreSQL server's URL
    /// and who named it — `--store`, `HC_STORE`, the project's own file
    /// (once it is trusted: a store URL sends the record elsewhere), the
    /// person's file (`[projects."PATH"] store`, else `store`) — or none:
    /// the file under `.hermitcrab/`.
    pub fn store(&self) -> Result<(Option<String>, Source)> {
        if let Some(url) = STORE_FLAG.get() {
            return Ok((
                Some(checked(url, "--store")?),
                Source::Flag("--store".into()),
            ));
        }
        if let Some(url) = std::env::var("HC_STORE")
            .ok()
            .filter(|v| !v.trim().is_empty())
        {
            return Ok((
                Some(checked(&url, "HC_STORE")?),
                Source::Env("HC_STORE".into()),
            ));
        }
        let own = self.root.join(DIR).join("config.toml");
        if let Some(url) = store_in(&own, None)? {
            if crate::trust::trusted_now(&self.root)? {
                let url = checked(&url, &format!("store in {}", own.display()))?;
                return Ok((Some(url), Source::Project(own)));
            }
            SAID_UNTRUSTED.call_once(|| {
                eprintln!(
                    "hc: {} names a store ({}), ignored: the project is not trusted. To allow it: \
                     hc trust",
                    own.display(),
                    crate::text::shown(&substrate::shown_store(&url))
                );
            });
        }
        if let Some(user) = crate::config::user_file() {
            let root = crate::trust::canonical(&self.root);
            if let Some(url) = store_in(&user, Some(&root))? {
                let url = checked(&url, &format!("store in {}", user.display()))?;
                return Ok((Some(url), Source::User(user)));
            }
        }
        Ok((None, Source::Default))
    }
}

/// The `store` a configuration file names: for `project` (the person's
/// file: `[projects."PATH"] store` first, then `store`), else its own.
fn store_in(file: &Path, project: Option<&Path>) -> Result<Option<String>> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
    };
    let table: toml::Table = text
        .parse()
        .with_context(|| format!("{} is not TOML; fix it", file.display()))?;
    let of_project = project.and_then(|root| {
        table
            .get("projects")?
            .get(root.to_string_lossy().as_ref())?
            .get("store")
    });
    let Some(value) = of_project.or_else(|| table.get("store")) else {
        return Ok(None);
    };
    match value.as_str() {
        Some(url) if !url.trim().is_empty() => Ok(Some(url.to_owned())),
        _ => bail!(
            "{}: `store` must be a PostgreSQL URL, e.g. store = \"postgres://me@db.internal/team\"",
            file.display()
        ),
    }
}

/// `url` when it is a PostgreSQL URL; else an error saying where it came
/// from.
fn checked(url: &str, from: &str) -> Result<String> {
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        bail!(
            "{from} is not a PostgreSQL URL (postgres://USER@HOST/DATABASE); leave it out to keep \
             the substrate in .hermitcrab/"
        );
    }
    Ok(url.to_owned())
}

/// The substrate on the server `url` names, in the schema of the project
/// at `root` (or `?schema=NAME`); this machine's state for it beside
/// `beside`.
pub fn open_server(url: &str, root: &Path, beside: &Path) -> Result<Substrate> {
    let db = Substrate::open_postgres(url, &schema_of(root), substrate_options(), beside)?;
    crate::principal::sign(&db);
    Ok(db)
}

/// The substrate in the SQLite file at `path` (made when missing), its
/// commits signed as this host's.
pub fn open_file(path: &Path) -> Result<Substrate> {
    let db = Substrate::open_with(path, substrate_options())
        .with_context(|| format!("cannot open {}", path.display()))?;
    keep_private(path);
    crate::principal::sign(&db);
    Ok(db)
}

/// The schema a project's substrate takes on a server: `hc_NAME` for a
/// project named (`--project NAME`, `HC_PROJECT`: what checkouts on many
/// hosts share), else its directory's name and a short hash of its path,
/// so two projects never share one by accident (`?schema=NAME` in the URL
/// names one instead).
pub fn schema_of(root: &Path) -> String {
    if let Some(name) = project_name() {
        let name: String = name
            .to_lowercase()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .take(50)
            .collect();
        return format!("hc_{name}");
    }
    let (name, hash) = named_key(root, 4);
    let name: String = name
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(40)
        .collect();
    format!("hc_{name}_{hash}")
}

/// A project's directory name and the first `bytes` of the SHA-256 of its
/// canonical path, in hex: what names what is the project's elsewhere
/// (its schema on a server, its MCP servers' caches).
pub fn named_key(root: &Path, bytes: usize) -> (String, String) {
    let canonical = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_owned());
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        canonical.as_os_str().as_encoded_bytes(),
    );
    let hash = digest.as_ref()[..bytes.min(32)]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let name = canonical
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    (name, hash)
}

/// Commits the chunks made once (the constitution) that are missing;
/// answers whether it did. One a person changed stays as they left it.
fn seed(db: &Substrate) -> Result<bool> {
    let mut seeds = agent::seeds();
    // Taken on the first call: this read never searches, so is never run
    // again.
    let missing = db.read(|snap| -> substrate::Result<Vec<substrate::ChunkDecl>> {
        let mut out = Vec::new();
        for decl in std::mem::take(&mut seeds) {
            let id = decl.id.clone().unwrap_or_default();
            if snap.chunk(&id)?.is_none() {
                out.push(decl);
            }
        }
        Ok(out)
    })?;
    if missing.is_empty() {
        return Ok(false);
    }
    db.commit(substrate::Declaration::of(missing), None)?;
    Ok(true)
}

/// The nearest directory from `start` upward holding `.hermitcrab/`, not
/// looking past the root of the git repository `start` is in. A project in
/// the home directory, `/` or a shared temporary directory is found only
/// from that directory itself: everything under it is not its.
fn found_from(start: &Path) -> Option<&Path> {
    for dir in start.ancestors() {
        if dir.join(DIR).is_dir() && (dir == start || too_wide(dir).is_none()) {
            return Some(dir);
        }
        if is_repository_root(dir) {
            return None;
        }
    }
    None
}

/// The root of the git repository `start` is in (its `.git` nearest
/// upward), whoever owns it.
fn repository_of(start: &Path) -> Option<&Path> {
    start.ancestors().find(|d| is_repository_root(d))
}

/// Whether `dir` is a git repository's root: a `.git` directory, or a
/// `.git` file (a submodule, a linked worktree) — but not one of this
/// project's own worktrees (`.hermitcrab/worktrees/…`), which belongs to
/// the project above it.
fn is_repository_root(dir: &Path) -> bool {
    let dot_git = dir.join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
        return false;
    };
    if meta.is_dir() {
        return true;
    }
    let ours = dir
        .parent()
        .is_some_and(|p| p.ends_with(Path::new(DIR).join("worktrees")));
    !ours
}

/// What `root` is, when it is too wide to be made a project unasked: the
/// home directory, `/`, a shared temporary directory.
fn too_wide(root: &Path) -> Option<String> {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let root = canonical(root);
    if root.parent().is_none() {
        return Some("the root of the file system".to_owned());
    }
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty());
    if home.is_some_and(|h| canonical(Path::new(&h)) == root) {
        return Some("your home directory".to_owned());
    }
    let temps = [
        Some(std::env::temp_dir()),
        Some(PathBuf::from("/tmp")),
        Some(PathBuf::from("/var/tmp")),
        Some(PathBuf::from("/dev/shm")),
    ];
    if temps.iter().flatten().any(|t| canonical(t) == root) {
        return Some("a temporary directory every user shares".to_owned());
    }
    None
}

/// Asks whether `root` (`what`) is to be made a project; refuses unless
/// the person says yes.
fn confirm_wide(root: &Path, what: &str, ask: &crate::trust::Ask<'_>) -> Result<()> {
    let refusal = || {
        crate::exit::exit(
            2,
            format!(
                "hc will not make {} ({what}) a project without asking: everything under it \
                 would be inside the project, your keys and other repositories among them. Run \
                 hc in a project's directory, or `hc init` in {} if you mean it",
                root.display(),
                root.display()
            ),
        )
    };
    let crate::trust::Ask::Person(person) = ask else {
        return Err(refusal());
    };
    if !person.present() {
        return Err(refusal());
    }
    let question = format!(
        "Make {} ({what}) a project? Every file under it would be inside the project, for the \
         agent to read without asking. [y/N] ",
        root.display()
    );
    match person.ask_now(&question) {
        Some(answer) if matches!(answer.trim(), "y" | "Y" | "yes") => Ok(()),
        _ => Err(refusal()),
    }
}

/// The directory of the git repository `start` is in, if any — and only
/// when another user does not control it (git's own rule: a `.git` some
/// other user owns or anyone can write, say in a shared `/tmp`, is not
/// adopted unless listed in `safe_directories`).
fn git_root(start: &Path) -> Option<&Path> {
    let root = start.ancestors().find(|d| d.join(".git").exists())?;
    let me = std::fs::metadata("/proc/self").ok()?;
    match controlled_by_another(&root.join(".git"), &me) {
        Some(why) if !crate::config::safe_directory(root) => {
            eprintln!(
                "hc: not using the git repository at {} as the project: its .git {why}",
                root.display()
            );
            None
        }
        _ => Some(root),
    }
}

/// Why `path` is another user's to change: owned by someone else, or
/// writable by anyone. `None` when it is this user's alone (or missing).
fn controlled_by_another(path: &Path, me: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.uid() != me.uid() {
        return Some(format!(
            "is owned by another user (uid {}), not you (uid {})",
            meta.uid(),
            me.uid()
        ));
    }
    (meta.mode() & 0o002 != 0 && !meta.file_type().is_symlink()).then(|| {
        format!(
            "can be written by any user (mode {:o})",
            meta.mode() & 0o7777
        )
    })
}

/// Refuses a project another user controls — its `.hermitcrab/` (or its
/// `config.toml` or `.env`) owned by someone else, or writable by others —
/// unless the person listed it in `safe_directories` of their own
/// configuration: its hooks and settings would run as them.
pub fn owned(root: &Path) -> Result<()> {
    let me = std::fs::metadata("/proc/self").context("cannot tell who runs hc (/proc/self)")?;
    for path in [
        root.join(DIR),
        root.join(DIR).join("config.toml"),
        root.join(".env"),
    ] {
        if let Some(why) = controlled_by_another(&path, &me)
            && !crate::config::safe_directory(root)
        {
            bail!(
                "{} {why}: its settings and hooks would run as you, so hc will not use this project. \
                 If you trust it, add it to your own configuration ({}): safe_directories = [\"{}\"]",
                path.display(),
                crate::config::user_file().map_or_else(
                    || "~/.config/hermitcrab/config.toml".to_owned(),
                    |p| p.display().to_string()
                ),
                root.display()
            );
        }
    }
    Ok(())
}

/// What hc writes inside `.hermitcrab/` besides the store (which the
/// substrate checks itself): none may be a symbolic link.
const WRITTEN: &[&str] = &[
    "logs",
    "engines",
    "user-memory.synced",
    "history",
    "worktrees",
];

/// Refuses a `.hermitcrab/` that is a symbolic link, or holds one where
/// hc writes (or in `logs/`): hc, outside containment, would write
/// through it — a checkout shipping `logs/mcp-x.log -> ~/.bashrc` would
/// have your own server's output appended to that file.
pub fn refuse_links(dir: &Path) -> Result<()> {
    let mut paths = vec![dir.to_path_buf()];
    paths.extend(WRITTEN.iter().map(|name| dir.join(name)));
    if let Ok(logs) = std::fs::read_dir(dir.join("logs")) {
        paths.extend(logs.flatten().map(|e| e.path()));
    }
    for path in paths {
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path)
                .map(|t| format!(" (to {})", t.display()))
                .unwrap_or_default();
            bail!(
                "{} is a symbolic link{target}: hc never writes through a link in its own \
                 directory (a checkout could point one at your files), so it will not use this \
                 project as it is. Remove the link (rm {}) and run hc again",
                path.display(),
                path.display()
            );
        }
    }
    Ok(())
}

/// The project here and its substrate, brought up to date.
pub fn open_store() -> Result<(Project, Arc<Substrate>)> {
    let here = std::env::current_dir().context("cannot read the working directory")?;
    let project = Project::find(&here)?;
    let (db, _) = project.open()?;
    Ok((project, db))
}

/// Takes group and other permissions off the substrate's files made
/// before hc made them private (best effort: a file hc may not change is
/// left as it is).
fn keep_private(db: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    for file in [
        db.to_path_buf(),
        db.with_extension("db-wal"),
        db.with_extension("db-shm"),
    ] {
        if let Ok(meta) = std::fs::metadata(&file)
            && meta.permissions().mode() & 0o077 != 0
        {
            let _ = std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600));
        }
    }
}

/// Writes `text` to `path` unless it exists, all at once: whoever makes
/// the project at the same moment sees the file whole or not at all.
fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let draft = path.with_extension(format!("new-{}", std::process::id()));
    // made new: never written through a link left at its name
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&draft)?
        .write_all(text.as_bytes())?;
    let linked = std::fs::hard_link(&draft, path);
    let _ = std::fs::remove_file(&draft);
    match linked {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

/// How `hc` opens a project's store: the defaults — but, built with the
/// `bench` feature, for `HC_INDEX_TEXT_INLINE` and `HC_WITHOUT_FACTS` (set
/// only by the paired benchmark), which make each commit index its own
/// text as before the indexing thread, and every read ask the store as
/// before the head's facts were kept, to measure against.
fn substrate_options() -> substrate::Options {
    substrate::Options {
        #[cfg(feature = "bench")]
        index_text_inline: std::env::var_os("HC_INDEX_TEXT_INLINE").is_some(),
        #[cfg(feature = "bench")]
        without_facts: std::env::var_os("HC_WITHOUT_FACTS").is_some(),
        ..substrate::Options::default()
    }
}
