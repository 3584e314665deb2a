//! What the agent knows from files (`design/knowledge.md`, "Instructions"):
//! `AGENTS.md` (else `CLAUDE.md`) from the root down to the working
//! directory, closer later, the user's first; `@path` imports with notes
//! for what is refused; the git facts in the environment; every request
//! rebuilt byte for byte, also after the files change.

use crate::common::*;
use serde_json::{Value, json};

fn git(root: &std::path::Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(root)
        .output()
        .unwrap();
    assert!(ok.status.success(), "git {args:?}: {ok:?}");
}

/// The first system block of request `n` the fake received.
fn system(s: &Setup, n: usize) -> String {
    let body: Value = serde_json::from_slice(&s.sent()[n]).unwrap();
    body["system"][0]["text"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn instructions_are_read_up_the_tree_with_imports_and_the_git_facts() {
    let s = Setup::bare(json!({"turns": [
        reply(json!([text("one")]), "end_turn"),
        reply(json!([text("two")]), "end_turn"),
    ]}))
    .await;
    git(&s.root, &["init", "-q", "-b", "trunk"]);
    s.file("AGENTS.md", "ROOT RULES\nSee @docs/style.md and @missing.md and @../outside.md\n```\n@not/an/import.md\n```\n");
    s.file("docs/style.md", "STYLE GUIDE\n@../AGENTS.md\n");
    s.file("CLAUDE.md", "IGNORED: AGENTS.md wins in its directory");
    s.file("app/CLAUDE.md", "APP RULES");
    s.file("app/core/AGENTS.md", "CORE RULES");
    s.file(".no-user-config/hermitcrab/AGENTS.md", "USER RULES");
    std::fs::write(s.root.join("app/CLAUDE.md"), b"APP RULES \xff\n").unwrap();
    git(&s.root, &["add", "."]);
    git(&s.root, &["commit", "-q", "-m", "first commit title"]);
    s.file("app/core/changed.txt", "new");
    let mut hc = s.hc(&["run", "what now"]);
    hc.current_dir(s.root.join("app/core"));
    let out = hc.output().await.unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = system(&s, 0);
    let order: Vec<usize> = [
        "USER RULES",
        "ROOT RULES",
        "STYLE GUIDE",
        "APP RULES",
        "CORE RULES",
    ]
    .iter()
    .map(|t| {
        text.find(t)
            .unwrap_or_else(|| panic!("{t} missing from:\n{text}"))
    })
    .collect();
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "order {order:?}:\n{text}"
    );
    assert!(!text.contains("IGNORED"), "{text}");
    assert!(text.contains("this file is not UTF-8"), "{text}");
    assert!(
        text.contains("@missing.md not imported: there is no such file"),
        "{text}"
    );
    assert!(text.contains("@../outside.md not imported"), "{text}");
    assert!(
        text.contains("@../AGENTS.md not imported: it imports itself (a cycle)"),
        "{text}"
    );
    assert!(
        !text.contains("@not/an/import.md not imported"),
        "a fenced line is not an import"
    );
    assert!(text.contains("Git branch: trunk"), "{text}");
    assert!(text.contains("?? app/core/changed.txt"), "{text}");
    assert!(text.contains("first commit title"), "{text}");
    // rebuilt exactly, also once the files on disk changed
    s.file("app/core/AGENTS.md", "CORE RULES, CHANGED");
    let session = s.sessions().pop().unwrap();
    assert_eq!(s.rebuilt(&session, 1).await, s.sent()[0]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_file_is_a_prompt_with_its_arguments_its_shell_lines_and_its_model() {
    let s = Setup::new(json!({"turns": [
        reply(json!([text("reviewed")]), "end_turn"),
        reply(json!([text("unused")]), "end_turn"),
    ]}))
    .await;
    s.file(
        ".claude/commands/review.md",
        "---\ndescription: Review a file\nargument-hint: FILE FOCUS\nallowed-tools: shell(wc -l:*)\nmodel: claude-opus-4-6\n---\nReview $1, mostly $2 (all: $ARGUMENTS).\nIts size:\n!`wc -l notes.txt`\n",
    );
    s.file(
        ".hermitcrab/commands/git/risky.md",
        "Then:\n!`rm -rf build`\n",
    );
    s.file(
        ".hermitcrab/commands/broken.md",
        "---\ndescription: never closed\n",
    );
    s.file("notes.txt", "a\nb\nc\n");
    // not trusted yet: the command's allowed tools are not applied, and its
    // ! line is refused
    let untrusted = s.run(&["/review notes.txt naming"]).await;
    assert_eq!(untrusted.code, 1, "{untrusted:#?}");
    assert!(
        untrusted
            .stderr
            .contains("not applied, as this project is not trusted"),
        "{}",
        untrusted.stderr
    );
    s.trust();
    let ran = s.run(&["/review notes.txt naming"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(
        ran.stderr.contains("broken.md") && ran.stderr.contains("no closing"),
        "{}",
        ran.stderr
    );
    let session = s.sessions().pop().unwrap();
    let prompt = s.of_type(&session, "prompt")[0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        prompt.starts_with(
            "Review notes.txt, mostly naming (all: notes.txt naming).\nIts size:\n3 notes.txt"
        ),
        "{prompt}"
    );
    let sent: Value = serde_json::from_slice(&s.sent()[0]).unwrap();
    assert_eq!(sent["model"], "claude-opus-4-6");
    assert_eq!(
        processes_of(&s, "shell").len(),
        1,
        "the ! line was a shell run"
    );
    // a ! line the permissions do not allow stops the command before any run
    std::fs::create_dir(s.root.join("build")).unwrap();
    let ran = s.run(&["/git:risky"]).await;
    assert_eq!(ran.code, 1, "{ran:#?}");
    assert!(
        ran.stderr
            .contains("/git:risky runs `rm -rf build`, which is not allowed"),
        "{}",
        ran.stderr
    );
    assert!(s.root.join("build").exists());
    assert_eq!(s.sent().len(), 1, "no model call");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_skill_is_listed_loaded_on_demand_and_its_allowed_tool_is_not_asked() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "skill", json!({"name": "release"}))]), "tool_use"),
        reply(json!([call("t2", "shell", json!({"command": "echo shipped > shipped.txt"}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    s.file(
        ".claude/skills/release/SKILL.md",
        "---\nname: release\ndescription: Ships a release of the project\nallowed-tools: shell(echo:*)\n---\nStep one: write shipped.txt.\n",
    );
    s.file(".claude/skills/release/checklist.md", "- tag\n");
    s.file(".hermitcrab/skills/release/SKILL.md", "---\nname: release\ndescription: The project's own release\nallowed-tools: [shell(echo:*), write(shipped.txt)]\n---\nStep one: write shipped.txt.\n");
    s.file(".hermitcrab/skills/broken/SKILL.md", "---\nname: broken\n");
    s.trust();
    let ran = s.run(&["ship it"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(
        ran.stderr.contains("broken/SKILL.md") && ran.stderr.contains("no closing"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr
            .contains("a skill named `release` was found first elsewhere"),
        "{}",
        ran.stderr
    );
    let first: Value = serde_json::from_slice(&s.sent()[0]).unwrap();
    let text = first["system"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("# Skills") && text.contains("- release: The project's own release"),
        "{text}"
    );
    assert!(
        first["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "skill")
    );
    let session = s.sessions().pop().unwrap();
    let results = s.of_type(&session, "tool-result");
    let loaded = results[0]["text"].as_str().unwrap();
    assert!(
        loaded.starts_with("Step one: write shipped.txt."),
        "{loaded}"
    );
    // the skill's allowed tool ran without asking (no one could answer)
    assert_eq!(results[1]["is_error"], false, "{}", results[1]);
    assert!(s.root.join("shipped.txt").exists());
    for n in 1..=3 {
        assert_eq!(s.rebuilt(&session, n).await, s.sent()[n - 1], "request {n}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_json_init_lists_the_commands_skills_and_agents() {
    let s = Setup::new(json!({"turns": [reply(json!([text("ok")]), "end_turn")]})).await;
    s.file(".claude/commands/review.md", "Review $1\n");
    s.file(
        ".claude/agents/tester.md",
        "---\nname: tester\ndescription: Runs tests\n---\nYou test.\n",
    );
    s.file(
        ".claude/skills/release/SKILL.md",
        "---\ndescription: Ships\n---\nShip.\n",
    );
    let ran = s.run(&["--output-format", "stream-json", "hi"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let init: Value = serde_json::from_str(ran.stdout.lines().next().unwrap()).unwrap();
    let has = |key: &str, name: &str| init[key].as_array().unwrap().contains(&json!(name));
    assert!(
        has("slash_commands", "review") && has("slash_commands", "compact"),
        "{init}"
    );
    assert!(has("skills", "release"), "{init}");
    assert!(has("agents", "agent"), "{init}");
    assert!(has("agents", "tester"), "a custom agent: {init}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_scope_the_model_pinned_is_still_known_in_the_sessions_next_run() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("p1", "scope", json!({"ids": ["engine/program"]}))]), "tool_use"),
        reply(json!([text("pinned")]), "end_turn"),
        reply(json!([text("still known")]), "end_turn"),
    ]}))
    .await;
    let first = s.run(&["look at the programs"]).await;
    assert_eq!(first.code, 0, "{first:#?}");
    let knows = |n: usize| {
        let body: Value = serde_json::from_slice(&s.sent()[n]).unwrap();
        body["system"].to_string().contains("# engine/program")
    };
    assert!(
        !knows(0) && knows(1),
        "pinned from the call after the scope read"
    );
    let next = s.run(&["--continue", "and now?"]).await;
    assert_eq!(next.code, 0, "{next:#?}");
    assert!(knows(2), "the pin carried into the next run");
    let session = s.sessions().pop().unwrap();
    assert_eq!(s.rebuilt(&session, 3).await, s.sent()[2]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sub_agent_starts_knowing_what_its_parent_pinned() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("a", "agent", json!({"text": "CHILD task"}))]), "tool_use"),
        when("CHILD task", json!([text("child done")]), "end_turn"),
        reply(json!([text("parent done")]), "end_turn"),
    ]}))
    .await;
    s.commit(
        json!({"chunks": [{"id": "house-rules", "name": "house-rules",
        "body": {"text": "Always answer in haiku."}}]}),
    )
    .await;
    let ran = s.run(&["--context", "house-rules", "delegate"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let child = requests_with(&s, "CHILD task");
    assert_eq!(child.len(), 1);
    assert!(
        child[0]["system"]
            .to_string()
            .contains("Always answer in haiku."),
        "{}",
        child[0]["system"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn hc_config_lists_the_instruction_files_skills_agents_and_commands_found() {
    let s = Setup::new(json!({"turns": [reply(json!([text("unused")]), "end_turn")]})).await;
    s.file("AGENTS.md", "rules");
    s.file(
        ".claude/commands/review.md",
        "---\ndescription: Review a file\n---\nReview $1\n",
    );
    s.file(
        ".claude/skills/release/SKILL.md",
        "---\ndescription: Ships\n---\nShip.\n",
    );
    s.file(
        ".claude/skills/broken/SKILL.md",
        "---\ndescription: never closed\n",
    );
    s.file(
        ".claude/agents/tester.md",
        "---\nname: tester\ndescription: Runs the tests\n---\nYou run tests.\n",
    );
    let ran = s.out(&["config", "--json"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let rows: Value = serde_json::from_str(&ran.stdout).unwrap();
    let row = |name: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {rows}"))
    };
    assert!(
        row("instructions")["source"]
            .as_str()
            .unwrap()
            .ends_with("/AGENTS.md")
    );
    assert_eq!(row("skills.release")["value"], "Ships");
    assert_eq!(row("commands.review")["value"], "Review a file");
    assert_eq!(row("agents.tester")["value"], "Runs the tests");
    assert!(
        row("agents.tester")["source"]
            .as_str()
            .unwrap()
            .ends_with(".claude/agents/tester.md")
    );
    assert!(
        row("skipped")["value"]
            .as_str()
            .unwrap()
            .contains("broken/SKILL.md")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_custom_agent_runs_with_its_prompt_its_tools_and_its_model() {
    let s = Setup::new(json!({"turns": [
        reply(json!([
            call("u", "agent", json!({"text": "NOBODY task", "subagent_type": "nobody"})),
            call("a", "agent", json!({"text": "REVIEW task", "subagent_type": "reviewer"})),
        ]), "tool_use"),
        when("REVIEW task", json!([text("looks fine")]), "end_turn"),
        reply(json!([text("parent done")]), "end_turn"),
    ]}))
    .await;
    s.file(
        ".claude/agents/reviewer.md",
        "---\nname: reviewer\ndescription: Reviews code for bugs\ntools: Read, Grep\nmodel: haiku\n---\nYou are a careful reviewer.\n",
    );
    let ran = s.run(&["review it"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let sent: Vec<Value> = s
        .sent()
        .iter()
        .map(|b| serde_json::from_slice(b).unwrap())
        .collect();
    let agent_tool = sent[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "agent")
        .unwrap();
    assert!(
        agent_tool["description"]
            .as_str()
            .unwrap()
            .contains("- reviewer: Reviews code for bugs"),
        "{agent_tool}"
    );
    let child = sent
        .iter()
        .find(|b| b["messages"][0].to_string().contains("REVIEW task"))
        .unwrap();
    // (`haiku`, as agent files name models: today's Haiku)
    assert_eq!(child["model"], "claude-haiku-5-5");
    assert!(
        child["system"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("You are a careful reviewer."),
        "{}",
        child["system"]
    );
    let tools: Vec<&str> = child["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        tools.contains(&"read") && tools.contains(&"grep"),
        "{tools:?}"
    );
    assert!(
        !tools.contains(&"shell") && !tools.contains(&"write"),
        "{tools:?}"
    );
    let session = s.sessions().pop().unwrap();
    let results = s.of_type(&session, "tool-result");
    let unknown = results.iter().find(|r| r["tool_use_id"] == "u").unwrap();
    assert!(
        unknown["text"]
            .as_str()
            .unwrap()
            .contains("no custom agent `nobody`; the custom agents are: reviewer"),
        "{unknown}"
    );
    // the definition is recorded on the sub-agent's process
    let config: Vec<Value> = s
        .db()
        .scope(
            &["agent-config"],
            &substrate::ScopeOpts {
                kind: substrate::TypeFilter::Instance,
                ..Default::default()
            },
        )
        .unwrap()
        .chunks
        .iter()
        .map(|c| c.body_value())
        .filter(|b| b["agent_type"] == "reviewer")
        .collect();
    assert_eq!(config.len(), 1);
    assert_eq!(config[0]["tools"], json!(["read", "grep"]));
}

#[tokio::test(flavor = "multi_thread")]
async fn in_chat_tab_completes_a_command_file_which_runs_with_its_arguments() {
    use crate::terminal::*;
    let s = Setup::new(json!({"turns": [reply(json!([text("Reviewed.")]), "end_turn")]})).await;
    s.file(
        ".claude/commands/review-file.md",
        "---\ndescription: Review\n---\nPlease review $1.\n",
    );
    let (code, shown) = in_terminal(
        &s,
        "chat",
        &[],
        vec![
            (always(), b"/review-f\t notes.txt\r"),
            (runs_ended(1), b"\x03"),
            (always(), b"\x03"),
        ],
    )
    .await;
    assert_eq!(code, 0, "{shown}");
    let session = s.sessions().pop().unwrap();
    let prompt = &s.of_type(&session, "prompt")[0];
    assert_eq!(prompt["text"], "Please review notes.txt.", "{shown}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_untrusted_projects_skill_grants_nothing() {
    let s = Setup::new(json!({"turns": [
        reply(json!([call("t1", "skill", json!({"name": "release"}))]), "tool_use"),
        reply(json!([call("t2", "shell", json!({"command": "echo shipped"}))]), "tool_use"),
        reply(json!([text("done")]), "end_turn"),
    ]}))
    .await;
    s.file(
        ".claude/skills/release/SKILL.md",
        "---\ndescription: Ships\nallowed-tools: shell(echo:*)\n---\nShip it.\n",
    );
    let ran = s.run(&["ship it"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert!(
        ran.stderr
            .contains("the skill `release` allowing shell(echo:*)"),
        "{}",
        ran.stderr
    );
    let session = s.sessions().pop().unwrap();
    let results = s.of_type(&session, "tool-result");
    assert!(
        results[0]["text"].as_str().unwrap().contains("not applied"),
        "{}",
        results[0]
    );
    assert_eq!(results[1]["denied"], true, "{}", results[1]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_repository_whose_config_runs_commands_gets_no_git_status_unasked() {
    let s = Setup::bare(json!({"turns": [reply(json!([text("ok")]), "end_turn")]})).await;
    git(&s.root, &["init", "-q", "-b", "main"]);
    git(&s.root, &["config", "core.fsmonitor", "./watch.sh"]);
    s.file("new.txt", "x");
    let ran = s.run(&["hi"]).await;
    assert_eq!(ran.code, 0, "{ran:#?}");
    let text = system(&s, 0);
    assert!(text.contains("Git branch: main"), "{text}");
    assert!(
        text.contains("(not read: this repository's configuration names a command git would run)"),
        "{text}"
    );
    assert!(!text.contains("?? new.txt"), "{text}");
}
