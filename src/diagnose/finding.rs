//! What the diagnosis says: `diagnosis.json`'s shape ([`Diagnosis`], its
//! [`Finding`]s with their [`Evidence`] and [`Consequence`]s) and its
//! headline for `progress_info`.

use serde::{Deserialize, Serialize};

use super::signal::{Category, Severity};

pub const FORMAT_VERSION: u32 = 1;
/// Longest `progress_info` headline, in characters.
pub const HEADLINE_MAX_CHARS: usize = 160;

/// One line a finding rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// Member path inside the bundle's top directory.
    pub(crate) path: String,
    /// 1-based line in that member; `None` when the line was cut from the
    /// member by a size cap (it was seen while collecting).
    pub line: Option<u64>,
    /// The line as it is in the bundle (redacted), at most
    /// [`MAX_EVIDENCE_CHARS`](super::MAX_EVIDENCE_CHARS) characters.
    pub text: String,
    /// RFC 3339 time of the line, when it carries one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) at: Option<String>,
    /// The unit that logged it, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) unit: Option<String>,
}

/// A failed service attached to the finding that explains it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Consequence {
    /// The unit, e.g. `bootkube`.
    pub(crate) unit: String,
    /// What failed: `stage mco-bootstrap`, `service`, `unit`.
    pub(crate) what: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) at: Option<String>,
    /// A later run (or the unit) succeeded.
    pub(crate) recovered: bool,
}

/// One diagnosis: `diagnosis.json`'s entries, most likely cause first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub category: Category,
    pub(crate) severity: Severity,
    /// One line with the decisive value.
    pub(crate) summary: String,
    pub(crate) hint: String,
    /// The decisive value alone (host, registry, mount, unit).
    pub(crate) key: String,
    /// Lines that matched, all members together.
    pub(crate) occurrences: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) first_seen: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) last_seen: Option<String>,
    /// Services that failed because of it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) consequences: Vec<Consequence>,
    pub evidence: Vec<Evidence>,
}

/// `diagnosis.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnosis {
    pub(crate) format_version: u32,
    pub findings: Vec<Finding>,
    /// Members read and lines in them.
    pub(crate) members_scanned: u64,
    pub lines_scanned: u64,
    /// Lines holding an anchor that the rules did not read: a flood of
    /// them, past what the bytes earn (docs/diagnosis.md, "What it
    /// costs"). Findings' counts are of lines read.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lines_unread: u64,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's signature
fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Diagnosis {
    /// The worst finding as one line for `progress_info`, which the assisted
    /// UI prints after the stage name: its summary (the decisive value
    /// first), the failed services after it only as far as they fit whole,
    /// made fit to show ([`fit_to_show`]). Only errors and warnings: an
    /// info is not worth the UI's attention.
    pub(crate) fn headline(&self) -> Option<String> {
        let worst = self
            .findings
            .iter()
            .find(|f| f.severity != Severity::Info)?;
        let summary = fit_to_show(&worst.summary, usize::MAX);
        let mut parts = summary.split("; ");
        let mut headline = parts.next().unwrap_or_default().to_owned();
        for part in parts {
            if headline.chars().count() + 2 + part.chars().count() > HEADLINE_MAX_CHARS {
                break;
            }
            headline.push_str("; ");
            headline.push_str(part);
        }
        Some(fit_to_show(&headline, HEADLINE_MAX_CHARS))
    }
}

/// What the agent says about a host, made fit to be shown by the UI or a
/// terminal: every control character (C0, DEL, C1) and bidirectional
/// override escaped (the one escaping function,
/// `collect::report::escape_controls`), markdown emphasis and code marks
/// dropped (the UI prints them raw), runs of blanks made one, and at most
/// `max` characters, cut between words with `…` (a word cut in half reads
/// as another word).
pub(crate) fn fit_to_show(text: &str, max: usize) -> String {
    let escaped = crate::collect::report::escape_controls(text);
    let mut plain = String::with_capacity(escaped.len());
    let mut chars = escaped.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '`' => {}
            '*' if chars.peek() == Some(&'*') => {
                chars.next();
            }
            ' ' if plain.ends_with(' ') => {}
            _ => plain.push(c),
        }
    }
    let plain = plain.trim();
    if plain.chars().count() <= max {
        return plain.to_owned();
    }
    let head: String = plain.chars().take(max.saturating_sub(1)).collect();
    // Back to the last blank when there is one in the second half; a
    // single long token (an image reference) is cut where it must be.
    let cut = head
        .rfind(' ')
        .filter(|&i| head[..i].chars().count() >= max / 2)
        .map_or(head.as_str(), |i| &head[..i]);
    let cut = cut.trim_end_matches([' ', '(', '[', ',', ';', ':', '-']);
    format!("{cut}…")
}
