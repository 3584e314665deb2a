//! What `hc chat`'s prompt takes beyond its slash commands, as Claude
//! Code's does: `@path` completed by Tab (a file or directory to mention),
//! and `! COMMAND`, a shell line the person runs themselves — a contained,
//! recorded run of the `shell` program — whose output goes with the next
//! message.

/// `@partial` completed: the files and directories (a `/` after one)
/// under the working directory whose path starts so, hidden ones only
/// when asked for, at most 50.
pub fn paths_like(partial: &str) -> Vec<String> {
    let (dir, start) = match partial.rfind('/') {
        Some(i) => (&partial[..=i], &partial[i + 1..]),
        None => ("", partial),
    };
    let Ok(entries) = std::fs::read_dir(if dir.is_empty() { "." } else { dir }) else {
        return Vec::new();
    };
    let mut found: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let shown =
                name.starts_with(start) && (start.starts_with('.') || !name.starts_with('.'));
            let slash = if e.file_type().is_ok_and(|t| t.is_dir()) {
                "/"
            } else {
                ""
            };
            shown.then(|| format!("@{dir}{name}{slash}"))
        })
        .collect();
    found.sort();
    found.truncate(50);
    found
}

/// Runs `command` as the person typed it after `!`: refused by a deny
/// rule of theirs (no question: they asked for it), else a run of `shell`
/// awaited. Answers what the model is told with the next message.
pub async fn shell_line(
    engine: &engine::Engine,
    config: &agent::AgentConfig,
    command: &str,
) -> anyhow::Result<(String, String)> {
    let input = serde_json::json!({"command": command});
    let root = engine.config().project_root.clone();
    hc_host::permit::asked_by_person(config, &root, "shell", &input, false)
        .map_err(|e| anyhow::anyhow!("{e:#}; `{command}` did not run"))?;
    let output = hc_host::commands::run_for_output(engine, "shell", input).await?;
    let text = output.map(|o| o.text).unwrap_or_default();
    let told = format!("<bash-input>{command}</bash-input>\n<bash-stdout>{text}</bash-stdout>");
    Ok((text, told))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_completes_with_a_slash_after_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
        std::fs::write(dir.path().join(".hidden"), "").unwrap();
        let at = dir.path().display().to_string();
        assert_eq!(paths_like(&format!("{at}/s")), [format!("@{at}/src/")]);
        assert_eq!(
            paths_like(&format!("{at}/src/m")),
            [format!("@{at}/src/main.rs")]
        );
        assert!(
            paths_like(&format!("{at}/"))
                .iter()
                .all(|p| !p.contains(".hidden"))
        );
    }
}
