//! The table of built-ins: each program's chunks describe it as a tool
//! the agent can offer — a name, a description, an input type whose schema
//! is a JSON Schema object — and the capabilities it declares are the
//! ones its work needs.

use protocol::program::ProgramBody;

#[test]
fn every_builtin_is_a_program_with_a_typed_input() {
    for builtin in programs::BUILTINS {
        let chunks = (builtin.chunks)();
        let program = chunks
            .iter()
            .find(|c| c.id.as_deref() == Some(&format!("program/{}", builtin.name)))
            .unwrap_or_else(|| panic!("{} has no program chunk", builtin.name));
        let body = ProgramBody::parse(builtin.name, program.body.as_ref().unwrap()).unwrap();
        assert!(!body.text.is_empty(), "{} has no description", builtin.name);
        let input_type = body.input_type.clone().unwrap();
        let input = chunks
            .iter()
            .find(|c| c.id.as_deref() == Some(input_type.as_str()))
            .unwrap_or_else(|| panic!("{} has no `{input_type}` chunk", builtin.name));
        let schema = &input.body.as_ref().unwrap()["schema"];
        assert_eq!(schema["type"], "object", "{}", builtin.name);
        assert!(
            protocol::schema::check(schema, &serde_json::json!({})).is_err()
                || schema["required"].as_array().is_none_or(Vec::is_empty),
            "{}: an empty input passes only when nothing is required",
            builtin.name
        );
    }
}

#[test]
fn the_read_only_tools_change_nothing_and_may_run_together() {
    for builtin in programs::BUILTINS {
        let chunks = (builtin.chunks)();
        let program = &chunks[0];
        let body = ProgramBody::parse(builtin.name, program.body.as_ref().unwrap()).unwrap();
        let read_only = ["read", "glob", "grep", "web-fetch", "echo"].contains(&builtin.name);
        if read_only {
            assert!(body.read_only, "{} is read-only", builtin.name);
            assert!(
                body.capabilities.filesystem.write.is_empty(),
                "{} writes",
                builtin.name
            );
        }
        if ["write", "edit", "shell"].contains(&builtin.name) {
            assert!(!body.read_only, "{} changes things", builtin.name);
            assert!(!body.concurrency_safe, "{} runs alone", builtin.name);
        }
    }
}
