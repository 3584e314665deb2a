//! A project is a directory holding `.hermitcrab/`:
//! found upward from the working directory, like git.

use anyhow::{Context as _, Result, bail};
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
    /// The project containing `start` (or `start` itself), searching upward.
    pub fn find(start: &Path) -> Result<Project> {
        for dir in start.ancestors() {
            if dir.join(DIR).is_dir() {
                return Ok(Project {
                    root: dir.to_path_buf(),
                });
            }
        }
        bail!(
            "no project here (no {DIR}/ in {} or above); run `hc init`",
            start.display()
        )
    }

    /// The project containing `start`, or — when there is none — a new
    /// one made quietly in `start` (as `hc run` and `hc chat` do).
    pub fn find_or_init(start: &Path) -> Result<Project> {
        match Project::find(start) {
            Ok(project) => Ok(project),
            Err(_) => Ok(Project::init(start)?.0),
        }
    }

    /// Creates `.hermitcrab/` in `root` (keeping what is there) and bootstraps
    /// the substrate. Returns the project and whether anything was committed.
    pub fn init(root: &Path) -> Result<(Project, bool)> {
        let dir = root.join(DIR);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        for (name, text) in [("config.toml", CONFIG_TEMPLATE), (".gitignore", GITIGNORE)] {
            let path = dir.join(name);
            if !path.exists() {
                std::fs::write(&path, text)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
        }
        let project = Project {
            root: root.to_path_buf(),
        };
        let (_, changed) = project.open()?;
        Ok((project, changed))
    }

    /// The configuration files (the user's and this project's), with the
    /// project's `.env` loaded first.
    pub fn config(&self) -> Result<crate::config::Files> {
        crate::config::load_dotenv(&self.root.join(".env"))?;
        crate::config::Files::read(&self.root.join(DIR).join("config.toml"))
    }

    /// The substrate file.
    pub fn database(&self) -> PathBuf {
        self.root.join(DIR).join("substrate.db")
    }

    /// Opens the substrate, bringing its bootstrap chunks (archetypes and
    /// built-in programs) up to date. Returns whether that committed anything.
    pub fn open(&self) -> Result<(Arc<Substrate>, bool)> {
        let path = self.database();
        let db =
            Substrate::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
        let changed = db
            .init(crate::builtins::vocabulary())
            .context("cannot bootstrap the substrate")?
            .is_some();
        Ok((Arc::new(db), changed))
    }
}

/// The project here and its substrate, brought up to date.
pub fn open_store() -> Result<(Project, Arc<Substrate>)> {
    let here = std::env::current_dir().context("cannot read the working directory")?;
    let project = Project::find(&here)?;
    let (db, _) = project.open()?;
    Ok((project, db))
}
