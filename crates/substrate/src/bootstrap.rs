//! [`Substrate::init`]: committing a set of well-known chunks idempotently.
//! The substrate knows none of them — the engine, the agent and the
//! programs each define their own vocabulary, and the host gathers them.

#[cfg(feature = "storage")]
mod init {
    use crate::error::{Error, Result};
    use crate::store::Substrate;
    use crate::types::{ChunkDecl, Commit, Declaration};

    impl Substrate {
        /// Commits `chunks` (each with an explicit id), changing only what
        /// differs from what is stored: a second call with the same chunks
        /// commits nothing and returns `None`; a call with newer
        /// definitions upgrades them. Placements are only ever added.
        pub fn init(&self, mut chunks: Vec<ChunkDecl>) -> Result<Option<Commit>> {
            // Taken on the first call: this read never searches, so is never
            // run again.
            let missing = self.read(|snap| {
                let mut out = Vec::new();
                for mut decl in std::mem::take(&mut chunks) {
                    let Some(id) = decl.id.clone() else {
                        return Err(Error::InvalidRequest(
                            "bootstrap chunks need explicit ids".into(),
                        ));
                    };
                    if let Some(current) = snap.chunk(&id)? {
                        if decl.name.as_ref().is_none_or(|n| *n == current.name) {
                            decl.name = None;
                        }
                        if decl.spec.as_ref().is_none_or(|s| current.spec == *s) {
                            decl.spec = None;
                        }
                        if decl
                            .body
                            .as_ref()
                            .is_none_or(|b| current.body_value() == *b)
                        {
                            decl.body = None;
                        }
                        decl.placements.retain(|p| !current.is_on(&p.scope, p.kind));
                        if decl.name.is_none()
                            && decl.spec.is_none()
                            && decl.body.is_none()
                            && decl.placements.is_empty()
                        {
                            continue;
                        }
                    }
                    out.push(decl);
                }
                Ok(out)
            })?;
            if missing.is_empty() {
                return Ok(None);
            }
            self.commit(Declaration::of(missing), None).map(Some)
        }
    }
}
