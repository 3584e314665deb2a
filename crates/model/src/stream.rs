//! [`MessageStream`]: a streamed reply, delta by delta, then whole.

use crate::anthropic::stream::Accumulator;
use crate::error::ModelError;
pub use crate::event::StreamEvent;
use crate::openai::stream::ChunkAccumulator;
use crate::response::{MessageResponse, Usage};
use crate::sse::{SseDecoder, SseEvent};
use crate::transport::{self, Failure, HttpCall, Transport};
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// The wire format of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFormat {
    /// Anthropic Messages server-sent events.
    Anthropic,
    /// OpenAI chat-completion chunks.
    OpenAiChat,
}

/// The per-format state that turns events into deltas and a message.
pub(crate) enum Decoder {
    Anthropic(Accumulator),
    OpenAi(ChunkAccumulator),
}

impl Decoder {
    fn new(format: WireFormat, request_id: Option<String>) -> Decoder {
        match format {
            WireFormat::Anthropic => Decoder::Anthropic(Accumulator::new(request_id)),
            WireFormat::OpenAiChat => Decoder::OpenAi(ChunkAccumulator::new(request_id)),
        }
    }

    /// Handles one event; true once the reply is complete.
    fn on_event(
        &mut self,
        sse: &SseEvent,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<bool, ModelError> {
        let data = sse.data;
        match self {
            Decoder::Anthropic(a) => a.on_event(sse.event, data, out),
            Decoder::OpenAi(o) => o.on_event(data, out),
        }
    }

    /// The body ended without the format's terminator: true (after
    /// closing open blocks) when the reply is whole all the same.
    fn on_eof(&mut self, out: &mut VecDeque<StreamEvent>) -> bool {
        match self {
            Decoder::Anthropic(_) => false,
            Decoder::OpenAi(o) => o.on_eof(out),
        }
    }

    fn usage(&self) -> Usage {
        match self {
            Decoder::Anthropic(a) => a.usage(),
            Decoder::OpenAi(o) => o.usage(),
        }
    }

    fn finish(self) -> Result<MessageResponse, ModelError> {
        match self {
            Decoder::Anthropic(a) => a.finish(),
            Decoder::OpenAi(o) => o.finish(),
        }
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Body = Pin<Box<dyn Stream<Item = Result<Bytes, BoxError>> + Send>>;

fn body<S, E>(bytes: S) -> Body
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    Box::pin(bytes.map(|r| r.map_err(|e| Box::new(e) as BoxError)))
}

/// Where a stream came from, so it can be sent again.
struct Origin {
    transport: Arc<Transport>,
    call: HttpCall,
    retries: crate::transport::Tries,
}

/// A reply being streamed.
///
/// Call [`next_event`](Self::next_event) for each delta as it arrives, then
/// [`finish`](Self::finish) for the whole message (or call `finish` at once
/// to skip the deltas). If the connection fails before any event has been
/// delivered the request is sent again (by the retry policy); once an event
/// has been delivered, a failure is [`ModelError::Interrupted`] and is not
/// retried, so no text is ever duplicated.
pub struct MessageStream {
    origin: Option<Origin>,
    format: WireFormat,
    url: String,
    body: Body,
    sse: SseDecoder,
    decoder: Option<Decoder>,
    pending: VecDeque<StreamEvent>,
    delivered: usize,
    complete: bool,
    request_id: Option<String>,
}

impl std::fmt::Debug for MessageStream {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.debug_struct("MessageStream")
            .field("url", &self.url)
            .field("delivered", &self.delivered)
            .field("complete", &self.complete)
            .field("request_id", &self.request_id)
            .finish()
    }
}

impl MessageStream {
    /// Decodes a recorded or in-memory server-sent-event body, e.g. a
    /// transcript. Nothing is retried.
    pub fn from_sse_bytes<S, E>(format: WireFormat, bytes: S) -> MessageStream
    where
        S: Stream<Item = Result<Bytes, E>> + Send + 'static,
        E: std::error::Error + Send + Sync + 'static,
    {
        MessageStream {
            origin: None,
            format,
            url: "(bytes)".to_owned(),
            body: body(bytes),
            sse: SseDecoder::default(),
            decoder: Some(Decoder::new(format, None)),
            pending: VecDeque::new(),
            delivered: 0,
            complete: false,
            request_id: None,
        }
    }

    /// Sends `call` (with retries) and starts reading its stream.
    pub(crate) async fn open(
        transport: Arc<Transport>,
        call: HttpCall,
        format: WireFormat,
    ) -> Result<MessageStream, ModelError> {
        let mut retries = crate::transport::Tries::default();
        let response = transport.send(&call, &mut retries).await?;
        let request_id = transport::request_id(response.headers());
        Ok(MessageStream {
            url: call.url.clone(),
            body: body(response.bytes_stream()),
            sse: SseDecoder::default(),
            decoder: Some(Decoder::new(format, request_id.clone())),
            origin: Some(Origin {
                transport,
                call,
                retries,
            }),
            format,
            pending: VecDeque::new(),
            delivered: 0,
            complete: false,
            request_id,
        })
    }

    /// The API's `request-id` for this reply.
    pub fn request_id(&self) -> Option<&str> {
        self.request_id.as_deref()
    }

    /// The usage the server has reported so far (Anthropic: the input at
    /// `message_start`, the output at `message_delta`; OpenAI: at the end),
    /// e.g. to count a reply that was cut off.
    pub fn usage(&self) -> Usage {
        self.decoder
            .as_ref()
            .map(Decoder::usage)
            .unwrap_or_default()
    }

    /// The next delta, or `None` when the reply is complete.
    ///
    /// # Errors
    /// An `error` event from the API, a broken or stalled connection, or a
    /// stream that does not follow the format.
    pub async fn next_event(&mut self) -> Result<Option<StreamEvent>, ModelError> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                self.delivered += 1;
                return Ok(Some(event));
            }
            if self.complete {
                return Ok(None);
            }
            let Some(decoder) = self.decoder.as_mut() else {
                return Ok(None);
            };
            if let Some(event) = self.sse.next_event() {
                if decoder.on_event(&event, &mut self.pending)? {
                    self.complete = true;
                }
                continue;
            }
            match self.read().await {
                Ok(Some(bytes)) => self.sse.feed(&bytes).map_err(|_| {
                    ModelError::protocol(
                        "the event stream is not UTF-8",
                        self.request_id.as_deref(),
                    )
                })?,
                Ok(None) => {
                    let decoder = self.decoder.as_mut();
                    if decoder.is_some_and(|d| d.on_eof(&mut self.pending)) {
                        self.complete = true;
                    } else {
                        let failure = self.broken("the stream ended before the reply was complete");
                        Box::pin(self.recover(failure)).await?;
                    }
                }
                Err(failure) => Box::pin(self.recover(failure)).await?,
            }
        }
    }

    /// The whole reply, reading whatever deltas are left.
    ///
    /// # Errors
    /// As [`next_event`](Self::next_event); also a stream that never said
    /// how the message began.
    pub async fn finish(mut self) -> Result<MessageResponse, ModelError> {
        while self.next_event().await?.is_some() {}
        self.take_message()
    }

    /// The whole reply, handing each delta to `on_event` as it arrives.
    ///
    /// # Errors
    /// As [`finish`](Self::finish).
    pub async fn for_each(
        mut self,
        mut on_event: impl FnMut(&StreamEvent),
    ) -> Result<MessageResponse, ModelError> {
        while let Some(event) = self.next_event().await? {
            on_event(&event);
        }
        self.take_message()
    }

    fn take_message(&mut self) -> Result<MessageResponse, ModelError> {
        let decoder = self.decoder.take().ok_or_else(|| {
            ModelError::protocol("the stream was already finished", self.request_id())
        })?;
        decoder.finish()
    }

    /// The next piece of the body, within the idle timeout.
    async fn read(&mut self) -> Result<Option<Bytes>, Failure> {
        let next = match self.origin.as_ref().map(|o| o.transport.clone()) {
            Some(transport) => self.next_within(&transport).await?,
            None => self.body.next().await,
        };
        match next {
            None => Ok(None),
            Some(Ok(bytes)) => Ok(Some(bytes)),
            Some(Err(e)) => Err(self.broken(&transport::error_chain(e.as_ref()))),
        }
    }

    /// The next piece within the stall limit, saying each silence of the
    /// notice's length as it passes.
    async fn next_within(
        &mut self,
        transport: &Transport,
    ) -> Result<Option<Result<Bytes, BoxError>>, Failure> {
        let (limit, notice) = transport.stall_limits();
        let notice = notice.max(Duration::from_millis(1));
        let mut waited = Duration::ZERO;
        loop {
            let slice = notice.min(limit.saturating_sub(waited));
            if slice.is_zero() {
                return Err(transport.stalled(&self.url));
            }
            match tokio::time::timeout(slice, self.body.next()).await {
                Ok(next) => return Ok(next),
                Err(_) => {
                    waited += slice;
                    if waited < limit {
                        transport.say_silence(waited);
                    }
                }
            }
        }
    }

    fn broken(&self, message: &str) -> Failure {
        Failure {
            error: ModelError::Connect {
                url: self.url.clone(),
                message: message.to_owned(),
            },
            retryable: true,
            headers: None,
            few: false,
        }
    }

    /// Sends the request again if nothing has been delivered and the policy
    /// allows; otherwise the failure, as the caller should see it.
    async fn recover(&mut self, failure: Failure) -> Result<(), ModelError> {
        if self.delivered > 0 || !self.pending.is_empty() {
            return Err(ModelError::Interrupted {
                delivered: self.delivered,
                message: failure.error.to_string(),
                request_id: self.request_id.clone(),
            });
        }
        let Some(origin) = self.origin.as_mut() else {
            return Err(failure.error);
        };
        origin
            .transport
            .pause_or_fail(failure, &mut origin.retries)
            .await?;
        let response = origin
            .transport
            .send(&origin.call, &mut origin.retries)
            .await?;
        self.request_id = transport::request_id(response.headers());
        self.body = body(response.bytes_stream());
        self.sse = SseDecoder::default();
        self.decoder = Some(Decoder::new(self.format, self.request_id.clone()));
        Ok(())
    }
}
