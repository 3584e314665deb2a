//! Computes `BUILD_ID` (see `src/build_id.rs`) over every source file of
//! the crate, so a trampoline from other sources — an older policy format,
//! sandbox or zygote wire format — never passes for this one.

include!("src/build_id.rs");

fn main() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    match of_sources(&src, &version) {
        Ok(id) => println!("cargo:rustc-env=HC_CONTAIN_BUILD_ID={id:016x}"),
        Err(e) => panic!("cannot read the sources of contain: {e}"),
    }
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=build.rs");
}
