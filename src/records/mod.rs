//! Bootstrap service records: the `/var/log/openshift/<service>.json` files
//! that bootkube, release-image, kubelet's pre-commands and friends write
//! about their own progress (`bootstrap-service-record.sh`), and bootkube's
//! `/opt/openshift/<stage>.done` markers, turned into a per-service timeline
//! and one line naming the worst finding. What a bundle holds of them, and
//! the summary's fields: `docs/bundle.md` (Records summary); how the
//! diagnosis uses them: `docs/diagnosis.md`.
//!
//! - [`parse`]: one record file, streamed, salvaged and folded into runs
//!   and steps;
//! - [`summary`]: every service of a host within a size cap, the digest,
//!   [`summarize_host`];
//! - [`collector`]: the bundle collector that writes the done markers and
//!   `records/summary.json` first, then copies the records raw.
//!
//! Imports point one way: `parse` ← `summary` ← `collector`.

pub(crate) mod collector;
pub(crate) mod parse;
pub(crate) mod summary;

pub use parse::{
    parse_entries, parse_reader, service_from_entries, Entry, Failure, Outcome, Parsed, Run,
    Service, Step, StepKind, MAX_ENTRIES, MAX_ENTRY_BYTES, MAX_ENTRY_TEXT, MAX_FIELD_BYTES,
};
pub use summary::{
    read_record, summarize_host, DoneMarker, Summary, DIGEST_MAX_CHARS, MAX_RECORD_FILES,
    PARSE_LIMIT, RECORDS_DIR, SUMMARY_MAX_BYTES,
};
