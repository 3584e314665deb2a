//! Subscriptions and notifications, through a Python program written from
//! the spec alone and through the engine API: `scope_changed` (deep and
//! not), commits filtered to the subscriber's reach, `lagged`,
//! `subscription_invalid`, and `notification`.

use crate::common;
use common::*;
use engine::Context;
use protocol::{Boundary, Event, SubscribeOpts};
use serde_json::{Value, json};
use std::time::Duration;
use substrate::{ChunkDecl, Declaration, NewPlacement};

async fn next_event(stream: &mut engine::EventStream) -> Event {
    tokio::time::timeout(Duration::from_secs(20), stream.recv())
        .await
        .expect("no event within 20 s")
        .expect("stream closed")
}

/// Waits until the program has committed its "subscribed" output.
async fn subscribed(h: &Harness, p: &str) {
    for _ in 0..1000 {
        if outputs(&h.read(&[p]))
            .iter()
            .any(|o| o.get("subscribed").is_some())
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{p} never subscribed");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_python_program_subscribes_and_receives_its_events() {
    let h = Harness::new();
    let p = h.run("fixture", json!({"mode": "subscribe"}));
    let done = h.wait(&p).await;
    assert_eq!(status(&done).0, "completed");
    let outs = outputs(&done);
    let sub = outs[0]["subscribed"].as_str().unwrap();
    let event = &outs[1]["event"];
    // its own output commit touched its process: that is the event it got
    assert_eq!(event["event"], "scope_changed");
    assert_eq!(event["subscriptionId"], sub);
    assert!(
        event["commit"]["touched_scopes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == p.as_str())
    );
    assert_eq!(event["commit"]["dispatch_id"], p.as_str());
}

#[tokio::test(flavor = "multi_thread")]
async fn events_are_filtered_to_what_the_subscriber_can_read() {
    let h = Harness::new();
    h.session("s_in");
    h.session("s_out");
    let roots = Some(Boundary::Roots(vec!["s_in".into()]));
    let p = h.run_with(
        "fixture",
        json!({"mode": "watch", "scope": "s_in"}),
        roots.clone(),
        roots,
    );
    subscribed(&h, &p).await;
    h.commit(vec![
        ChunkDecl::with_id("both")
            .body(json!({"text": "x"}))
            .on(NewPlacement::instance("s_in"))
            .on(NewPlacement::instance("prompt"))
            .on(NewPlacement::relates("s_out")),
    ]);
    let event = outputs(&h.wait(&p).await)[1]["event"].clone();
    let touched: Vec<&str> = event["commit"]["touched_scopes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        touched.contains(&"s_in") && touched.contains(&"both"),
        "{touched:?}"
    );
    assert!(
        !touched.contains(&"s_out"),
        "s_out is outside the reader's boundary: {touched:?}"
    );
    let placed: Vec<&str> = event["commit"]["placements_modified"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["scope"].as_str().unwrap())
        .collect();
    assert!(!placed.contains(&"s_out"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_removed_or_unreachable_scope_invalidates_the_subscription() {
    let h = Harness::new();
    h.session("s_in");
    h.commit(vec![
        ChunkDecl::with_id("doomed")
            .body(json!({"text": "d"}))
            .on(NewPlacement::instance("s_in"))
            .on(NewPlacement::instance("prompt")),
    ]);
    h.commit(vec![
        ChunkDecl::with_id("member")
            .body(json!({"text": "m"}))
            .on(NewPlacement::instance("s_in"))
            .on(NewPlacement::instance("prompt")),
    ]);
    let roots = Some(Boundary::Roots(vec!["s_in".into()]));
    let removed = h.run_with(
        "fixture",
        json!({"mode": "watch", "scope": "doomed", "until": "subscription_invalid"}),
        roots.clone(),
        roots.clone(),
    );
    let cut_off = h.run_with(
        "fixture",
        json!({"mode": "watch", "scope": "member", "until": "subscription_invalid"}),
        roots.clone(),
        roots,
    );
    subscribed(&h, &removed).await;
    subscribed(&h, &cut_off).await;
    h.db.commit(
        Declaration::from_json(r#"{"remove":{"chunks":["doomed"]}}"#).unwrap(),
        None,
    )
    .unwrap();
    let events = outputs(&h.wait(&removed).await)[1]["events"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["event"], "scope_changed");
    assert_eq!(events[1]["event"], "subscription_invalid");
    assert_eq!(events[1]["reason"], "scope removed");
    // cut `member` loose from the session that made it readable
    h.db.commit(
        Declaration::from_json(
            r#"{"remove":{"placements":[{"chunk":"member","scope":"s_in","type":"instance"}]}}"#,
        )
        .unwrap(),
        None,
    )
    .unwrap();
    let events: Vec<Value> = outputs(&h.wait(&cut_off).await)[1]["events"]
        .as_array()
        .unwrap()
        .clone();
    // the removal touched `member`, so it is heard first; then the subscription ends
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["event"], "scope_changed");
    assert_eq!(events[1]["event"], "subscription_invalid");
    assert_eq!(events[1]["reason"], "scope unreachable");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_host_hears_a_deep_subscription_and_notifications() {
    let h = Harness::new();
    h.session("s_1");
    let sub = h
        .engine
        .subscribe(
            &Context::host(),
            &["s_1".into()],
            SubscribeOpts { deep: true },
        )
        .unwrap();
    let mut events = h.engine.events(&sub).unwrap();
    let shallow = h
        .engine
        .subscribe(
            &Context::host(),
            &["s_1".into()],
            SubscribeOpts { deep: false },
        )
        .unwrap();
    let mut shallow_events = h.engine.events(&shallow).unwrap();
    let mut args = Harness::task(json!({"mode": "notify", "text": "Hel"}));
    args.session = Some("s_1".into());
    let p = h.engine.run(&Context::host(), "fixture", args).unwrap();
    h.wait(&p).await;
    let mut seen = Vec::new();
    while let Ok(Some(event)) =
        tokio::time::timeout(Duration::from_millis(500), events.recv()).await
    {
        seen.push(event);
    }
    let notification = seen.iter().find_map(|e| match e {
        Event::Notification { process, data } => Some((process.clone(), data.clone())),
        _ => None,
    });
    assert_eq!(
        notification,
        Some((p.clone(), json!({"kind": "text_delta", "text": "Hel"})))
    );
    // deep: the output committed onto the process (below the session) is heard
    let heard_output = seen.iter().any(|e| matches!(e, Event::ScopeChanged { commit, .. } if commit.touched_scopes.contains(&"engine/output".to_owned())));
    assert!(heard_output, "{seen:?}");
    // shallow: the process's own changes (it sits on the session) are heard, its output is not
    let mut shallow_seen = Vec::new();
    while let Some(event) = shallow_events.try_recv() {
        shallow_seen.push(event);
    }
    assert!(shallow_seen.iter().any(
        |e| matches!(e, Event::ScopeChanged { commit, .. } if commit.chunks_modified.contains(&p))
    ));
    assert!(!shallow_seen.iter().any(|e| matches!(e, Event::ScopeChanged { commit, .. } if commit.touched_scopes.contains(&"engine/output".to_owned()))));
    assert!(
        shallow_seen
            .iter()
            .any(|e| matches!(e, Event::Notification { .. })),
        "the process sits on the session"
    );
    let _ = next_event;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_host_that_does_not_read_gets_lagged_and_the_writer_never_waits() {
    let h = Harness::new();
    h.session("s_1");
    let sub = h
        .engine
        .subscribe(&Context::host(), &["s_1".into()], SubscribeOpts::default())
        .unwrap();
    let mut events = h.engine.events(&sub).unwrap();
    for i in 0..1100 {
        h.commit(vec![ChunkDecl::with_id("s_1").merge_body(json!({"n": i}))]);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut drained = 0;
    while events.try_recv().is_some() {
        drained += 1;
    }
    assert_eq!(drained, 1024, "the queue holds 1024; the rest were dropped");
    h.commit(vec![
        ChunkDecl::with_id("s_1").merge_body(json!({"n": "after"})),
    ]);
    let first = next_event(&mut events).await;
    assert_eq!(
        first,
        Event::Lagged {
            subscription_ids: vec![sub.clone()]
        }
    );
    assert!(matches!(
        next_event(&mut events).await,
        Event::ScopeChanged { .. }
    ));
}
