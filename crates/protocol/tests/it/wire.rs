//! The wire types against the literal JSON of `docs/protocol.md`: each
//! example parses, and serializes back to the same JSON.

use protocol::{
    Boundary, ErrorBody, ErrorCode, Event, Incoming, Op, Outcome, ParseError, Request, Response,
};
use serde_json::{Value, json};

/// Parses `line` as a request and checks it serializes back to the same JSON.
fn round_trip(line: Value) -> Request {
    let request = Request::parse(line.to_string().as_bytes()).unwrap();
    assert_eq!(
        serde_json::to_value(&request).unwrap(),
        line,
        "round trip of {line}"
    );
    request
}

#[test]
fn every_request_of_the_spec_round_trips() {
    let r = round_trip(
        json!({"id":1,"op":"scope","scopes":["s_1"],"opts":{"match_":"weather","limit":50,"as_of":120}}),
    );
    assert!(
        matches!(r.op, Op::Scope { ref scopes, ref opts } if scopes == &["s_1"] && opts.limit == Some(50))
    );
    round_trip(json!({"id":2,"op":"commit","declaration":{
        "chunks":[{"id":"c_1","name":"n","body":{"text":"hi"},"placements":[{"scope":"s_1","type":"instance","seq":4}]}],
        "placements":[{"chunk":"existing","scope":"s_2","type":"relates"}],
        "remove":{"placements":[{"chunk":"x","scope":"y","type":"instance"}],"chunks":["z"]}}}));
    let r = round_trip(json!({"id":3,"op":"run","program":"filesystem","args":{
        "chunks":[{"body":{"path":"a"},"placements":[{"scope":"input/filesystem","type":"instance"}]}],
        "readBoundary":["s_1"],"writeBoundary":"open","timeoutMs":30000,"session":"s_1"}}));
    match r.op {
        Op::Run { args, .. } => {
            assert_eq!(
                args.read_boundary,
                Some(Boundary::Roots(vec!["s_1".into()]))
            );
            assert_eq!(args.write_boundary, Some(Boundary::Open));
            assert_eq!(args.timeout_ms, Some(30000));
        }
        other => panic!("{other:?}"),
    }
    round_trip(json!({"id":4,"op":"await","processes":["p_1","p_2"]}));
    round_trip(json!({"id":5,"op":"cancel","process":"p_2"}));
    round_trip(json!({"id":6,"op":"subscribe","scopes":["s_1"],"opts":{"deep":true}}));
    round_trip(json!({"id":7,"op":"unsubscribe","subscriptionId":"sub_1"}));
    round_trip(json!({"id":8,"op":"notify","data":{"kind":"text_delta","text":"Hel"}}));
}

#[test]
fn every_event_and_error_of_the_spec_round_trips() {
    let commit = json!({"id":9,"parent_id":8,"timestamp":"2026-11-22T01:00:00.000Z","dispatch_id":null,
        "chunks_modified":["c_1"],"created":["c_1"],"removed":[],
        "placements_modified":[{"chunk":"c_1","scope":"s_1","type":"instance","seq":0,"op":"added"}],
        "touched_scopes":["c_1","s_1"]});
    for line in [
        json!({"event":"scope_changed","subscriptionId":"sub_1","commit":commit}),
        json!({"event":"lagged","subscriptionIds":["sub_1"]}),
        json!({"event":"subscription_invalid","subscriptionId":"sub_1","reason":"scope unreachable"}),
        json!({"event":"notification","process":"p_7","data":{"kind":"text_delta","text":"Hel"}}),
    ] {
        let parsed = Incoming::parse(line.to_string().as_bytes()).unwrap();
        let Incoming::Event(event) = parsed else {
            panic!("{line} is an event")
        };
        assert_eq!(serde_json::to_value(&event).unwrap(), line);
    }
    let error = json!({"id":3,"error":{"code":"BOUNDARY_VIOLATION","message":"scope s_9 is outside the read boundary"}});
    let Incoming::Response(r) = Incoming::parse(error.to_string().as_bytes()).unwrap() else {
        panic!()
    };
    assert_eq!(
        r.outcome,
        Outcome::Error(ErrorBody::new(
            ErrorCode::BoundaryViolation,
            "scope s_9 is outside the read boundary"
        ))
    );
    assert_eq!(serde_json::to_value(&r).unwrap(), error);
    let ok = Response {
        id: Some(4),
        outcome: Outcome::Result(json!({"process":"p_1"})),
    };
    assert_eq!(
        serde_json::to_value(&ok).unwrap(),
        json!({"id":4,"result":{"process":"p_1"}})
    );
    for code in [
        "BOUNDARY_VIOLATION",
        "VALIDATION_ERROR",
        "NOT_FOUND",
        "RUN_FAILED",
        "INVALID_REQUEST",
        "INTERNAL",
        "FENCED",
    ] {
        let c: ErrorCode = serde_json::from_value(json!(code)).unwrap();
        assert_eq!(c.as_str(), code);
    }
}

#[test]
fn scope_results_have_the_spec_shape() {
    let literal = json!({
        "scopes": [{"id":"s_1","name":"chat","spec":{},"body":{"text":"x"},"placements":[{"scope":"session","type":"instance","seq":null}]}],
        "chunks": [],
        "total": 311,
        "next_after": null,
        "topology": [{"id": "s_9", "name": "other session", "count": 42}],
        "dimensions": [{"id": "prompt", "name": "prompt", "count": 40}],
        "as_of": 120
    });
    let parsed: substrate::ScopeResult = serde_json::from_value(literal.clone()).unwrap();
    assert_eq!(serde_json::to_value(&parsed).unwrap(), literal);
}

#[test]
fn bad_lines_are_told_apart() {
    assert!(matches!(
        Request::parse(b"not json"),
        Err(ParseError::Malformed(_))
    ));
    assert!(matches!(
        Request::parse(b"[1,2]"),
        Err(ParseError::Malformed(_))
    ));
    assert_eq!(
        Request::parse(br#"{"id":3,"op":"launch"}"#),
        Err(ParseError::Invalid { id: Some(3), message: "bad `launch` request: unknown variant `launch`, expected one of `scope`, `commit`, `run`, `await`, `cancel`, `subscribe`, `unsubscribe`, `notify`, `finish`, `service`, `ready`".into() })
    );
    match Request::parse(br#"{"id":4,"op":"scope"}"#) {
        Err(ParseError::Invalid {
            id: Some(4),
            message,
        }) => assert!(message.contains("missing field `scopes`"), "{message}"),
        other => panic!("{other:?}"),
    }
    match Request::parse(br#"{"op":"scope","scopes":[]}"#) {
        Err(ParseError::Invalid { id: None, message }) => {
            assert!(message.contains("id"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    match Request::parse(br#"{"id":-1,"op":"scope","scopes":[]}"#) {
        Err(ParseError::Invalid { id: None, .. }) => {}
        other => panic!("{other:?}"),
    }
    match Request::parse(br#"{"id":5,"op":"run","program":"x","args":{"readBoundary":"closed"}}"#) {
        Err(ParseError::Invalid {
            id: Some(5),
            message,
        }) => assert!(message.contains("\"open\" or a list"), "{message}"),
        other => panic!("{other:?}"),
    }
    let event = Event::Lagged {
        subscription_ids: vec![],
    };
    assert!(serde_json::to_string(&event).unwrap().contains("lagged"));
}

mod never_panics {
    use proptest::prelude::*;
    use protocol::Request;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]
        #[test]
        fn on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
            let _ = Request::parse(&bytes);
        }

        #[test]
        fn on_json_shaped_text(text in r#"\{("(id|op|scopes|opts|args|declaration)":(-?[0-9]{1,20}|"[a-z_]{0,8}"|\[\]|\{\}|null|true),?){0,6}\}"#) {
            let _ = Request::parse(text.as_bytes());
        }
    }
}

#[test]
fn responses_are_told_apart_by_result_or_error() {
    let parse = |line: &str| Incoming::parse(line.as_bytes());
    let Ok(Incoming::Response(r)) = parse(r#"{"id":5,"result":{"process":"p_2"},"extra":1}"#)
    else {
        panic!("a result")
    };
    assert_eq!(
        (r.id, r.outcome),
        (Some(5), Outcome::Result(json!({"process":"p_2"})))
    );
    let Ok(Incoming::Response(r)) = parse(r#"{"id":6,"result":null}"#) else {
        panic!("a null result is still a result")
    };
    assert_eq!(r.outcome, Outcome::Result(serde_json::Value::Null));
    let Ok(Incoming::Response(r)) =
        parse(r#"{"id":null,"error":{"code":"INVALID_REQUEST","message":"x"}}"#)
    else {
        panic!("an error without a usable id")
    };
    assert_eq!(r.id, None);
    assert!(parse(r#"{"id":7}"#).unwrap_err().contains("neither"));
    assert!(
        parse(r#"{"id":7,"result":{},"error":{"code":"INTERNAL","message":""}}"#)
            .unwrap_err()
            .contains("both")
    );
    assert!(parse("[1]").is_err());
    assert!(
        parse(r#"{"event":"lagged"}"#)
            .unwrap_err()
            .contains("bad event")
    );
}
