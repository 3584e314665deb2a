//! The knowledge layer: pinned scopes serialized as markdown
//! culture first — each
//! scope a heading with its text, then its members, instances before
//! relates; a member without `body.text` as key-value lines.

use serde_json::Value;
use substrate::{ChunkItem, PlacementType};

/// A pinned scope as read at the context event's `as_of`.
#[derive(Clone, Debug)]
pub struct Pinned {
    /// The scope's own chunk.
    pub scope: ChunkItem,
    /// Its members.
    pub members: Vec<ChunkItem>,
}

/// What a context event gives a request from the substrate: the scopes
/// it pins and the memory it names, each read as of its `as_of`.
#[derive(Clone, Debug, Default)]
pub struct Known {
    /// The pinned scopes, in order.
    pub pinned: Vec<Pinned>,
    /// The memory scopes (`memory`, `user-memory`).
    pub memory: Vec<Pinned>,
    /// A hermitcrab's shell: its blocks and constitution.
    pub shell: Option<crate::blocks::crab::Crab>,
}

/// The markdown of `pinned`, in order.
pub fn render(pinned: &[Pinned]) -> String {
    let mut out = String::from(
        "# Knowledge\n\nScopes of the substrate pinned for this session, as they stood when \
         the session's context was last read.",
    );
    for pin in pinned {
        let name = display_name(&pin.scope);
        out.push_str(&format!("\n\n# {name}\n"));
        if let Some(text) = pin.scope.body_value()["text"].as_str() {
            out.push('\n');
            out.push_str(text.trim_end());
            out.push('\n');
        }
        for kind in [PlacementType::Instance, PlacementType::Relates] {
            for member in pin.members.iter().filter(|m| {
                m.is_on(&pin.scope.id, kind)
                    && (kind == PlacementType::Instance
                        || !m.is_on(&pin.scope.id, PlacementType::Instance))
            }) {
                out.push_str(&format!(
                    "\n## {} ({})\n\n",
                    display_name(member),
                    kind.as_str()
                ));
                out.push_str(&summary(&member.body_value()));
                out.push('\n');
            }
        }
    }
    out
}

fn display_name(item: &ChunkItem) -> String {
    item.name.clone().unwrap_or_else(|| item.id.clone())
}

/// `body.text`, or the body's fields one a line.
fn summary(body: &Value) -> String {
    if let Some(text) = body["text"].as_str() {
        return text.trim_end().to_owned();
    }
    match body.as_object() {
        Some(fields) if !fields.is_empty() => fields
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("- {k}: {s}"),
                other => format!("- {k}: {other}"),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => "(empty)".to_owned(),
    }
}
