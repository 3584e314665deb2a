//! `--settings FILE|JSON`: Claude Code's settings (a `settings.json`, or
//! the JSON itself, as the Agent SDKs pass it) as one more layer of flags
//! — each key hermitcrab has applied, every other refused by name (a
//! usage error): never accepted and ignored.
//!
//! Applied: `permissions.allow`/`deny`/`ask` (rules, either naming),
//! `permissions.defaultMode`, `permissions.additionalDirectories`,
//! `model`, `hooks` (Claude Code's shape: event → matchers → command
//! hooks), `sandbox.enabled: true` (hermitcrab always contains its
//! tools); `$schema` is a label. A flag given beside it wins (`--model`,
//! `--permission-mode`).

use hc_host::settings::Flags;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// The keys read (any other is refused).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Settings {
    #[serde(rename = "$schema")]
    _schema: Option<Value>,
    #[serde(default)]
    permissions: Permissions,
    model: Option<String>,
    #[serde(default)]
    hooks: BTreeMap<String, Vec<Matcher>>,
    sandbox: Option<Sandbox>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Permissions {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    #[serde(default)]
    ask: Vec<String>,
    default_mode: Option<String>,
    #[serde(default)]
    additional_directories: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Matcher {
    matcher: Option<String>,
    hooks: Vec<Hook>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Hook {
    #[serde(rename = "type")]
    kind: String,
    command: String,
    /// Seconds, as Claude Code takes them.
    timeout: Option<u64>,
    /// `block`: its failure blocks what the event guards.
    #[serde(rename = "onFailure")]
    on_failure: Option<agent::OnFailure>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Sandbox {
    enabled: bool,
}

/// `flags` with the settings `given` (a file's path, or JSON) added: an
/// error is a usage error that names the key and what to do.
pub fn apply(given: &str, flags: &mut Flags) -> Result<(), String> {
    let settings = read(given)?;
    if settings.sandbox.is_some_and(|s| !s.enabled) {
        return Err(
            "--settings: `sandbox.enabled: false` cannot be honoured: hermitcrab always \
             contains its tools (give --no-contain to run them uncontained)"
                .to_owned(),
        );
    }
    let p = settings.permissions;
    let lists = [("allow", p.allow), ("deny", p.deny), ("ask", p.ask)];
    for (name, rules) in lists {
        for rule in rules {
            agent::permissions::Rule::parse(&rule)
                .map_err(|e| format!("--settings: permissions.{name}: {e}"))?;
            flags.rules.push((name, rule));
        }
    }
    let scalars = [
        ("permission_mode", p.default_mode),
        ("model", settings.model),
    ];
    for (name, value) in scalars {
        if let Some(value) = value
            && !flags.scalars.iter().any(|(n, _)| *n == name)
        {
            flags.scalars.push((name, value));
        }
    }
    flags.add_dirs.extend(p.additional_directories);
    for (event, matchers) in settings.hooks {
        let Some(ours) = agent::hook_event(&event) else {
            return Err(format!(
                "--settings: hooks: `{event}` is not an event hermitcrab runs hooks on; \
                 give one of PreToolUse, PostToolUse, UserPromptSubmit, Stop, SubagentStop, \
                 PreCompact, Notification"
            ));
        };
        for m in matchers {
            for hook in m.hooks {
                if hook.kind != "command" {
                    return Err(format!(
                        "--settings: hooks.{event}: a hook of type `{}` cannot be run; \
                         hermitcrab runs `command` hooks",
                        hook.kind
                    ));
                }
                flags.hooks.push(agent::HookConfig {
                    event: ours.to_owned(),
                    matcher: m.matcher.clone().filter(|m| !m.is_empty()),
                    command: hook.command,
                    callback: None,
                    timeout_ms: hook.timeout.map(|s| s.saturating_mul(1000)),
                    on_failure: hook.on_failure,
                });
            }
        }
    }
    Ok(())
}

/// The settings `given` names: JSON when it reads as an object, else a
/// file holding it.
fn read(given: &str) -> Result<Settings, String> {
    let text = match given.trim_start().starts_with('{') {
        true => given.to_owned(),
        false => std::fs::read_to_string(given).map_err(|e| {
            format!(
                "--settings {given}: cannot be read ({e}); give a settings file or the JSON itself"
            )
        })?,
    };
    let value: Value =
        serde_json::from_str(&text).map_err(|e| format!("--settings: not JSON ({e})"))?;
    serde_path_to_error::deserialize(&value).map_err(|e| {
        let at = e.path().to_string();
        let inner = e.inner().to_string();
        match inner.strip_prefix("unknown field ") {
            Some(rest) => format!(
                "--settings: `{}` at `{at}` is not a setting hermitcrab applies; remove it \
                 (hermitcrab applies permissions, model, hooks, sandbox.enabled)",
                rest.split(',').next().unwrap_or(rest).trim_matches('`')
            ),
            None => format!("--settings: `{at}`: {inner}"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_become_flags_and_a_flag_wins() {
        let mut flags = Flags::default();
        flags.scalars.push(("model", "from-flag".into()));
        let json = r#"{"$schema": "x", "model": "from-settings",
            "permissions": {"allow": ["Bash(git status:*)"], "defaultMode": "acceptEdits",
                            "additionalDirectories": ["/tmp"]},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true", "timeout": 5}]}]},
            "sandbox": {"enabled": true}}"#;
        apply(json, &mut flags).unwrap();
        assert!(flags.scalars.contains(&("model", "from-flag".into())));
        assert!(!flags.scalars.contains(&("model", "from-settings".into())));
        assert!(
            flags
                .scalars
                .contains(&("permission_mode", "acceptEdits".into()))
        );
        assert_eq!(flags.rules, [("allow", "Bash(git status:*)".to_owned())]);
        assert_eq!(flags.add_dirs, ["/tmp"]);
        assert_eq!(flags.hooks[0].event, "pre-tool");
        assert_eq!(flags.hooks[0].timeout_ms, Some(5000));
    }

    #[test]
    fn a_key_not_applied_is_refused_by_name() {
        let mut flags = Flags::default();
        let err = apply(r#"{"env": {"A": "1"}}"#, &mut flags).unwrap_err();
        assert!(err.contains("`env`") && err.contains("remove it"), "{err}");
        let err = apply(r#"{"sandbox": {"enabled": false}}"#, &mut flags).unwrap_err();
        assert!(err.contains("always"), "{err}");
        let err = apply("no-such-file.json", &mut flags).unwrap_err();
        assert!(err.contains("cannot be read"), "{err}");
    }
}
