//! `hc store info`: the project's substrate — which backend, where (a
//! server without its password), its schema version, its latest commit,
//! how many bytes it takes.

use anyhow::{Context as _, Result};

/// `hc store info`.
pub fn info(as_json: bool) -> Result<()> {
    let (_, db) = crate::project::open_store()?;
    let info = db.info().context("cannot read the substrate")?;
    if as_json {
        println!("{}", serde_json::to_string_pretty(&info)?);
        return Ok(());
    }
    println!("backend: {}", info.backend);
    println!("where: {}", crate::style::shown(&info.location));
    println!("schema version: {}", info.schema_version);
    println!("latest commit: {}", info.head);
    println!("size: {}", size(info.bytes));
    Ok(())
}

/// `bytes` as a person reads it.
fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30)),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / f64::from(1u32 << 20)),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} bytes"),
    }
}
