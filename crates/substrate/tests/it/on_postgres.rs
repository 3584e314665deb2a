//! The same tests on PostgreSQL: the modules that make their stores
//! through `common` run again here, where `common` makes them on the test
//! process's PostgreSQL cluster (a schema each).

pub mod common {
    pub use crate::common::postgres::{empty, fresh};
    #[allow(unused_imports)]
    pub use crate::common::{
        commit, commit_json, everything, member_ids, prompt, read, session, vocabulary,
    };
}
#[path = "bad_input.rs"]
mod bad_input;
#[path = "commits.rs"]
mod commits;
#[path = "model.rs"]
mod model;
#[path = "reads.rs"]
mod reads;
#[path = "specs.rs"]
mod specs;
