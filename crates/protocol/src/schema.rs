//! Checking a JSON value against a tool's input schema (JSON Schema, as
//! the model APIs take it), with messages a model can act on.

use serde_json::Value;

/// Checks `value` against `schema`: `Ok`, or every problem found, each
/// naming the field at fault.
pub fn check(schema: &Value, value: &Value) -> Result<(), String> {
    // Not checked against the meta-schema: that costs milliseconds on the
    // first call of a process (every tool run is a new process), and a
    // broken schema still fails to build.
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| format!("the input schema itself is not valid JSON Schema: {e}"))?;
    let problems: Vec<String> = validator
        .iter_errors(value)
        .map(|e| {
            let at = e.instance_path().to_string();
            match at.trim_start_matches('/') {
                "" => e.to_string(),
                field => format!("`{}`: {e}", field.replace('/', ".")),
            }
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// Checks that `schema` is itself a valid JSON Schema (against its
/// meta-schema): `Ok`, or what is wrong.
pub fn check_schema(schema: &Value) -> Result<(), String> {
    jsonschema::meta::validate(schema).map_err(|e| e.to_string())?;
    jsonschema::validator_for(schema)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn problems_name_their_field() {
        let schema = json!({
            "type": "object",
            "properties": {"file_path": {"type": "string"}, "offset": {"type": "integer", "minimum": 1}},
            "required": ["file_path"]
        });
        assert!(check(&schema, &json!({"file_path": "a", "extra": 1})).is_ok());
        let missing = check(&schema, &json!({})).unwrap_err();
        assert!(missing.contains("file_path"), "{missing}");
        let mistyped = check(&schema, &json!({"file_path": "a", "offset": "x"})).unwrap_err();
        assert!(mistyped.starts_with("`offset`:"), "{mistyped}");
    }
}
