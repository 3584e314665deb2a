//! What a page user's frames on the page's socket may ask, by their role
//! (decision 19, [`crate::auth::Role`]): reading and following is a
//! viewer's; answering a run's question an answerer's; interrupting,
//! cancelling and messaging a session an operator's; running a program
//! directly — through the server's person's permission rules, an agent's
//! settings never wider than theirs — declaring programs and anything
//! else the owner's. What passes is signed as the person's: every answer
//! names them, every message is from them, whatever the frame said.

use crate::App;
use crate::auth::{Person, Role, article};
use protocol::{ErrorBody, ErrorCode, Op, Request};
use serde_json::{Value, json};
use substrate::{ChunkDecl, Declaration};

/// The types whose chunks say who answered (`by`): a permission
/// decision, an answer to the agent's question.
const ANSWERS: [&str; 2] = ["permission-decision", "user-answer"];

/// The types an operator may commit besides answers: an interrupt, a
/// message to a session.
const STEERS: [&str; 2] = ["interrupt", "message"];

/// The line `frame` becomes for the engine (judged, signed), or the error
/// frame that answers it instead.
pub fn judge(app: &App, person: &Person, frame: &str) -> Result<String, String> {
    let parsed = serde_json::from_str::<Value>(frame)
        .ok()
        .and_then(|v| Request::parse(v.to_string().as_bytes()).ok());
    // (what is no request goes on as it is: the engine says what is wrong)
    let Some(mut request) = parsed else {
        return Ok(crate::socket::one_line(frame));
    };
    let needed = match &mut request.op {
        Op::Scope { .. } | Op::Subscribe { .. } | Op::Unsubscribe { .. } | Op::Await { .. } => {
            Role::Viewer
        }
        Op::Cancel { .. } => Role::Operator,
        Op::Commit { declaration } => {
            let needed = needed_to_commit(declaration, &|scope| where_asked(app, scope));
            sign(declaration, &person.name);
            needed
        }
        Op::Run { program, args } => {
            if person.role == Role::Owner
                && let Err(why) = within_rules(app, program, args)
            {
                return Err(refusal(request.id, ErrorCode::BoundaryViolation, &why));
            }
            Role::Owner
        }
        _ => Role::Owner,
    };
    if person.role < needed {
        let why = format!(
            "{} signed in as {}; this needs {}",
            person.name,
            article(person.role),
            article(needed)
        );
        return Err(refusal(request.id, ErrorCode::BoundaryViolation, &why));
    }
    let mut line = serde_json::to_string(&request).unwrap_or_default();
    line.push('\n');
    Ok(line)
}

/// The role a declaration needs: answering (answers only) an answerer's,
/// steering (interrupts, messages) an operator's, anything else the
/// owner's. An answer or a steer is a new chunk with nothing but a body,
/// placed on its kind and on the one session or run it is for
/// (`where_asked` says whether a scope is one) — nothing else.
fn needed_to_commit(declaration: &Declaration, where_asked: &dyn Fn(&str) -> bool) -> Role {
    let only = |kinds: &[&str]| {
        declaration.placements.is_empty()
            && declaration.remove.chunks.is_empty()
            && declaration.remove.placements.is_empty()
            && !declaration.chunks.is_empty()
            && (declaration.chunks.iter()).all(|c| is_of(c, kinds, where_asked))
    };
    if only(&ANSWERS) {
        Role::Answerer
    } else if only(&[ANSWERS[0], ANSWERS[1], STEERS[0], STEERS[1]]) {
        Role::Operator
    } else {
        Role::Owner
    }
}

/// Whether `chunk` is one of `kinds` and no more: new, a body alone,
/// placed (instance) on its kind and on one session or run.
fn is_of(chunk: &ChunkDecl, kinds: &[&str], where_asked: &dyn Fn(&str) -> bool) -> bool {
    let [a, b] = chunk.placements.as_slice() else {
        return false;
    };
    let plain = chunk.id.is_none() && chunk.name.is_none() && chunk.spec.is_none() && !chunk.merge;
    let instance = |p: &substrate::NewPlacement| p.kind == substrate::PlacementType::Instance;
    let kind_and_place = |kind: &substrate::NewPlacement, place: &substrate::NewPlacement| {
        kinds.contains(&kind.scope.as_str()) && where_asked(&place.scope)
    };
    plain && instance(a) && instance(b) && (kind_and_place(a, b) || kind_and_place(b, a))
}

/// Whether `scope` is a session or a run's process (where a question is
/// asked, a message or an interrupt goes).
fn where_asked(app: &App, scope: &str) -> bool {
    let db = app.engine.db();
    db.read(|snap| {
        Ok::<_, substrate::Error>(
            snap.is_instance_of(scope, "session")?
                || snap.is_instance_of(scope, "engine/process")?,
        )
    })
    .unwrap_or(false)
}

/// Signs what the page commits as `person`'s: an answer's `by`, a
/// message's sender (the fields a sender may not set taken out).
fn sign(declaration: &mut Declaration, person: &str) {
    let by = Value::from(format!("{person} (the page)"));
    for chunk in &mut declaration.chunks {
        let answers = chunk
            .placements
            .iter()
            .any(|p| ANSWERS.contains(&p.scope.as_str()));
        let message = chunk.placements.iter().any(|p| p.scope == STEERS[1]);
        let says = chunk.body.as_ref().is_some_and(|b| b.get("by").is_some());
        let body = chunk.body.get_or_insert_with(|| json!({}));
        let Some(fields) = body.as_object_mut() else {
            continue;
        };
        if answers || says {
            fields.insert("by".into(), by.clone());
        }
        if message {
            for field in ["to", "relayed_from", "delivered", "undelivered", "sender"] {
                fields.remove(field);
            }
            fields.insert("from".into(), by.clone());
            fields.insert("sender".into(), json!({"person": person, "via": "page"}));
        }
    }
}

/// Whether the server's person's rules let the page run `program` as
/// `args` says; an agent it starts gets settings no wider than theirs.
fn within_rules(app: &App, program: &str, args: &mut protocol::RunArgs) -> Result<(), String> {
    let engine = &app.engine;
    let read = engine
        .scope(
            &engine::Context::host(),
            &["engine/program".to_owned()],
            &protocol::ScopeOpts {
                kind: substrate::TypeFilter::Instance,
                limit: Some(usize::MAX),
                ..protocol::ScopeOpts::default()
            },
        )
        .map_err(|e| e.to_string())?;
    let found = read
        .chunks
        .iter()
        .find(|c| c.id == program || c.name.as_deref() == Some(program));
    let Some(found) = found else {
        return Err(format!("no program `{program}`"));
    };
    let name = found.name.clone().unwrap_or_else(|| found.id.clone());
    let body = protocol::program::ProgramBody::parse(&name, &found.body_value())?;
    for chunk in &mut args.chunks {
        let configures = chunk.placements.iter().any(|p| p.scope == "agent-config");
        if let (true, Some(given)) = (configures, chunk.body.as_mut()) {
            let asked = agent::AgentConfig::parse(given).map_err(|e| e.to_string())?;
            *given = serde_json::to_value(asked.within(&app.config)).map_err(|e| e.to_string())?;
        }
    }
    let input = (body.input_type.as_ref())
        .and_then(|t| {
            args.chunks
                .iter()
                .find(|c| c.placements.iter().any(|p| &p.scope == t))
        })
        .and_then(|c| c.body.clone())
        .unwrap_or_else(|| json!({}));
    let root = engine.config().project_root.clone();
    hc_host::permit::asked_by_person(&app.config, &root, &name, &input, body.read_only)
        .map_err(|e| format!("{e:#}"))
}

/// An error frame answering request `id`.
fn refusal(id: u64, code: ErrorCode, why: &str) -> String {
    let body = ErrorBody::new(code, why);
    json!({"id": id, "error": body}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declaration(chunks: Value) -> Declaration {
        serde_json::from_value(json!({ "chunks": chunks })).unwrap()
    }

    #[test]
    fn each_commit_needs_the_role_its_kind_does() {
        let answer = declaration(json!([{"body": {"decision": "allow"},
            "placements": [{"scope": "s_1", "type": "instance"}, {"scope": "permission-decision", "type": "instance"}]}]));
        let interrupt = declaration(json!([{"body": {},
            "placements": [{"scope": "s_1", "type": "instance"}, {"scope": "interrupt", "type": "instance"}]}]));
        let program = declaration(json!([{"id": "program/x", "body": {},
            "placements": [{"scope": "engine/program", "type": "instance"}]}]));
        // an answer that also rewrites a chunk by id is no answer
        let sly = declaration(json!([{"id": "program/x", "body": {},
            "placements": [{"scope": "permission-decision", "type": "instance"}]}]));
        // an answer also placed on the programs is no answer either
        let double = declaration(json!([{"body": {"executable": "/bin/sh"},
            "placements": [{"scope": "s_1", "type": "instance"}, {"scope": "permission-decision", "type": "instance"}, {"scope": "engine/program", "type": "instance"}]}]));
        let elsewhere = declaration(json!([{"body": {"decision": "allow"},
            "placements": [{"scope": "engine/program", "type": "instance"}, {"scope": "permission-decision", "type": "instance"}]}]));
        let sessions = |scope: &str| scope.starts_with("s_");
        assert_eq!(needed_to_commit(&answer, &sessions), Role::Answerer);
        assert_eq!(needed_to_commit(&interrupt, &sessions), Role::Operator);
        assert_eq!(needed_to_commit(&program, &sessions), Role::Owner);
        assert_eq!(needed_to_commit(&sly, &sessions), Role::Owner);
        assert_eq!(needed_to_commit(&double, &sessions), Role::Owner);
        assert_eq!(needed_to_commit(&elsewhere, &sessions), Role::Owner);
        assert_eq!(
            needed_to_commit(&Declaration::default(), &sessions),
            Role::Owner
        );
    }

    #[test]
    fn what_the_page_commits_is_signed_by_its_person_whatever_it_said() {
        let mut answer = declaration(json!([{"body": {"decision": "allow", "by": "bob"},
            "placements": [{"scope": "permission-decision", "type": "instance"}]}]));
        sign(&mut answer, "alice");
        assert_eq!(
            answer.chunks[0].body.as_ref().unwrap()["by"],
            "alice (the page)"
        );
        let mut message = declaration(json!([{"body": {"text": "hi", "from": "a person (hc send)",
            "to": "s_2", "sender": {"person": "carol", "via": "hc send"}},
            "placements": [{"scope": "message", "type": "instance"}]}]));
        sign(&mut message, "alice");
        let body = message.chunks[0].body.clone().unwrap();
        assert_eq!(body["from"], "alice (the page)");
        assert_eq!(body["sender"], json!({"person": "alice", "via": "page"}));
        assert!(body.get("to").is_none());
    }
}
