//! Specs: the rules a scope puts on what is placed on it, and how the rules
//! in force on a scope are folded from its own spec and its templates.

use crate::error::Error;
use serde_json::Value;

/// One chunk's spec, parsed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Spec {
    /// Body fields every instance member must carry, not null.
    pub required: Vec<String>,
    /// Body fields whose values are unique across instance members.
    pub unique: Vec<String>,
    /// Types an instance member must be an instance of (one suffices).
    pub accepts: Option<Vec<String>>,
    /// Placements carry `seq` and reads list them in that order.
    pub ordered: bool,
    /// A template: binds the members of each chunk placed instance on this one.
    pub propagate: bool,
}

impl Spec {
    /// Parses a spec object. Unknown fields are allowed (a spec may carry
    /// notes for people); known fields must have their documented shape.
    pub fn parse(owner: &str, spec: &Value) -> Result<Spec, Error> {
        let Value::Object(map) = spec else {
            return Err(Error::Validation(format!(
                "spec of chunk `{owner}` must be a JSON object, got {}",
                kind_of(spec)
            )));
        };
        let list = |key: &str| -> Result<Option<Vec<String>>, Error> {
            match map.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|v| match v {
                        Value::String(s) => Ok(s.clone()),
                        other => Err(Error::Validation(format!(
                            "spec of chunk `{owner}`: `{key}` must list strings, found {}",
                            kind_of(other)
                        ))),
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(Some),
                Some(other) => Err(Error::Validation(format!(
                    "spec of chunk `{owner}`: `{key}` must be a list of strings, got {}",
                    kind_of(other)
                ))),
            }
        };
        let flag = |key: &str| -> Result<bool, Error> {
            match map.get(key) {
                None | Some(Value::Null) => Ok(false),
                Some(Value::Bool(b)) => Ok(*b),
                Some(other) => Err(Error::Validation(format!(
                    "spec of chunk `{owner}`: `{key}` must be true or false, got {}",
                    kind_of(other)
                ))),
            }
        };
        Ok(Spec {
            required: list("required")?.unwrap_or_default(),
            unique: list("unique")?.unwrap_or_default(),
            accepts: list("accepts")?,
            ordered: flag("ordered")?,
            propagate: flag("propagate")?,
        })
    }
}

/// The rules in force on a scope: its own spec (unless it is a template)
/// folded with every template it reaches up its instance chains.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ComposedSpec {
    /// Joined `required` lists.
    pub required: Vec<String>,
    /// Joined `unique` lists.
    pub unique: Vec<String>,
    /// Union of the declared `accepts` lists; `None` when none is declared.
    pub accepts: Option<Vec<String>>,
    /// True if any folded spec is ordered.
    pub ordered: bool,
}

impl ComposedSpec {
    /// Folds the scope's own spec with the specs of the chunks it is an
    /// instance of (directly or through chains). Only templates among the
    /// ancestors count; the scope's own spec counts unless it is a template.
    pub fn fold<'a>(own: &Spec, ancestors: impl IntoIterator<Item = &'a Spec>) -> ComposedSpec {
        let mut out = ComposedSpec::default();
        if !own.propagate {
            out.absorb(own);
        }
        for spec in ancestors {
            if spec.propagate {
                out.absorb(spec);
            }
        }
        out
    }

    fn absorb(&mut self, spec: &Spec) {
        push_unique(&mut self.required, &spec.required);
        push_unique(&mut self.unique, &spec.unique);
        if let Some(types) = &spec.accepts {
            push_unique(self.accepts.get_or_insert_with(Vec::new), types);
        }
        self.ordered |= spec.ordered;
    }

    /// True when the spec constrains nothing a placement must satisfy.
    pub fn is_unconstrained(&self) -> bool {
        self.required.is_empty() && self.unique.is_empty() && self.accepts.is_none()
    }
}

fn push_unique(into: &mut Vec<String>, from: &[String]) {
    for item in from {
        if !into.contains(item) {
            into.push(item.clone());
        }
    }
}

/// A short name for a JSON value's kind, for error messages ("an array").
pub fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(v: Value) -> Spec {
        Spec::parse("t", &v).unwrap()
    }

    #[test]
    fn a_template_does_not_bind_its_own_members() {
        let own = spec(json!({"propagate": true, "accepts": ["prompt"]}));
        assert!(ComposedSpec::fold(&own, []).accepts.is_none());
    }

    #[test]
    fn templates_fold_by_union_and_join() {
        let own = spec(json!({"required": ["a"]}));
        let t1 = spec(json!({"propagate": true, "accepts": ["x"], "required": ["b"]}));
        let t2 = spec(json!({"propagate": true, "ordered": true, "accepts": ["y", "x"]}));
        let plain = spec(json!({"accepts": ["z"], "required": ["c"]}));
        let c = ComposedSpec::fold(&own, [&t1, &t2, &plain]);
        assert_eq!(c.required, vec!["a", "b"]);
        assert_eq!(c.accepts, Some(vec!["x".to_owned(), "y".to_owned()]));
        assert!(c.ordered);
    }

    #[test]
    fn malformed_specs_are_named() {
        let e = Spec::parse("s_1", &json!({"required": "text"})).unwrap_err();
        assert!(
            e.message().contains("s_1") && e.message().contains("required"),
            "{e}"
        );
        assert!(Spec::parse("s_1", &json!([1])).is_err());
        assert!(Spec::parse("s_1", &json!({"ordered": "yes"})).is_err());
    }
}
