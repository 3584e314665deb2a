//! An editor's side of ACP v1, from the official Rust SDK: spawns
//! `<hc> acp` in a project, says "say hello" in a new session and prints
//! one JSON line describing what came back.
//!
//! Usage: `acp-rust-client <path-to-hc> <project-dir>`

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, NewSessionRequest, PermissionOptionKind, PromptRequest,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionNotification, SessionUpdate, TextContent,
};
use agent_client_protocol::{Agent, ByteStreams, Client};
use anyhow::{Context, bail};
use serde_json::json;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, hc, project] = args.as_slice() else {
        bail!("usage: acp-rust-client <path-to-hc> <project-dir>");
    };
    let project = std::path::absolute(project).context("the project directory")?;

    let mut child = tokio::process::Command::new(hc)
        .arg("acp")
        .current_dir(&project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("spawning {hc} acp"))?;
    let stdin = child.stdin.take().context("the agent's stdin")?;
    let stdout = child.stdout.take().context("the agent's stdout")?;
    let transport = ByteStreams::new(stdin.compat_write(), stdout.compat());

    let updates: Arc<Mutex<Vec<SessionUpdate>>> = Arc::default();
    let recorded = updates.clone();
    let (version, session_id, stop_reason) = Client
        .v1()
        .name("acp-rust-client")
        .on_receive_notification(
            async move |notification: SessionNotification, _cx| {
                recorded.lock().expect("updates").push(notification.update);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                let allow = (request.options.iter())
                    .find(|option| option.kind == PermissionOptionKind::AllowOnce);
                let outcome = match allow {
                    Some(option) => RequestPermissionOutcome::Selected(
                        SelectedPermissionOutcome::new(option.option_id.clone()),
                    ),
                    None => RequestPermissionOutcome::Cancelled,
                };
                responder.respond(RequestPermissionResponse::new(outcome))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let init = cx
                .send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let session = cx
                .send_request(NewSessionRequest::new(project.clone()))
                .block_task()
                .await?;
            let prompt = vec![ContentBlock::Text(TextContent::new("say hello"))];
            let done = cx
                .send_request(PromptRequest::new(session.session_id.clone(), prompt))
                .block_task()
                .await?;
            Ok((init.protocol_version, session.session_id, done.stop_reason))
        })
        .await
        .context("the ACP conversation")?;

    let out = {
        let updates = updates.lock().expect("updates");
        let said: String = (updates.iter())
            .filter_map(|update| match update {
                SessionUpdate::AgentMessageChunk(chunk) => match &chunk.content {
                    ContentBlock::Text(text) => Some(text.text.as_str()),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        json!({
            "protocolVersion": serde_json::to_value(version)?,
            "sessionId": serde_json::to_value(&session_id)?,
            "stopReason": serde_json::to_value(stop_reason)?,
            "said": said,
            "updates": updates.len(),
        })
    };
    println!("{out}");

    // Its stdin closed with the transport: give it a moment to end, then kill it.
    if tokio::time::timeout(Duration::from_secs(5), child.wait()).await.is_err() {
        child.kill().await.context("killing the agent")?;
    }
    Ok(())
}
