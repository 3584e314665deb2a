//! `web-fetch`: an HTTP(S) GET, its body turned into text a model reads.

use futures_util::StreamExt;
use protocol::program::{Output, ProgramDef, ProgramFuture, serve};
use protocol::{Capabilities, FilesystemAccess, ReadAccess};
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::Duration;

/// The body read at most, when the call gives no `max_bytes`.
const DEFAULT_MAX_BYTES: usize = 10 * 1024 * 1024;
/// The whole fetch's time, when the call gives no `timeout`.
const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// The longest `timeout` a call may ask for.
const MAX_TIMEOUT_MS: u64 = 120_000;
/// Redirects followed.
const MAX_REDIRECTS: usize = 10;
/// The answer's text is kept to this many characters.
const MAX_TEXT_CHARS: usize = 100_000;
/// How much of an error page's body an error result shows.
const ERROR_SNIPPET_CHARS: usize = 500;

/// Proxy and certificate variables the program passes through.
const PROXY_ENV: &[&str] = &[
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "The http:// or https:// URL to fetch."},
            "max_bytes": {"type": "integer", "minimum": 1, "description": "Read at most this many bytes of the body (default 10 MiB)."},
            "timeout": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_MS, "description": "Milliseconds for the whole fetch (default 30000)."}
        },
        "required": ["url"]
    })
}

fn definition() -> ProgramDef {
    ProgramDef {
        name: "web-fetch",
        text: "Fetches a web page or file over HTTP(S) and returns its content as text: HTML \
               becomes readable text (scripts and styles dropped, links kept), JSON is \
               pretty-printed, other text is returned as it is. Follows up to 10 redirects; \
               reads at most 10 MiB and 30 s by default. Other content types (PDF, images) \
               and 4xx/5xx answers are errors that say so. Read-only; for public pages, \
               never for anything that needs a login.",
        schema: schema(),
        capabilities: Capabilities {
            filesystem: FilesystemAccess {
                read: ReadAccess::Paths(Vec::new()),
                write: Vec::new(),
            },
            network: true,
            env: PROXY_ENV.iter().map(|s| (*s).to_owned()).collect(),
            programs: Vec::new(),
        },
        timeout_ms: MAX_TIMEOUT_MS + 30_000,
        concurrency_safe: true,
        read_only: true,
        tool: true,
    }
}

pub(crate) fn chunks() -> Vec<substrate::ChunkDecl> {
    definition().chunks()
}

#[derive(Deserialize)]
struct Input {
    url: String,
    max_bytes: Option<usize>,
    timeout: Option<u64>,
}

pub(crate) fn main() -> ProgramFuture {
    Box::pin(serve("input/web-fetch", async |_, input: Input| {
        fetch(&input).await.unwrap_or_else(Output::error)
    }))
}

async fn fetch(input: &Input) -> Result<Output, String> {
    let url = reqwest::Url::parse(&input.url).map_err(|e| {
        format!(
            "`{}` is not a URL ({e}); give a full http(s):// URL",
            input.url
        )
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "web-fetch fetches http and https URLs only; `{}` is {}: (read local files with read)",
            input.url,
            url.scheme()
        ));
    }
    let timeout = input.timeout.unwrap_or(DEFAULT_TIMEOUT_MS);
    if timeout == 0 || timeout > MAX_TIMEOUT_MS || input.max_bytes == Some(0) {
        return Err(format!(
            "`timeout` is 1 to {MAX_TIMEOUT_MS} ms and `max_bytes` at least 1"
        ));
    }
    let timeout = Duration::from_millis(timeout);
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::limited(MAX_REDIRECTS))
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .user_agent(concat!("hermitcrab-web-fetch/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot set up the HTTP client: {e}"))?;
    let response = client
        .get(url.clone())
        .send()
        .await
        .map_err(|e| describe(&e, &input.url, timeout))?;
    let status = response.status();
    let final_url = response.url().to_string();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.to_ascii_lowercase());
    let kind = Kind::of(content_type.as_deref());
    if let (Kind::Other, Some(ty)) = (kind, &content_type)
        && !status.is_client_error()
        && !status.is_server_error()
    {
        return Err(format!(
            "{final_url} is `{ty}`, which web-fetch cannot read (it reads HTML, JSON and text); \
             if it is a file you need, download it with shell (e.g. curl) if the network is \
             allowed there"
        ));
    }
    let max = input.max_bytes.unwrap_or(DEFAULT_MAX_BYTES);
    let (body, truncated) = read_body(response, max)
        .await
        .map_err(|e| describe(&e, &final_url, timeout))?;
    let text = kind.render(&body)?;
    if status.is_client_error() || status.is_server_error() {
        let snippet: String = text.chars().take(ERROR_SNIPPET_CHARS).collect();
        return Err(format!(
            "HTTP {status} from {final_url}:\n{}",
            snippet.trim()
        ));
    }
    let (text, cut) = crate::text::head_and_tail(&text, MAX_TEXT_CHARS);
    let data = json!({
        "status": status.as_u16(),
        "final_url": final_url,
        "content_type": content_type,
        "bytes": body.len(),
        "truncated": truncated || cut,
    });
    Ok(Output::ok(text, data))
}

/// Reads at most `max` bytes of the body; whether more was left unread.
async fn read_body(
    response: reqwest::Response,
    max: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(piece) = stream.next().await {
        let piece = piece?;
        let room = max - body.len();
        if piece.len() > room {
            body.extend_from_slice(&piece[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&piece);
    }
    Ok((body, false))
}

/// A fetch error as a person would put it.
fn describe(e: &reqwest::Error, url: &str, timeout: Duration) -> String {
    if e.is_redirect() {
        format!("{url} redirects more than {MAX_REDIRECTS} times (a redirect loop?)")
    } else if e.is_timeout() {
        format!(
            "fetching {url} took longer than {} ms; try again, or a larger `timeout`",
            timeout.as_millis()
        )
    } else if e.is_connect() {
        format!("cannot connect to {url}: {}", root_cause(e))
    } else {
        format!("fetching {url} failed: {}", root_cause(e))
    }
}

fn root_cause(e: &dyn std::error::Error) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// What a body is, by its content type.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Html,
    Json,
    Text,
    /// No content type: text when it decodes as UTF-8.
    Unknown,
    Other,
}

impl Kind {
    fn of(content_type: Option<&str>) -> Kind {
        let Some(ty) = content_type else {
            return Kind::Unknown;
        };
        let mime = ty.split(';').next().unwrap_or("").trim();
        match mime {
            "text/html" | "application/xhtml+xml" => Kind::Html,
            "application/json" => Kind::Json,
            m if m.ends_with("+json") => Kind::Json,
            m if m.starts_with("text/") => Kind::Text,
            "application/xml"
            | "application/javascript"
            | "application/x-sh"
            | "application/toml"
            | "application/yaml"
            | "application/x-yaml" => Kind::Text,
            m if m.ends_with("+xml") => Kind::Text,
            "" => Kind::Unknown,
            _ => Kind::Other,
        }
    }

    fn render(self, body: &[u8]) -> Result<String, String> {
        Ok(match self {
            Kind::Html => html2text::from_read(body, 100)
                .unwrap_or_else(|_| String::from_utf8_lossy(body).into_owned()),
            Kind::Json => match serde_json::from_slice::<Value>(body) {
                Ok(v) => serde_json::to_string_pretty(&v).unwrap_or_default(),
                Err(_) => String::from_utf8_lossy(body).into_owned(),
            },
            Kind::Text | Kind::Other => String::from_utf8_lossy(body).into_owned(),
            Kind::Unknown => String::from_utf8(body.to_vec()).map_err(|_| {
                "the answer has no content type and is not UTF-8 text; web-fetch reads HTML, \
                 JSON and text"
                    .to_owned()
            })?,
        })
    }
}
