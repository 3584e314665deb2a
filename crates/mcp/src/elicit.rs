//! Elicitation: a server asking the person something during a call. The
//! question is a `user-question` on the run's process, which the host asks
//! as it asks any (`hc run` on a terminal, `hc chat`, a protocol host); the
//! `user-answer` it commits there is the reply. With no one to answer (the
//! host said so), the server is told the request was declined. Pure: the
//! question's words and the reply made of the answer.

use serde_json::{Map, Value, json};

/// The question a person reads, for a form request (its JSON).
pub fn question(request: &Value) -> String {
    let mut text = request["message"]
        .as_str()
        .unwrap_or("The server asks:")
        .to_owned();
    let properties = request["requestedSchema"]["properties"].as_object();
    let fields: Vec<String> = properties
        .into_iter()
        .flatten()
        .map(|(name, p)| {
            let kind = p["type"].as_str().unwrap_or("string");
            match p["description"].as_str() {
                Some(d) => format!("  {name} ({kind}): {d}"),
                None => format!("  {name} ({kind})"),
            }
        })
        .collect();
    if let [only] = fields.as_slice() {
        text.push_str(&format!(
            "\n{only}\n(answer with the value; `decline` or `cancel` to refuse)"
        ));
    } else if !fields.is_empty() {
        text.push_str(&format!(
            "\n{}\n(answer NAME=VALUE, one per line or separated by `;`; `decline` or `cancel` to refuse)",
            fields.join("\n")
        ));
    }
    text
}

/// The reply (an `ElicitResult`'s JSON) that `answer` makes to `request`.
pub fn reply(request: &Value, answer: &str) -> Value {
    let answer = answer.trim();
    match answer.to_lowercase().as_str() {
        "decline" | "no" | "n" => return json!({"action": "decline"}),
        "cancel" => return json!({"action": "cancel"}),
        _ => {}
    }
    let properties = request["requestedSchema"]["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    if let Ok(Value::Object(given)) = serde_json::from_str::<Value>(answer) {
        return json!({"action": "accept", "content": given});
    }
    let mut content = Map::new();
    if properties.len() == 1 {
        if let Some((name, p)) = properties.iter().next() {
            content.insert(name.clone(), typed(p, answer));
        }
    } else {
        for pair in answer.split(['\n', ';']) {
            if let Some((name, value)) = pair.split_once('=').or_else(|| pair.split_once(':')) {
                let name = name.trim();
                let p = properties.get(name).cloned().unwrap_or(Value::Null);
                content.insert(name.to_owned(), typed(&p, value.trim()));
            }
        }
    }
    json!({"action": "accept", "content": content})
}

/// `text` as the property's type says (number, integer, boolean), else
/// as it is.
fn typed(property: &Value, text: &str) -> Value {
    match property["type"].as_str() {
        Some("integer") => text
            .parse::<i64>()
            .map_or_else(|_| json!(text), |n| json!(n)),
        Some("number") => text
            .parse::<f64>()
            .map_or_else(|_| json!(text), |n| json!(n)),
        Some("boolean") => match text.to_lowercase().as_str() {
            "true" | "yes" | "y" => json!(true),
            "false" | "no" | "n" => json!(false),
            _ => json!(text),
        },
        _ => json!(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> Value {
        json!({"message": "Who are you?", "requestedSchema": {"type": "object", "properties": {
            "name": {"type": "string", "description": "Your name"},
            "age": {"type": "integer"}, "ok": {"type": "boolean"}}}})
    }

    #[test]
    fn answers_become_typed_content_or_a_refusal() {
        let q = question(&form());
        assert!(
            q.starts_with("Who are you?\n") && q.contains("name (string): Your name"),
            "{q}"
        );
        assert_eq!(
            reply(&form(), "name=Ada; age=36\nok=yes"),
            json!({"action": "accept", "content": {"name": "Ada", "age": 36, "ok": true}})
        );
        assert_eq!(
            reply(&form(), r#"{"name": "Bo"}"#)["content"],
            json!({"name": "Bo"})
        );
        assert_eq!(reply(&form(), "decline"), json!({"action": "decline"}));
        assert_eq!(reply(&form(), " cancel "), json!({"action": "cancel"}));
        let one = json!({"message": "Pick", "requestedSchema": {"properties": {"n": {"type": "number"}}}});
        assert_eq!(
            reply(&one, "2.5"),
            json!({"action": "accept", "content": {"n": 2.5}})
        );
    }
}
