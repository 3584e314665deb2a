//! The testkit: its fake model and its PostgreSQL cluster.

mod fake;
mod postgres;
