//! The support engineer's tools, run by hand on the host: `collect -o FILE` writes
//! the very bundle the agent ships, with no service involved
//! ([`collect`]), and `inspect FILE` prints what matters in a bundle: the
//! manifest as a table, the records digest, failed units, the bootstrap
//! services' timeline with durations and failures, and the redaction counts
//! ([`inspect`]); `inspect` on several bundles reads a cluster's hosts
//! together ([`cluster`]).
//!
//! `signatures` lists the diagnosis's signature catalogue ([`signatures`]).
//!
//! `config check` resolves the configuration `run` would use, strictly,
//! and prints every setting with where its value came from
//! ([`config_check`]).
//!
//! Unlike `run`, these are interactive tools: a runtime failure prints the
//! error chain and exits 1 (usage errors exit 2, from clap).

pub(crate) mod args;
pub(crate) mod cluster;
pub(crate) mod collect;
pub(crate) mod config_check;
pub mod inspect;
pub(crate) mod signatures;

pub use cluster::inspect_command;
pub(crate) use collect::{collect_command, CollectArgs};
pub(crate) use config_check::config_check_command;
pub use inspect::{
    inspect, inspect_from, printable, InspectArgs, INSPECT_JSON_VERSION, MAX_MEMBERS,
};
pub(crate) use signatures::{signatures_command, SignaturesArgs};
