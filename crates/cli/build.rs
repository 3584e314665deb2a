//! `hc` is linked as a position-dependent executable (`-no-pie`): it
//! starts once per program run (every tool call, hook and sub-agent is a
//! run of `hc program NAME`), and as a PIE its 42,000 relative relocations
//! dirty some 190 pages of `.data.rel.ro` at every start — 0.5–0.9 ms of
//! each run here. Linked at a fixed address, those pages are only mapped
//! when read. The cost: the executable's own image is not randomized
//! (its libraries, heap, stacks and mmaps still are); its code is safe
//! Rust, and every program it runs is contained. See ARCHITECTURE.md.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bin=hc=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
