//! The knowledge layer: pinned scopes as markdown in the system prompt,
//! each scope a heading with its text, then its members — instances
//! before relates, a member without text as its fields.

use agent::sources::knowledge::{Pinned, render};
use serde_json::{Value, json};
use substrate::{ChunkItem, Json, Placement, PlacementType};

fn item(id: &str, name: Option<&str>, body: Value, on: &[(&str, PlacementType)]) -> ChunkItem {
    ChunkItem {
        id: id.into(),
        name: name.map(str::to_owned),
        spec: Json::from_value(&json!({})),
        body: Some(Json::from_value(&body)),
        placements: on
            .iter()
            .map(|(scope, kind)| Placement {
                scope: (*scope).into(),
                kind: *kind,
                seq: None,
            })
            .collect(),
    }
}

#[test]
fn pinned_scopes_render_in_order_with_their_members() {
    use PlacementType::{Instance, Relates};
    let culture = Pinned {
        scope: item(
            "culture",
            Some("culture"),
            json!({"text": "Tests first.\n"}),
            &[],
        ),
        members: vec![],
    };
    let notes = Pinned {
        scope: item("notes", Some("Design notes"), json!({}), &[]),
        members: vec![
            item(
                "r",
                Some("linked"),
                json!({"text": "see also"}),
                &[("notes", Relates)],
            ),
            item(
                "i",
                Some("decision"),
                json!({"owner": "ana", "due": 3}),
                &[("notes", Instance)],
            ),
        ],
    };
    let text = render(&[culture, notes]);
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} in {text}"))
    };
    assert!(text.starts_with("# Knowledge"));
    assert!(at("# culture\n\nTests first.\n") < at("# Design notes"));
    // Instances before relates; a member without text shows its fields.
    assert!(at("## decision (instance)") < at("## linked (relates)"));
    assert!(text.contains("- due: 3\n- owner: ana"), "{text}");
    assert!(text.contains("## linked (relates)\n\nsee also"), "{text}");
}
