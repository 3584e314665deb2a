//! Decoding a recorded stream from bytes ([`MessageStream::from_sse_bytes`]):
//! however the bytes are split, the message is the same.

use bytes::Bytes;
use model::{MessageResponse, MessageStream, ModelError, WireFormat};
use proptest::prelude::*;

fn body(text: &str, input: &serde_json::Value) -> String {
    let text_json = serde_json::to_string(text).unwrap();
    let input_text = input.to_string();
    let mut out = String::from(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_p\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n\
         event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    );
    out.push_str(&format!(
        "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":{text_json}}}}}\n\n"
    ));
    out.push_str(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    );
    out.push_str("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":{}}}\n\n");
    for piece in input_text.as_bytes().chunks(3) {
        let piece = serde_json::to_string(std::str::from_utf8(piece).unwrap()).unwrap();
        out.push_str(&format!(
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":{piece}}}}}\n\n"
        ));
    }
    out.push_str(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
    );
    out.push_str("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":9}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    out
}

fn decode(bytes: &[u8], cuts: &[usize]) -> Result<MessageResponse, ModelError> {
    let mut chunks = Vec::new();
    let mut last = 0;
    for &cut in cuts {
        let cut = cut.min(bytes.len());
        if cut > last {
            chunks.push(Ok::<_, std::io::Error>(Bytes::copy_from_slice(
                &bytes[last..cut],
            )));
            last = cut;
        }
    }
    chunks.push(Ok(Bytes::copy_from_slice(&bytes[last..])));
    let stream =
        MessageStream::from_sse_bytes(WireFormat::Anthropic, futures_util::stream::iter(chunks));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(stream.finish())
}

proptest! {
    #[test]
    fn any_split_gives_the_same_message(
        text in "[a-zA-Z0-9 éß✓🦀\"\\\\\n]{0,60}",
        key in "[a-z]{1,8}",
        mut cuts in proptest::collection::vec(0usize..2000, 0..12),
    ) {
        // ASCII only: the input fragments above are cut every three bytes.
        let input = serde_json::json!({key: [1, {"x": "ascii value"}]});
        let body = body(&text, &input);
        cuts.sort_unstable();
        let whole = decode(body.as_bytes(), &[]).unwrap();
        let split = decode(body.as_bytes(), &cuts).unwrap();
        prop_assert_eq!(&split, &whole);
        prop_assert_eq!(whole.text(), text);
        prop_assert_eq!(whole.tool_uses().next().unwrap().input_value(), input);
        prop_assert_eq!(whole.usage.output_tokens, 9);
    }
}

#[test]
fn a_transport_error_in_recorded_bytes_is_reported() {
    let chunks = vec![
        Ok(Bytes::from_static(b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{}}}\n\n")),
        Err(std::io::Error::other("disk went away")),
    ];
    let stream =
        MessageStream::from_sse_bytes(WireFormat::Anthropic, futures_util::stream::iter(chunks));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let err = rt.block_on(stream.finish()).unwrap_err();
    assert!(err.to_string().contains("disk went away"), "{err}");
}

#[test]
fn usage_so_far_is_the_start_then_the_delta() {
    let text = body("hello", &serde_json::json!({"a": 1}));
    let stream = MessageStream::from_sse_bytes(
        WireFormat::Anthropic,
        futures_util::stream::iter([Ok::<_, std::io::Error>(Bytes::from(text))]),
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async move {
        let mut stream = stream;
        assert_eq!(stream.usage().input_tokens, 0, "nothing read yet");
        // The first event is the text block's start: message_start is read.
        stream.next_event().await.unwrap().unwrap();
        assert_eq!(
            (stream.usage().input_tokens, stream.usage().output_tokens),
            (3, 1)
        );
        while stream.next_event().await.unwrap().is_some() {}
        assert_eq!(stream.usage().output_tokens, 9, "message_delta's count");
    });
}
