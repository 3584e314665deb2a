//! JSON-RPC 2.0 over lines: what a line is (a request, a notification, an
//! answer, or not JSON-RPC at all), and the lines an agent writes.

use serde_json::{Value, json};

/// Not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON, not a request.
pub const INVALID_REQUEST: i64 = -32600;
/// No such method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// The params do not read as the method's.
pub const INVALID_PARAMS: i64 = -32602;
/// Something failed inside.
pub const INTERNAL_ERROR: i64 = -32603;
/// ACP: authentication is needed first.
pub const AUTH_REQUIRED: i64 = -32000;
/// ACP: no such resource (a session, a file).
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// One line read from the other side.
#[derive(Clone, Debug, PartialEq)]
pub enum Incoming {
    /// A call that wants an answer.
    Request {
        /// Its id (a number or a string), answered as it came.
        id: Value,
        /// The method.
        method: String,
        /// Its params (`null` when absent).
        params: Value,
    },
    /// A call that wants none.
    Notification {
        /// The method.
        method: String,
        /// Its params (`null` when absent).
        params: Value,
    },
    /// The answer to one of ours.
    Response {
        /// The id we sent.
        id: Value,
        /// What it came to: its result, or its error.
        outcome: Result<Value, RpcError>,
    },
    /// Not a message: the error to answer (with `id` when it had one).
    Invalid {
        /// The id, when one could be read.
        id: Value,
        /// What is wrong.
        error: RpcError,
    },
}

/// A JSON-RPC error.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    /// Its code.
    pub code: i64,
    /// What it says.
    pub message: String,
    /// More, when there is.
    pub data: Option<Value>,
}

impl RpcError {
    /// An error of `code` saying `message`.
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The same, with `data`.
    pub fn with_data(mut self, data: Value) -> RpcError {
        self.data = Some(data);
        self
    }

    fn to_value(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }

    fn of(value: &Value) -> RpcError {
        RpcError {
            code: value["code"].as_i64().unwrap_or(INTERNAL_ERROR),
            message: value["message"].as_str().unwrap_or_default().to_owned(),
            data: value.get("data").cloned(),
        }
    }
}

/// Whether `id` may be a request's id (a number or a string).
fn is_id(id: &Value) -> bool {
    id.is_number() || id.is_string()
}

impl Incoming {
    /// What `line` is (never fails: what is not a message is `Invalid`).
    pub fn parse(line: &str) -> Incoming {
        let value: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                return Incoming::Invalid {
                    id: Value::Null,
                    error: RpcError::new(PARSE_ERROR, format!("not JSON: {e}")),
                };
            }
        };
        let id = value.get("id").cloned().unwrap_or(Value::Null);
        let invalid = |why: &str| Incoming::Invalid {
            id: if is_id(&id) { id.clone() } else { Value::Null },
            error: RpcError::new(INVALID_REQUEST, why),
        };
        if !value.is_object() {
            return invalid("a message is a JSON object");
        }
        if value["jsonrpc"] != "2.0" {
            return invalid("`jsonrpc` must be \"2.0\"");
        }
        let params = value.get("params").cloned().unwrap_or(Value::Null);
        match (value.get("method"), value.get("id")) {
            (Some(Value::String(method)), None) => Incoming::Notification {
                method: method.clone(),
                params,
            },
            (Some(Value::String(_)), Some(id)) if !is_id(id) => {
                invalid("`id` is a number or a string")
            }
            (Some(Value::String(method)), Some(id)) => Incoming::Request {
                id: id.clone(),
                method: method.clone(),
                params,
            },
            (Some(_), _) => invalid("`method` is a string"),
            // (an error answering a line the other side could not read has
            // a null id: an answer still, never answered back)
            (None, Some(id)) if is_id(id) || (id.is_null() && value.get("error").is_some()) => {
                let outcome = match (value.get("result"), value.get("error")) {
                    (_, Some(error)) => Err(RpcError::of(error)),
                    (Some(result), None) => Ok(result.clone()),
                    (None, None) => {
                        Err(RpcError::new(INVALID_REQUEST, "an answer without a result"))
                    }
                };
                Incoming::Response {
                    id: id.clone(),
                    outcome,
                }
            }
            (None, _) => invalid("a message has a `method`, or answers an `id`"),
        }
    }
}

/// The line answering request `id` with `result`.
pub fn result(id: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// The line answering request `id` (`null`: none could be read) with
/// `error`.
pub fn error(id: &Value, error: &RpcError) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": error.to_value()}).to_string()
}

/// A notification's line.
pub fn notification(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}

/// A request's line.
pub fn request(id: &Value, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_line_reads_as_itself() {
        let r = Incoming::parse(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#,
        );
        assert_eq!(
            r,
            Incoming::Request {
                id: json!(1),
                method: "initialize".into(),
                params: json!({"protocolVersion": 1})
            }
        );
        let n = Incoming::parse(
            r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#,
        );
        assert!(
            matches!(n, Incoming::Notification { ref method, .. } if method == "session/cancel")
        );
        let ok = Incoming::parse(
            r#"{"jsonrpc":"2.0","id":"a","result":{"outcome":{"outcome":"cancelled"}}}"#,
        );
        assert!(matches!(ok, Incoming::Response { outcome: Ok(_), .. }));
        let err =
            Incoming::parse(r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"gone"}}"#);
        assert!(
            matches!(err, Incoming::Response { outcome: Err(ref e), .. } if e.code == RESOURCE_NOT_FOUND)
        );
        let unread = Incoming::parse(
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}"#,
        );
        assert!(matches!(
            unread,
            Incoming::Response {
                id: Value::Null,
                ..
            }
        ));
    }

    #[test]
    fn what_is_not_a_message_is_answered_with_the_right_code() {
        for (line, code, id) in [
            ("{not json", PARSE_ERROR, Value::Null),
            ("[1,2]", INVALID_REQUEST, Value::Null),
            (r#"{"id":3,"method":"x"}"#, INVALID_REQUEST, json!(3)),
            (
                r#"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#,
                INVALID_REQUEST,
                Value::Null,
            ),
            (
                r#"{"jsonrpc":"2.0","id":4,"method":5}"#,
                INVALID_REQUEST,
                json!(4),
            ),
            (r#"{"jsonrpc":"2.0"}"#, INVALID_REQUEST, Value::Null),
        ] {
            match Incoming::parse(line) {
                Incoming::Invalid { id: got, error } => {
                    assert_eq!((error.code, &got), (code, &id), "{line}");
                }
                other => panic!("{line}: {other:?}"),
            }
        }
    }

    #[test]
    fn lines_written_are_json_rpc() {
        let e = RpcError::new(RESOURCE_NOT_FOUND, "no session s_1")
            .with_data(json!({"sessionId": "s_1"}));
        let line: Value = serde_json::from_str(&error(&json!(7), &e)).unwrap();
        assert_eq!(
            line,
            json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32002, "message": "no session s_1", "data": {"sessionId": "s_1"}}})
        );
        let line: Value = serde_json::from_str(&notification("session/update", json!({}))).unwrap();
        assert_eq!(line["method"], "session/update");
        let line: Value = serde_json::from_str(&result(&json!("x"), json!({}))).unwrap();
        assert_eq!(line, json!({"jsonrpc": "2.0", "id": "x", "result": {}}));
        let line: Value =
            serde_json::from_str(&request(&json!(1), "fs/read_text_file", json!({}))).unwrap();
        assert_eq!(line["id"], 1);
    }
}
