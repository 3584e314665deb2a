//! A `tools/call` result as a program's output: content blocks to `text`
//! (text joined, a resource link as its URI, an embedded resource's text),
//! images kept in `data.images` for the model, `structuredContent` in
//! `data.structured`, `isError` to `is_error`; the text cut head and tail
//! at [`MAX_OUTPUT_CHARS`], `structuredContent` over
//! [`MAX_STRUCTURED_BYTES`] and images past [`MAX_IMAGE_BYTES`] or
//! [`MAX_IMAGES_BYTES`] left out, the text saying so — so an output always
//! fits in a chunk.

use protocol::program::Output;
use serde_json::{Value, json};

/// The most characters of a tool's text the model gets
/// (`MAX_MCP_OUTPUT_CHARS`).
pub const MAX_OUTPUT_CHARS: usize = 100_000;

/// The most bytes of `structuredContent` (serialised) kept in
/// `data.structured`.
pub const MAX_STRUCTURED_BYTES: usize = 100_000;

/// The most bytes of one image (base64, as sent): the model API's limit.
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// The most bytes of images (base64) one output keeps.
pub const MAX_IMAGES_BYTES: usize = 6 * 1024 * 1024;

/// The output of a `tools/call` result (its JSON).
pub fn output_of(result: &Value) -> Output {
    let mut texts: Vec<String> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let mut images: Vec<Value> = Vec::new();
    let mut image_bytes = 0;
    for block in result["content"].as_array().into_iter().flatten() {
        match block["type"].as_str() {
            Some("text") => texts.push(block["text"].as_str().unwrap_or_default().to_owned()),
            Some("image") => {
                let media_type = block["mimeType"].as_str().unwrap_or("");
                texts.push(format!("[image {media_type}]"));
                let data = block["data"].as_str().unwrap_or_default();
                match image_refused(data, image_bytes) {
                    Some(why) => notes.push(format!("[image {media_type} left out: {why}]")),
                    None => {
                        image_bytes += data.len();
                        images.push(json!({"media_type": block["mimeType"], "data": data}));
                    }
                }
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
        let size = serde_json::to_vec(structured).map_or(usize::MAX, |s| s.len());
        if size <= MAX_STRUCTURED_BYTES {
            data["structured"] = structured.clone();
        } else {
            notes.push(format!(
                "[structuredContent left out: {size} bytes, over the {MAX_STRUCTURED_BYTES} kept]"
            ));
        }
    }
    if !images.is_empty() {
        data["images"] = Value::Array(images);
    }
    let data = if data.as_object().is_some_and(|m| m.is_empty()) {
        Value::Null
    } else {
        data
    };
    let mut text = cut(&texts.join("\n"));
    for note in notes {
        text.push('\n');
        text.push_str(&note);
    }
    Output {
        text,
        data,
        is_error: result["isError"].as_bool().unwrap_or(false),
    }
}

/// Why an image of `data` (base64) is left out when `kept` bytes of
/// images are kept already: too large, or not whole (cut on its way, see
/// [`crate::guard`]).
fn image_refused(data: &str, kept: usize) -> Option<String> {
    let base64 = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=');
    if data.len() > MAX_IMAGE_BYTES {
        Some(format!(
            "{} bytes, over the {MAX_IMAGE_BYTES} an image may be",
            data.len()
        ))
    } else if kept + data.len() > MAX_IMAGES_BYTES {
        Some(format!(
            "{} bytes, past the {MAX_IMAGES_BYTES} of images an answer keeps",
            data.len()
        ))
    } else if !data.bytes().all(|b| base64(&b)) {
        Some("it was cut on its way, too large to pass whole".to_owned())
    } else {
        None
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
    fn large_structured_content_and_images_are_left_out_saying_so() {
        let big = json!({"rows": vec!["row"; 30_000]});
        let png = "A".repeat(4 * 1024 * 1024);
        let out = output_of(&json!({
            "content": [
                {"type": "text", "text": "rows"},
                {"type": "image", "mimeType": "image/png", "data": "iVBO"},
                {"type": "image", "mimeType": "image/png", "data": png},
                {"type": "image", "mimeType": "image/gif", "data": png},
                {"type": "image", "mimeType": "image/jpeg", "data": "A".repeat(6 * 1024 * 1024)},
                {"type": "image", "mimeType": "image/webp", "data": "iVBO\n[\u{2026} cut \u{2026}]"},
            ],
            "structuredContent": big
        }));
        assert_eq!(out.data.get("structured"), None);
        let kept: Vec<&str> = out.data["images"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["media_type"].as_str().unwrap())
            .collect();
        assert_eq!(kept, ["image/png", "image/png"]);
        for said in [
            "[structuredContent left out: 180010 bytes, over the 100000 kept]",
            "[image image/gif left out: 4194304 bytes, past the 6291456 of images",
            "[image image/jpeg left out: 6291456 bytes, over the 5242880 an image may be]",
            "[image image/webp left out: it was cut on its way",
        ] {
            assert!(out.text.contains(said), "{said}: {}", out.text);
        }
        assert!(!out.is_error);
        let small = output_of(&json!({"content": [], "structuredContent": {"a": 1}}));
        assert_eq!(small.data["structured"], json!({"a": 1}));
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
