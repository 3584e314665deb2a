//! A `tools/call` result as a program's output: content blocks to `text`
//! (text joined, a resource link as its URI, an embedded resource's text),
//! images kept in `data.images` for the model, `structuredContent` in
//! `data.structured`, `isError` to `is_error`; the text cut head and tail
//! at [`MAX_OUTPUT_CHARS`].

use protocol::program::Output;
use serde_json::{Value, json};

/// The most characters of a tool's text the model gets
/// (`MAX_MCP_OUTPUT_CHARS`).
pub const MAX_OUTPUT_CHARS: usize = 100_000;

/// The output of a `tools/call` result (its JSON).
pub fn output_of(result: &Value) -> Output {
    let mut texts: Vec<String> = Vec::new();
    let mut images: Vec<Value> = Vec::new();
    for block in result["content"].as_array().into_iter().flatten() {
        match block["type"].as_str() {
            Some("text") => texts.push(block["text"].as_str().unwrap_or_default().to_owned()),
            Some("image") => {
                images.push(json!({
                    "media_type": block["mimeType"],
                    "data": block["data"],
                }));
                texts.push(format!(
                    "[image {}]",
                    block["mimeType"].as_str().unwrap_or("")
                ));
            }
            Some("audio") => texts.push(format!(
                "[audio {}]",
                block["mimeType"].as_str().unwrap_or("")
            )),
            Some("resource_link") => texts.push(format!(
                "[resource {}]",
                block["uri"].as_str().unwrap_or_default()
            )),
            Some("resource") => {
                let resource = &block["resource"];
                let uri = resource["uri"].as_str().unwrap_or_default();
                match resource["text"].as_str() {
                    Some(text) => texts.push(format!("[resource {uri}]\n{text}")),
                    None => texts.push(format!("[resource {uri} (binary)]")),
                }
            }
            _ => texts.push(block.to_string()),
        }
    }
    let structured = result.get("structuredContent").filter(|v| !v.is_null());
    if texts.is_empty()
        && let Some(structured) = structured
    {
        texts.push(structured.to_string());
    }
    let mut data = json!({});
    if let Some(structured) = structured {
        data["structured"] = structured.clone();
    }
    if !images.is_empty() {
        data["images"] = Value::Array(images);
    }
    let data = if data.as_object().is_some_and(|m| m.is_empty()) {
        Value::Null
    } else {
        data
    };
    Output {
        text: cut(&texts.join("\n")),
        data,
        is_error: result["isError"].as_bool().unwrap_or(false),
    }
}

/// `text` at most [`MAX_OUTPUT_CHARS`] characters: its head and tail, with
/// a note of what was left out between them.
pub fn cut(text: &str) -> String {
    let count = text.chars().count();
    if count <= MAX_OUTPUT_CHARS {
        return text.to_owned();
    }
    let keep = MAX_OUTPUT_CHARS / 2;
    let head: String = text.chars().take(keep).collect();
    let tail: String = text.chars().skip(count - keep).collect();
    format!(
        "{head}\n[… {} characters of the tool's output left out (MAX_MCP_OUTPUT_CHARS = {MAX_OUTPUT_CHARS}) …]\n{tail}",
        count - 2 * keep
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_become_text_images_stay_images_and_is_error_carries() {
        let out = output_of(&json!({
            "content": [
                {"type": "text", "text": "one"},
                {"type": "image", "mimeType": "image/png", "data": "iVBO"},
                {"type": "resource_link", "uri": "file:///a", "name": "a"},
                {"type": "resource", "resource": {"uri": "mem://x", "text": "inner"}}
            ],
            "structuredContent": {"sum": 3},
            "isError": true
        }));
        assert_eq!(
            out.text,
            "one\n[image image/png]\n[resource file:///a]\n[resource mem://x]\ninner"
        );
        assert_eq!(out.data["structured"], json!({"sum": 3}));
        assert_eq!(
            out.data["images"],
            json!([{"media_type": "image/png", "data": "iVBO"}])
        );
        assert!(out.is_error);
        let only_structured = output_of(&json!({"content": [], "structuredContent": {"a": 1}}));
        assert_eq!(only_structured.text, r#"{"a":1}"#);
        assert!(!only_structured.is_error);
    }

    #[test]
    fn long_output_is_cut_head_and_tail() {
        let text = format!("{}{}", "h".repeat(80_000), "t".repeat(80_000));
        let out = cut(&text);
        assert!(out.starts_with(&"h".repeat(50_000)) && out.ends_with(&"t".repeat(50_000)));
        assert!(out.contains("60000 characters of the tool's output left out"));
        assert!(out.chars().count() < 100_200);
    }
}
