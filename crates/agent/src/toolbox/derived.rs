//! What calls need from earlier ones, kept per session and derived from
//! its tool results (so it survives a resume): the hash of the last read
//! of each path (passed as `expect_sha256` to `write` and `edit`), and
//! where the last shell command ended (passed as `cwd`).

use crate::contract::{Member, SessionItem};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// What the toolbox knows from earlier results.
#[derive(Clone, Debug, Default)]
pub(crate) struct Derived {
    /// Absolute path → SHA-256 of its last read (or write, or edit).
    hashes: HashMap<PathBuf, String>,
    /// Where the last shell command ended.
    cwd: Option<String>,
}

impl Derived {
    /// What the results of `history` leave.
    pub fn of(root: &Path, history: &[Member]) -> Derived {
        let mut derived = Derived::default();
        for member in history {
            if let SessionItem::ToolResult(r) = &member.item {
                let data = r.data.clone().unwrap_or_default();
                derived.observe(root, &r.program, &data, r.is_error);
            }
        }
        derived
    }

    /// Learns from one tool result.
    pub fn observe(&mut self, root: &Path, program: &str, data: &Value, is_error: bool) {
        if is_error {
            return;
        }
        match program {
            "read" | "write" | "edit" => {
                if let (Some(path), Some(hash)) = (data["path"].as_str(), data["sha256"].as_str()) {
                    self.hashes
                        .insert(crate::permissions::absolute(root, path), hash.to_owned());
                }
            }
            "shell" => {
                if let Some(cwd) = data["cwd"].as_str() {
                    self.cwd = Some(cwd.to_owned());
                }
            }
            _ => {}
        }
    }

    /// What a call needs from earlier ones: the hash of the last read of
    /// a file being written or edited, the directory the last command
    /// ended in.
    pub fn fill(&self, root: &Path, program: &str, mut input: Value) -> Value {
        match program {
            "write" | "edit" => {
                let path = input["file_path"].as_str().unwrap_or_default();
                let path = crate::permissions::absolute(root, path);
                if let (Some(hash), Some(fields)) = (self.hashes.get(&path), input.as_object_mut())
                {
                    fields.insert("expect_sha256".into(), json!(hash));
                }
            }
            "shell" => {
                if let (Some(cwd), Some(fields)) = (&self.cwd, input.as_object_mut())
                    && !fields.contains_key("cwd")
                {
                    fields.insert("cwd".into(), json!(cwd));
                }
            }
            _ => {}
        }
        input
    }

    /// Why a `write` or `edit` cannot succeed, known before anyone is
    /// asked: it would change a file that exists and was not read in this
    /// session (the program refuses that), or edit one that is not there.
    /// Only inside the project: elsewhere, whether a file exists is not
    /// said before the permissions are asked.
    pub fn cannot_succeed(&self, root: &Path, program: &str, input: &Value) -> Option<String> {
        if program != "write" && program != "edit" {
            return None;
        }
        let given = input["file_path"].as_str()?;
        let path = crate::permissions::absolute(root, given);
        let real = crate::permissions::command::paths::real;
        if !real(&path).starts_with(real(root)) {
            return None;
        }
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() && !self.hashes.contains_key(&path) => Some(format!(
                "{given} exists and has not been read in this session; read it first \
                 (a file is changed only as it was read, so nothing is overwritten unseen)"
            )),
            Err(e) if program == "edit" && e.kind() == std::io::ErrorKind::NotFound => Some(
                format!("{given} does not exist; to create a file, use write"),
            ),
            _ => None,
        }
    }
}
