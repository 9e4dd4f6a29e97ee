//! The `host_boot` bundle's format, the one thing the agent, its `inspect`
//! tool and the mock service must agree on: the manifest's types and names
//! ([`manifest`]) and a reader for bundles nobody vouches for ([`reader`]).
//! A crate of its own so that the mock reads bundles as the agent writes
//! them without depending on the agent, and the format depends on nothing
//! of either.

pub mod manifest;
pub mod reader;

pub use manifest::*;
