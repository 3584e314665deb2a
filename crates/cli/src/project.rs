//! A project is a directory holding `.hermitcrab/` (DESIGN.md, decision 1):
//! found upward from the working directory, like git.

use anyhow::{Context as _, Result, bail};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use substrate::Substrate;

/// The project's state directory name.
pub const DIR: &str = ".hermitcrab";

/// What `.hermitcrab/config.toml` says (only what `hc` reads so far).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// `containment = "off"`.
    pub containment_off: bool,
}

/// A found project.
pub struct Project {
    /// The directory that holds `.hermitcrab/`.
    pub root: PathBuf,
}

const CONFIG_TEMPLATE: &str = "\
# hermitcrab project configuration.
# Settings here override the user file ($XDG_CONFIG_HOME/hermitcrab/config.toml).
";

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

    /// Creates `.hermitcrab/` in `root` (keeping what is there) and bootstraps
    /// the substrate. Returns the project and whether anything was committed.
    pub fn init(root: &Path) -> Result<(Project, bool)> {
        let dir = root.join(DIR);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let config = dir.join("config.toml");
        if !config.exists() {
            std::fs::write(&config, CONFIG_TEMPLATE)
                .with_context(|| format!("cannot write {}", config.display()))?;
        }
        let project = Project {
            root: root.to_path_buf(),
        };
        let (_, changed) = project.open()?;
        Ok((project, changed))
    }

    /// The project's settings.
    pub fn settings(&self) -> Result<Settings> {
        let path = self.root.join(DIR).join("config.toml");
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Settings::default()),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let table: toml::Table = text
            .parse()
            .with_context(|| format!("{} is not valid TOML", path.display()))?;
        let containment_off = match table.get("containment") {
            None => false,
            Some(toml::Value::String(s)) if s == "on" => false,
            Some(toml::Value::String(s)) if s == "off" => true,
            Some(other) => bail!(
                "{}: `containment` is \"on\" or \"off\", not {other:?}",
                path.display()
            ),
        };
        Ok(Settings { containment_off })
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
        let programs = programs::definitions()
            .iter()
            .flat_map(|d| d.chunks())
            .collect();
        let changed = db
            .init(programs)
            .context("cannot bootstrap the substrate")?
            .is_some();
        Ok((Arc::new(db), changed))
    }
}
