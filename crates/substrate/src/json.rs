//! [`Json`]: a JSON value kept as its serialized text.
//!
//! Chunk bodies and specs travel from SQLite to the wire without being
//! parsed: a scope read of a thousand members copies text, it does not build
//! a thousand trees. Callers that need the structure call [`Json::to_value`].

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;
use std::fmt;

/// A JSON value held as text. Equality compares the parsed values, so key
/// order and whitespace do not matter.
#[derive(Clone)]
pub struct Json(Box<RawValue>);

impl Json {
    /// The empty object `{}`.
    pub fn empty_object() -> Json {
        Json::from_text_unchecked("{}".to_owned())
    }

    /// Serializes `value` (canonically: serde_json orders object keys).
    pub fn from_value(value: &Value) -> Json {
        Json::from_text_unchecked(value.to_string())
    }

    /// Wraps text that is already valid JSON (it came from serde_json or from
    /// the store, which only ever holds serde_json's output).
    pub(crate) fn from_text_unchecked(text: String) -> Json {
        match RawValue::from_string(text) {
            Ok(raw) => Json(raw),
            // Unreachable for text serde_json produced; degrade rather than panic.
            Err(_) => Json(RawValue::NULL.to_owned()),
        }
    }

    /// Parses `text`, failing when it is not JSON.
    pub fn parse(text: &str) -> Result<Json, serde_json::Error> {
        RawValue::from_string(text.to_owned()).map(Json)
    }

    /// The serialized text.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    /// The parsed value.
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.0.get()).unwrap_or(Value::Null)
    }

    /// Deserializes into any type.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.0.get())
    }
}

impl Default for Json {
    fn default() -> Self {
        Json::empty_object()
    }
}

impl PartialEq for Json {
    fn eq(&self, other: &Json) -> bool {
        self.as_str() == other.as_str() || self.to_value() == other.to_value()
    }
}

impl PartialEq<Value> for Json {
    fn eq(&self, other: &Value) -> bool {
        &self.to_value() == other
    }
}

impl fmt::Debug for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<Value> for Json {
    fn from(value: Value) -> Json {
        Json::from_value(&value)
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(Json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equality_ignores_key_order_and_whitespace() {
        let a = Json::parse(r#"{"a":1, "b":[2]}"#).unwrap();
        let b = Json::parse(r#"{"b":[2],"a":1}"#).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, Json::from_value(&json!({"a": 2, "b": [2]})));
    }

    #[test]
    fn round_trips_through_serde_verbatim() {
        let j = Json::parse(r#"{"x":"y"}"#).unwrap();
        let s = serde_json::to_string(&vec![j]).unwrap();
        assert_eq!(s, r#"[{"x":"y"}]"#);
    }
}
