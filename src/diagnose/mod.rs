//! First-failure diagnosis: reads what the collectors produce, in the same
//! streaming pass that redacts it, and says why a boot failed.
//!
//! Each member the bundle writer produces gets a [`Scanner`] (when its path
//! is worth reading): the redacted bytes on their way to the spool pass
//! through it too, so no journal is read twice. A scanner finds candidate
//! lines with one multi-pattern pass ([`ANCHORS`]), takes them apart
//! ([`parse_line`]) and asks the signature catalogue (`signatures/*.sigs`)
//! and the rules (one module per family) for a [`Signal`]: a category, the
//! decisive value (`key`) and a one-line summary.
//! Memory is bounded whatever the member weighs: lines are cut at
//! [`MAX_LINE`] bytes, evidence text at [`MAX_EVIDENCE_CHARS`], and each
//! member keeps at most [`MAX_KEYS_PER_MEMBER`] distinct signals with
//! [`EVIDENCE_PER_KEY`] lines each.
//!
//! The [`Engine`] gathers the scanners of one bundle, adds the bootstrap
//! records' summary, and correlates (`docs/diagnosis.md`): one finding per
//! category and decisive value across every member (the DNS failure seen by
//! release-image, bootkube and their records is one finding); failed
//! services are attached to the finding that explains them; a failure that
//! later recovered is a warning; errors come first, then the earliest cause.
//!
//! The files, each importing only those below it:
//! - `engine.rs`: [`Engine`], correlation, severity, ordering;
//! - `scanner.rs`: [`Scanner`], one member read as it streams, its bounds;
//! - `finding.rs`: `diagnosis.json`'s shape ([`Diagnosis`]) and its headline;
//! - `classify.rs`: [`classify`], a message put to the rules and entries its
//!   anchors name, and which of them speaks;
//! - `anchors.rs`: [`ANCHORS`] and their vectorised finder;
//! - `needles.rs`: the finder's needles, chosen and grouped offline;
//! - `grams.rs`: the commonest 4-byte sequences of a healthy journal;
//! - `rules.rs`: the rules in precedence order with their anchors;
//! - `catalogue.rs`: the signature catalogue (`signatures/*.sigs`, embedded
//!   by `build.rs`): entries parsed, their anchors, a message matched;
//! - `net.rs`, `netconf.rs`, `host.rs`, `tls.rs`, `registry.rs`, `runtime.rs`,
//!   `storage.rs`, `machine.rs`, `node.rs`: one family of rules each;
//! - `files.rs`: the host files read whole (resolv.conf against the
//!   cluster network's routes, `ip addr`, the hostname, rpm-ostree status);
//! - `normalise.rs`: a line of any shape taken apart ([`parse_line`]);
//! - `known.rs`: lines of known facts counted without being read again;
//! - `line.rs`: the text helpers of the rules; `signal.rs`: the vocabulary;
//! - `corpus.rs`, `tests.rs` (tests only): the real corpus scored, the engine.
//!
//! This file is the interface: it declares and re-exports, and holds the
//! small helpers the agent, `inspect` and the fuzz targets call.

mod anchors;
mod catalogue;
mod classify;
mod engine;
mod files;
mod finding;
mod grams;
mod host;
mod known;
mod line;
mod machine;
mod needles;
mod net;
mod netconf;
mod node;
mod normalise;
mod registry;
mod rules;
mod runtime;
mod scanner;
mod signal;
mod storage;
mod tls;

pub use anchors::ANCHORS;
pub use classify::{classify, classify_every_rule};
pub use engine::{Engine, MAX_EVIDENCE_PER_FINDING, MAX_FINDINGS};
pub(crate) use finding::fit_to_show;
pub use finding::{Consequence, Diagnosis, Evidence, Finding, FORMAT_VERSION, HEADLINE_MAX_CHARS};
pub use normalise::{parse as parse_line, Parts, Shape, Stamp};
pub use scanner::{
    Placement, Scanner, EVIDENCE_PER_KEY, MAX_EVIDENCE_CHARS, MAX_KEYS_PER_MEMBER, MAX_LINE,
};
#[cfg(test)]
pub(crate) use signal::Category;
pub(crate) use signal::Severity;

/// What the agent sends as `progress_info`: the last bundle's worst finding
/// when it has one (it says why), else the bootstrap records' digest (read
/// from the host, so it shows even when no bundle was taken). Either is
/// made fit to show ([`fit_to_show`]: no control character, a headline
/// bounded to [`HEADLINE_MAX_CHARS`]); the caller sends it only when it
/// changed.
pub(crate) fn progress_info(
    headline: Option<&str>,
    records_digest: Option<String>,
) -> Option<String> {
    match headline {
        Some(h) => Some(fit_to_show(h, HEADLINE_MAX_CHARS)),
        None => records_digest.map(|d| fit_to_show(&d, crate::records::DIGEST_MAX_CHARS)),
    }
}

/// At most `max` characters of `text`, `…` when cut.
pub(crate) fn shorten_text(text: &str, max: usize) -> String {
    line::shorten(text, max)
}

/// One catalogue entry as `signatures` lists it.
#[derive(Debug, Clone)]
pub struct SignatureRow {
    pub id: &'static str,
    pub category: &'static str,
    pub severity: &'static str,
    pub source: &'static str,
    /// Its first example line.
    pub example: &'static str,
    pub hint: &'static str,
    pub file: &'static str,
}

/// Every entry of the signature catalogue, in the catalogue's order (files
/// by name, entries as written).
pub fn signature_list() -> Vec<SignatureRow> {
    catalogue::Catalogue::get()
        .entries
        .iter()
        .map(|e| SignatureRow {
            id: e.id,
            category: e.category.as_str(),
            severity: e.level.as_str(),
            source: e.source,
            example: e.examples.first().map_or("", |x| x.line),
            hint: e.hint(),
            file: e.file,
        })
        .collect()
}

/// Scans a whole text as one member (tests, fuzzing, offline checks).
#[cfg(test)]
pub(crate) fn scan_text(path: &str, data: &[u8]) -> Option<Scanner> {
    let mut scanner = Scanner::for_member(path)?;
    scanner.feed(data);
    Some(scanner)
}

/// Places a scanner that read a member kept whole.
pub fn whole(scanner: &Scanner) -> Placement {
    Placement {
        archived: true,
        dropped_bytes: 0,
        member_lines: scanner.lines + u64::from(!scanner.partial.is_empty()),
    }
}

#[cfg(test)]
mod corpus;
#[cfg(test)]
mod headlines;
#[cfg(test)]
mod tests;
