//! Safety, round three (decision 19, principals): every commit has an
//! author and authority follows it. Each harm the review found is tried
//! here as it was found, through `hc` as a person runs it; each test
//! failed before its fix.

mod editor;
mod local;
mod models;
mod page;
mod team;
