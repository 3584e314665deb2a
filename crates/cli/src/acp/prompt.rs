//! What an editor sends, as a turn takes it: a prompt's blocks (text,
//! images, links to files, files' contents embedded) as the prompt's text
//! and images; `/skill` as a request to use the skill; the editor's MCP
//! servers as an `--mcp-config`.

use agent::contract::PromptImage;
use hc_acp::rpc::{self, RpcError};
use hc_acp::schema::{ContentBlock, McpServer};
use serde_json::{Map, Value, json};
use std::path::Path;

/// The media types a model takes an image in.
const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// A prompt's blocks as its text and images.
pub fn read(blocks: &[ContentBlock], root: &Path) -> Result<(String, Vec<PromptImage>), RpcError> {
    let mut parts: Vec<String> = Vec::new();
    let mut images = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text { text } => parts.push(text.clone()),
            ContentBlock::Image { data, mime_type } => {
                if !IMAGE_TYPES.contains(&mime_type.as_str()) {
                    return Err(RpcError::new(
                        rpc::INVALID_PARAMS,
                        format!(
                            "an image of type {mime_type} cannot be sent to the model; send {}",
                            IMAGE_TYPES.join(", ")
                        ),
                    ));
                }
                images.push(PromptImage {
                    path: format!("(image {} from the editor)", images.len() + 1),
                    media_type: mime_type.clone(),
                    data: data.clone(),
                });
            }
            ContentBlock::ResourceLink { uri, name } => {
                parts.push(format!(
                    "@{}",
                    shown_path(uri, root).unwrap_or_else(|| name.clone())
                ));
            }
            ContentBlock::Resource { resource } => match &resource.text {
                Some(text) => parts.push(format!(
                    "<context ref=\"{}\">\n{text}\n</context>",
                    resource.uri
                )),
                None => parts.push(format!(
                    "@{}",
                    shown_path(&resource.uri, root).unwrap_or_else(|| resource.uri.clone())
                )),
            },
            ContentBlock::Unknown => {
                return Err(RpcError::new(
                    rpc::INVALID_PARAMS,
                    "a prompt block hc does not take (audio?): send text, images, resource links or resources",
                ));
            }
        }
    }
    let text = parts.join("\n\n");
    if text.trim().is_empty() && images.is_empty() {
        return Err(RpcError::new(
            rpc::INVALID_PARAMS,
            "the prompt is empty; say what to do",
        ));
    }
    Ok((text, images))
}

/// A `file://` URI's path (percent-decoded), relative to the project
/// when inside it.
fn shown_path(uri: &str, root: &Path) -> Option<String> {
    let path = decoded(uri.strip_prefix("file://")?)?;
    let path = Path::new(&path);
    Some(match path.strip_prefix(root) {
        Ok(inside) if !inside.as_os_str().is_empty() => inside.display().to_string(),
        _ => path.display().to_string(),
    })
}

/// `text` with its `%XX` escapes decoded (none: not UTF-8 once decoded,
/// or a bad escape).
fn decoded(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The skills a prompt may name as `/NAME` (those the configuration keeps).
pub fn skills(root: &Path, config: &agent::AgentConfig) -> Vec<(String, String)> {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let user = config.user_config_dir.as_deref().map(Path::new);
    let (found, _) = agent::sources::skills::find(root, user, home.as_deref());
    found
        .into_iter()
        .filter(|s| config.keeps_source(root, Path::new(&s.path)))
        .map(|s| (s.name, s.description))
        .collect()
}

/// `/NAME ARGS` naming a skill (and no command file) as the prompt asking
/// for it; `None` when `text` names none.
pub fn skill_call(text: &str, root: &Path, config: &agent::AgentConfig) -> Option<String> {
    let called = text.trim_start().strip_prefix('/')?;
    let (name, args) = called
        .split_once(char::is_whitespace)
        .map_or((called, ""), |(n, a)| (n, a.trim()));
    let (commands, _) = hc_host::commands::find(root);
    if commands.iter().any(|c| c.name == name) {
        return None;
    }
    skills(root, config).iter().find(|(n, _)| n == name)?;
    Some(match args.is_empty() {
        true => format!("Use the skill `{name}`."),
        false => format!("Use the skill `{name}`: {args}"),
    })
}

/// The editor's MCP servers as an `--mcp-config` value.
pub fn mcp_config(servers: &[McpServer]) -> Value {
    let pairs = |list: &[hc_acp::schema::NameValue]| -> Map<String, Value> {
        (list.iter())
            .map(|p| (p.name.clone(), json!(p.value)))
            .collect()
    };
    let mut out = Map::new();
    for server in servers {
        let (name, entry) = match server {
            McpServer::Stdio {
                name,
                command,
                args,
                env,
            } => (
                name,
                json!({"command": command, "args": args, "env": pairs(env)}),
            ),
            McpServer::Remote {
                kind,
                name,
                url,
                headers,
            } => (
                name,
                json!({"type": kind, "url": url, "headers": pairs(headers)}),
            ),
        };
        out.insert(name.clone(), entry);
    }
    json!({"mcpServers": out})
}

#[cfg(test)]
mod tests {
    use super::*;
    use hc_acp::schema::EmbeddedResource;

    #[test]
    fn every_block_reaches_the_prompt() {
        let blocks = vec![
            ContentBlock::Text {
                text: "look".into(),
            },
            ContentBlock::ResourceLink {
                uri: "file:///p/src/a.rs".into(),
                name: "a.rs".into(),
            },
            ContentBlock::Resource {
                resource: EmbeddedResource {
                    uri: "file:///p/b.rs".into(),
                    text: Some("fn b() {}".into()),
                    blob: None,
                },
            },
            ContentBlock::Image {
                data: "iVBO".into(),
                mime_type: "image/png".into(),
            },
        ];
        let (text, images) = read(&blocks, Path::new("/p")).unwrap();
        assert_eq!(
            text,
            "look\n\n@src/a.rs\n\n<context ref=\"file:///p/b.rs\">\nfn b() {}\n</context>"
        );
        assert_eq!(images[0].media_type, "image/png");
    }

    #[test]
    fn a_file_uri_is_decoded_and_made_relative_only_inside_the_project() {
        let root = Path::new("/p");
        assert_eq!(
            shown_path("file:///p/my%20file.rs", root).unwrap(),
            "my file.rs"
        );
        assert_eq!(shown_path("file:///pp/x.rs", root).unwrap(), "/pp/x.rs");
        assert_eq!(shown_path("https://x", root), None);
    }

    #[test]
    fn what_cannot_be_sent_is_refused() {
        let audio = [ContentBlock::Unknown];
        assert_eq!(
            read(&audio, Path::new("/p")).unwrap_err().code,
            rpc::INVALID_PARAMS
        );
        let tiff = [ContentBlock::Image {
            data: "x".into(),
            mime_type: "image/tiff".into(),
        }];
        assert!(
            read(&tiff, Path::new("/p"))
                .unwrap_err()
                .message
                .contains("image/png")
        );
        assert!(read(&[], Path::new("/p")).is_err());
    }

    #[test]
    fn servers_become_an_mcp_config() {
        let servers: Vec<McpServer> = serde_json::from_value(json!([
            {"name": "fs", "command": "npx", "args": ["x"], "env": [{"name": "A", "value": "1"}]},
            {"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp", "headers": []}
        ]))
        .unwrap();
        let config = mcp_config(&servers);
        assert_eq!(config["mcpServers"]["fs"]["env"]["A"], "1");
        assert_eq!(config["mcpServers"]["web"]["type"], "http");
    }
}
