//! [`RawJson`]: JSON kept exactly as it arrived, so it goes back unchanged.

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;
use std::fmt;

/// A JSON value kept as its exact text.
///
/// Blocks the client does not model (every `*_tool_result`, blocks of types
/// it has never heard of), citations and tool inputs are kept this way, so
/// that replaying them to the API sends the very bytes the API sent.
///
/// Equality is semantic: two `RawJson` are equal when they hold the same
/// JSON value, whatever their whitespace or key order. Serialization always
/// writes the exact text.
#[derive(Clone)]
pub struct RawJson(Box<RawValue>);

impl RawJson {
    /// Checks that `text` is one JSON value and keeps it (without the
    /// whitespace around it).
    pub fn parse(text: &str) -> Result<RawJson, serde_json::Error> {
        RawValue::from_string(text.trim().to_owned()).map(RawJson)
    }

    /// The compact serialization of `value`.
    pub fn from_value(value: &serde_json::Value) -> RawJson {
        // Serializing a `Value` cannot fail: its keys are strings.
        match serde_json::value::to_raw_value(value) {
            Ok(raw) => RawJson(raw),
            Err(_) => RawJson::empty_object(),
        }
    }

    /// `{}`.
    pub fn empty_object() -> RawJson {
        // `{}` always parses; the fallback keeps the library free of panics.
        RawJson::parse("{}").unwrap_or_else(|_| RawJson(RawValue::NULL.to_owned()))
    }

    /// The exact JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// The value, parsed.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::from_str(self.get()).unwrap_or(serde_json::Value::Null)
    }

    /// Whether the text is a JSON object.
    pub fn is_object(&self) -> bool {
        self.get().starts_with('{')
    }

    /// The value of the object's top-level `key`, if any (exact text).
    pub fn field(&self, key: &str) -> Option<RawJson> {
        ordered_fields(self.get())
            .ok()?
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| RawJson(v))
    }

    /// This object with its top-level `key` set to `value` (or removed, for
    /// `None`): every other key keeps its place and exact text; a new key
    /// goes last.
    ///
    /// # Errors
    /// When this is not a JSON object.
    pub fn with_field(
        &self,
        key: &str,
        value: Option<&RawJson>,
    ) -> Result<RawJson, serde_json::Error> {
        let mut fields = ordered_fields(self.get())?;
        let at = fields.iter().position(|(k, _)| k == key);
        match (at, value) {
            (Some(i), Some(v)) => fields[i].1 = v.0.clone(),
            (Some(i), None) => {
                fields.remove(i);
            }
            (None, Some(v)) => fields.push((key.to_owned(), v.0.clone())),
            (None, None) => {}
        }
        let mut out = String::with_capacity(self.get().len() + key.len() + 16);
        out.push('{');
        for (i, (k, v)) in fields.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&serde_json::to_string(k)?);
            out.push(':');
            out.push_str(v.get());
        }
        out.push('}');
        RawJson::parse(&out)
    }
}

/// The top-level fields of a JSON object, in order, each value as exact text.
fn ordered_fields(text: &str) -> Result<Vec<(String, Box<RawValue>)>, serde_json::Error> {
    struct Fields;
    impl<'de> Visitor<'de> for Fields {
        type Value = Vec<(String, Box<RawValue>)>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some((k, v)) = map.next_entry::<String, Box<RawValue>>()? {
                out.push((k, v));
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let fields = de::Deserializer::deserialize_map(&mut de, Fields)?;
    de.end()?;
    Ok(fields)
}

impl PartialEq for RawJson {
    fn eq(&self, other: &RawJson) -> bool {
        self.get() == other.get() || self.to_value() == other.to_value()
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl fmt::Display for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RawJson, D::Error> {
        Box::<RawValue>::deserialize(d).map(RawJson)
    }
}

impl From<serde_json::Value> for RawJson {
    fn from(value: serde_json::Value) -> RawJson {
        RawJson::from_value(&value)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn keeps_exact_text_and_compares_by_value() {
        let a = RawJson::parse(r#" {"b": 1, "a": [1,2]} "#).unwrap();
        assert_eq!(a.get(), r#"{"b": 1, "a": [1,2]}"#);
        let b = RawJson::parse(r#"{"a":[1,2],"b":1}"#).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, RawJson::parse(r#"{"a":[1,2],"b":2}"#).unwrap());
        assert_eq!(serde_json::to_string(&a).unwrap(), a.get());
    }

    #[test]
    fn with_field_keeps_order_and_text() {
        let a = RawJson::parse(r#"{"z": 1, "type": "x", "input": {}}"#).unwrap();
        let input = RawJson::parse(r#"{"q": "é"}"#).unwrap();
        let b = a.with_field("input", Some(&input)).unwrap();
        assert_eq!(b.get(), r#"{"z":1,"type":"x","input":{"q": "é"}}"#);
        let c = a.with_field("new", Some(&input)).unwrap();
        assert!(c.get().ends_with(r#""new":{"q": "é"}}"#));
        assert_eq!(
            a.with_field("z", None).unwrap().get(),
            r#"{"type":"x","input":{}}"#
        );
        let list = RawJson::parse("[1]").unwrap();
        assert!(list.with_field("a", Some(&input)).is_err());
        assert_eq!(a.field("type").unwrap().get(), r#""x""#);
    }

    #[test]
    fn rejects_invalid_json() {
        assert!(RawJson::parse(r#"{"a": "#).is_err());
        assert!(RawJson::parse("").is_err());
    }
}
