//! `hc mcp login NAME` and `hc mcp logout NAME`, as `claude mcp
//! login|logout`: signing in to an HTTP MCP server (OAuth, in the browser,
//! coming back to `http://localhost:PORT/callback`) and out again. The
//! protocol is `mcp::oauth`'s; here the person is led through it.

use crate::mcp_config::{self, Configured};
use anyhow::Result;
use hc_host::exit::exit;

/// The server `name` as configured here (a project's untrusted servers
/// among them: signing in grants nothing until the project is trusted),
/// its URL and where its tokens go.
fn target(name: &str) -> Result<(Configured, String, std::path::PathBuf)> {
    let here = std::env::current_dir()?;
    let root = here
        .ancestors()
        .find(|d| d.join(crate::project::DIR).is_dir())
        .unwrap_or(&here)
        .to_owned();
    let files = crate::config::Files::read(&root.join(crate::project::DIR).join("config.toml"))?;
    let mut all = mcp_config::servers(&files, &[], false)?;
    all.extend(mcp_config::untrusted(&root, &all)?);
    let Some(server) = all.into_iter().find(|s| s.name == name) else {
        return Err(exit(
            1,
            format!("no MCP server `{name}`: `hc mcp list` shows those configured"),
        ));
    };
    let lookup = |var: &str| std::env::var(var).ok();
    let resolved = server
        .entry
        .resolve(name, &lookup)
        .map_err(|e| exit(2, e.to_string()))?;
    let mcp::config::Transport::Http { url, .. } = &resolved.transport else {
        return Err(exit(
            2,
            format!(
                "`{name}` is a stdio server: it takes its credentials from its environment \
                 (-e KEY=VALUE); signing in is for HTTP servers"
            ),
        ));
    };
    let Some(store) = mcp_config::sign_in_store(&server.entry, &resolved) else {
        return Err(exit(
            2,
            format!(
                "`{name}` is given its credentials already (an `Authorization` header or \
                 `bearer_token_env_var`): remove them to sign in instead"
            ),
        ));
    };
    let url = url.clone();
    Ok((server, url, store))
}

/// `hc mcp login NAME`.
pub fn login(name: &str, no_browser: bool, callback_port: Option<u16>) -> Result<()> {
    let (server, url, store) = target(name)?;
    let oauth = server.entry.oauth.clone().unwrap_or_default();
    let from_env = match std::env::var("MCP_OAUTH_CALLBACK_PORT") {
        Ok(port) => Some(port.parse::<u16>().map_err(|_| {
            exit(
                2,
                format!("MCP_OAUTH_CALLBACK_PORT={port} is not a port: give a number"),
            )
        })?),
        Err(_) => None,
    };
    let login = mcp::oauth::Login {
        name: name.to_owned(),
        url,
        store: store.clone(),
        client_secret: oauth
            .client_id
            .as_ref()
            .and_then(|_| std::env::var("MCP_CLIENT_SECRET").ok()),
        client_id: oauth.client_id,
        scopes: oauth
            .scopes
            .as_deref()
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_owned)
            .collect(),
        callback_port: callback_port.or(oauth.callback_port).or(from_env),
    };
    hc_host::open::runtime()?.block_on(async {
        let pending = mcp::oauth::start(&login).await.map_err(|e| exit(1, e))?;
        let terminal = std::io::IsTerminal::is_terminal(&std::io::stdin());
        eprintln!(
            "hc: to sign in to `{name}`, open this address in a browser:\n\n  {}\n",
            pending.url
        );
        if terminal {
            eprintln!(
                "hc: (if the browser cannot come back here, paste the address it ended on, \
                 then Enter)"
            );
        }
        if !no_browser {
            open_browser(&pending.url);
        }
        let pasted = async move {
            if !terminal {
                return std::future::pending::<Option<String>>().await;
            }
            // (a thread of its own, not the runtime's blocking pool, which
            // would wait for Enter at the end)
            let (tx, rx) = tokio::sync::oneshot::channel();
            std::thread::spawn(move || {
                let mut line = String::new();
                let _ = tx.send(std::io::stdin().read_line(&mut line).map(|_| line));
            });
            match rx.await {
                Ok(Ok(line)) if line.trim().starts_with("http") => Some(line.trim().to_owned()),
                _ => std::future::pending().await,
            }
        };
        pending.finish(pasted).await.map_err(|e| exit(1, e))?;
        println!(
            "signed in to `{name}` (its tokens are kept in {}, for you alone)",
            store.display()
        );
        Ok(())
    })
}

/// Opens `url` in the person's browser (`$BROWSER`, else `xdg-open`),
/// not waiting for it; the address is printed either way.
fn open_browser(url: &str) {
    let browser = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| "xdg-open".into());
    let _ = std::process::Command::new(browser)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

/// `hc mcp logout NAME`.
pub fn logout(name: &str) -> Result<()> {
    let (_, url, store) = target(name)?;
    let had = hc_host::open::runtime()?
        .block_on(mcp::oauth::logout(&url, &store))
        .map_err(|e| exit(1, e))?;
    match had {
        true => println!("signed out of `{name}`: its tokens are revoked and forgotten"),
        false => println!("not signed in to `{name}`: nothing to forget"),
    }
    Ok(())
}
