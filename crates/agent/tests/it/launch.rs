//! How a host starts the agent: the session it makes, the scopes a run
//! pins, and the run's arguments and boundaries.

use agent::AgentConfig;
use agent::launch::{Launch, new_session, pins_of, title};
use protocol::Boundary;
use serde_json::json;
use substrate::{ChunkItem, Json, ScopeResult};

fn scope(body: serde_json::Value, members: usize) -> ScopeResult {
    let item = |id: &str, body: &serde_json::Value| {
        std::sync::Arc::new(ChunkItem {
            id: id.into(),
            name: None,
            spec: Json::from_value(&json!({})),
            body: Some(Json::from_value(body)),
            placements: Vec::new(),
        })
    };
    ScopeResult {
        scopes: vec![item("culture", &body)],
        chunks: (0..members)
            .map(|n| item(&format!("c_{n}"), &json!({})))
            .collect(),
        total: members as u64,
        next_after: None,
        topology: Vec::new(),
        dimensions: None,
        as_of: 1,
        foreign: Vec::new(),
    }
}

#[test]
fn a_session_is_titled_by_the_prompts_first_line() {
    assert_eq!(
        title("\n  fix the failing test  \nin src/lib.rs"),
        "fix the failing test"
    );
    let long = "x".repeat(100);
    assert_eq!(title(&long), format!("{}…", "x".repeat(80)));
    let (id, declaration) = new_session("hello\nworld");
    assert!(id.starts_with("s_"));
    let chunk = &declaration.chunks[0];
    assert_eq!(chunk.id.as_deref(), Some(id.as_str()));
    assert_eq!(chunk.body.as_ref().unwrap()["title"], "hello");
    assert!(
        chunk.body.as_ref().unwrap()["created"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    assert_eq!(chunk.placements[0].scope, "session");
}

#[test]
fn culture_is_pinned_first_when_it_has_anything() {
    let exists = |id: &str| id != "missing";
    let given = vec!["notes".to_owned(), "notes".to_owned(), "plan".to_owned()];
    let empty = scope(json!({}), 0);
    assert_eq!(
        pins_of(Some(&empty), &given, exists).unwrap(),
        ["notes", "plan"]
    );
    let with_text = scope(json!({"text": "We write tests first."}), 0);
    assert_eq!(
        pins_of(Some(&with_text), &given, exists).unwrap(),
        ["culture", "notes", "plan"]
    );
    let with_members = scope(json!({}), 2);
    assert_eq!(
        pins_of(Some(&with_members), &[], exists).unwrap(),
        ["culture"]
    );
    assert_eq!(pins_of(None, &[], exists).unwrap(), Vec::<String>::new());
    let missing = pins_of(None, &["missing".to_owned()], exists).unwrap_err();
    assert!(missing.contains("--context missing"), "{missing}");
}

#[test]
fn a_run_reads_its_session_the_programs_and_its_pins_and_writes_its_session() {
    let config = AgentConfig {
        model: "claude-sonnet-4-5".into(),
        ..AgentConfig::default()
    };
    let pins = vec!["culture".to_owned()];
    let launch = Launch {
        session: "s_1",
        prompt: "go",
        images: &[],
        config: &config,
        pins: &pins,
        uuid: None,
    };
    let (before, args) = launch.plan();
    // Pinned scopes relate on a context event committed first; the run
    // takes that event as an argument.
    let before = before.unwrap();
    let event = before.chunks[0].id.clone().unwrap();
    assert_eq!(before.placements[0].chunk, "culture");
    assert_eq!(before.placements[0].scope, event);
    assert_eq!(args.chunks[1].id.as_deref(), Some(event.as_str()));
    assert_eq!(
        args.chunks[0].body.as_ref().unwrap(),
        &json!({"text": "go"})
    );
    let placed: Vec<&str> = args.chunks[0]
        .placements
        .iter()
        .map(|p| p.scope.as_str())
        .collect();
    assert_eq!(placed, ["prompt", "s_1"]);
    assert_eq!(
        AgentConfig::parse(args.chunks[2].body.as_ref().unwrap()).unwrap(),
        config
    );
    // It reads where the substrate was made (what in it is not trusted),
    // the files requests were given and the memory too, and
    // writes them (memory is on by default).
    assert_eq!(
        args.read_boundary,
        Some(Boundary::Roots(vec![
            "s_1".into(),
            "engine/program".into(),
            "engine/origin".into(),
            "culture".into(),
            "knowledge-file".into(),
            "memory".into(),
            "user-memory".into(),
        ]))
    );
    assert_eq!(
        args.write_boundary,
        Some(Boundary::Roots(vec![
            "s_1".into(),
            "knowledge-file".into(),
            "memory".into(),
            "user-memory".into(),
        ]))
    );
    let off = AgentConfig {
        memory: false,
        ..config.clone()
    };
    let (_, args) = Launch {
        config: &off,
        ..launch
    }
    .plan();
    assert_eq!(
        args.write_boundary,
        Some(Boundary::Roots(vec!["s_1".into(), "knowledge-file".into()]))
    );
    assert_eq!(args.session.as_deref(), Some("s_1"));
}
