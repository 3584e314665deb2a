//! The `mcp` service on its own, for this crate's tests (`tests/it`): the
//! engine starts it as `mcp-test program mcp`, as `hc program mcp`.

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args != ["program", "mcp"] {
        eprintln!("mcp-test: program mcp");
        return std::process::ExitCode::from(2);
    }
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        eprintln!("mcp-test: cannot start the async runtime");
        return std::process::ExitCode::from(1);
    };
    let outcome = rt.block_on((mcp::BUILTINS[0].main)());
    rt.shutdown_background();
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-test: {e}");
            std::process::ExitCode::from(1)
        }
    }
}
