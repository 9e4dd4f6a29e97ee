//! The scanner: one member's redacted bytes read as they stream to the
//! archive. Which members are read and how ([`Kind`]), lines assembled
//! across feeds and cut at [`MAX_LINE`], candidate lines found by their
//! anchors and taken apart, the rules asked, and what each member keeps for
//! the engine: bounded hits with evidence, recoveries, units' ends.

use std::collections::BTreeMap;

use super::anchors::{anchors, AnchorFinder};
use super::line;
use super::rules::classify;
use super::signal::{Category, Nature, Signal};
use super::{node, storage};

/// Bytes of one line the rules read; the rest of a longer line is skipped.
pub const MAX_LINE: usize = 4096;
/// Characters of a line kept as evidence.
pub const MAX_EVIDENCE_CHARS: usize = 400;
/// Distinct (category, value) signals one member keeps.
pub const MAX_KEYS_PER_MEMBER: usize = 64;
/// Evidence lines kept per signal and member: the first ones and the last.
pub const EVIDENCE_PER_KEY: usize = 3;
/// Largest records summary parsed (it is generated, normally a few KiB).
const MAX_SUMMARY_BYTES: usize = 4 * 1024 * 1024;

/// How a member is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Log lines: anchors, then rules.
    Log,
    /// `df -h`: every row.
    Df,
    /// `records/summary.json`: kept (bounded) and parsed at the end.
    RecordsSummary,
}

/// Which members are read, and how. Configuration files are left alone:
/// their words (`mirror`, `proxy`) are not events. Member paths are the
/// bundle's own (lower-case extensions by construction).
#[allow(clippy::case_sensitive_file_extension_comparisons)]
fn kind_of(path: &str) -> Option<Kind> {
    if path == "records/summary.json" {
        return Some(Kind::RecordsSummary);
    }
    if path == "mounts/df-h.txt" {
        return Some(Kind::Df);
    }
    let log = path.starts_with("journal/")
        || (path.starts_with("records/") && path.ends_with(".json"))
        || path.starts_with("systemd/failed/")
        || path == "systemd/kubelet-status.txt"
        || path == "system/chronyc-tracking.txt"
        || (path.starts_with("crio/") && path.ends_with(".log"));
    log.then_some(Kind::Log)
}

/// The unit a member speaks for, when it speaks for one.
fn unit_of_path(path: &str) -> Option<String> {
    let name = path
        .strip_prefix("journal/units/")
        .and_then(|p| p.strip_suffix(".log"))
        .or_else(|| {
            path.strip_prefix("records/")
                .and_then(|p| p.strip_suffix(".json"))
        })
        .or_else(|| {
            path.strip_prefix("systemd/failed/")
                .and_then(|p| p.strip_suffix(".log"))
        })?;
    Some(name.trim_end_matches(".service").to_owned())
}

/// The unit a syslog identifier belongs to (`bootkube.sh` runs in
/// bootkube.service, `release-image-download.sh` in release-image.service).
fn unit_of_ident(ident: &str) -> String {
    let ident = ident.trim_end_matches(".sh");
    match ident {
        "release-image-download" => "release-image".to_owned(),
        "approve-csr" => "approve-csr".to_owned(),
        other => other.to_owned(),
    }
}

/// Where a scanned member ended up in the archive, to turn stream line
/// numbers into member line numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// The member is in the archive.
    pub archived: bool,
    /// Bytes of the (redacted) stream dropped from the front by a cap.
    pub dropped_bytes: u64,
    /// Lines of the archived member (a partial last line counts).
    pub member_lines: u64,
}

/// Evidence before placement: where in the stream it was.
#[derive(Debug, Clone)]
pub(super) struct RawEvidence {
    pub(super) line: u64,
    pub(super) offset: u64,
    pub(super) text: String,
    pub(super) at: Option<i64>,
    pub(super) unit: Option<String>,
}

/// One (category, key) in one member.
#[derive(Debug, Clone)]
pub(super) struct Hits {
    pub(super) signal: Signal,
    pub(super) count: u64,
    pub(super) first_at: Option<i64>,
    pub(super) last_at: Option<i64>,
    /// Line of the last problem, and of the last recovery after it.
    pub(super) last_problem_line: u64,
    pub(super) evidence: Vec<RawEvidence>,
}

#[derive(Debug, Clone, Default)]
pub(super) struct UnitMarks {
    pub(super) failed: Option<(i64, RawEvidence)>,
    pub(super) failed_line: u64,
    pub(super) ok_at: Option<i64>,
    pub(super) ok_line: u64,
}

/// Reads one member's redacted bytes as they stream to the archive.
///
/// Cloneable so that a stream read across several bundles (the journal
/// cache, `collect::journal`) is read once: each bundle's engine absorbs a
/// copy, and the next bundle carries on from [`Scanner::resumed`].
#[derive(Debug, Clone)]
pub struct Scanner {
    pub(super) path: String,
    pub(super) kind: Kind,
    unit: Option<String>,
    /// Complete lines seen.
    pub(super) lines: u64,
    /// Bytes seen.
    bytes: u64,
    /// The line being assembled (at most [`MAX_LINE`] bytes of it).
    pub(super) partial: Vec<u8>,
    partial_offset: u64,
    /// The window of an overlong line holds an anchor: keep it.
    partial_frozen: bool,
    pub(super) hits: Vec<Hits>,
    /// Recoveries: (category, key, line, time).
    pub(super) recoveries: Vec<(Category, String, u64, Option<i64>)>,
    pub(super) units: BTreeMap<String, UnitMarks>,
    /// Time of the latest timestamped line, for lines without one.
    last_at: Option<i64>,
    pub(super) document: Vec<u8>,
    pub(super) document_overflow: bool,
    /// Time spent in [`Scanner::feed`], for the manifest's cost figure.
    pub(super) busy: std::time::Duration,
}

impl Scanner {
    /// A scanner for member `path`, or `None` when the member is not read.
    pub fn for_member(path: &str) -> Option<Self> {
        let kind = kind_of(path)?;
        Some(Self {
            path: path.to_owned(),
            kind,
            unit: unit_of_path(path),
            lines: 0,
            bytes: 0,
            partial: Vec::new(),
            partial_offset: 0,
            partial_frozen: false,
            hits: Vec::new(),
            recoveries: Vec::new(),
            units: BTreeMap::new(),
            last_at: None,
            document: Vec::new(),
            document_overflow: false,
            busy: std::time::Duration::ZERO,
        })
    }

    /// A copy that carries on with the same stream in a later bundle:
    /// every line, finding and recovery seen so far kept, its time already
    /// counted in the bundle that read it.
    #[must_use]
    pub fn resumed(&self) -> Self {
        let mut copy = self.clone();
        copy.busy = std::time::Duration::ZERO;
        copy
    }

    /// Lines seen so far (complete ones).
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// The next redacted bytes of the member, in order.
    pub fn feed(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let started = std::time::Instant::now();
        self.feed_inner(data);
        self.busy += started.elapsed();
    }

    fn feed_inner(&mut self, data: &[u8]) {
        if self.kind == Kind::RecordsSummary {
            let room = MAX_SUMMARY_BYTES.saturating_sub(self.document.len());
            self.document_overflow |= data.len() > room;
            self.document
                .extend_from_slice(&data[..data.len().min(room)]);
            self.lines += memchr::memchr_iter(b'\n', data).count() as u64;
            self.bytes += data.len() as u64;
            return;
        }
        let base = self.bytes;
        self.bytes += data.len() as u64;
        let Some(first_nl) = memchr::memchr(b'\n', data) else {
            self.extend_partial(data);
            return;
        };
        self.extend_partial(&data[..first_nl]);
        let line = std::mem::take(&mut self.partial);
        self.lines += 1;
        let offset = self.partial_offset;
        self.complete_line(&line, self.lines, offset);
        self.partial = line;
        self.partial.clear();
        self.partial_frozen = false;
        let rest_start = first_nl + 1;
        let rest = &data[rest_start..];
        if let Some(last_nl) = memchr::memrchr(b'\n', rest) {
            self.block(&rest[..=last_nl], base + rest_start as u64);
            let tail_start = rest_start + last_nl + 1;
            self.partial_offset = base + tail_start as u64;
            self.extend_partial(&data[tail_start..]);
        } else {
            self.partial_offset = base + rest_start as u64;
            self.extend_partial(rest);
        }
    }

    /// Adds to the line being assembled. A line longer than [`MAX_LINE`]
    /// keeps a sliding window of its newest bytes until the window holds an
    /// anchor, then that window: memory stays bounded and a match deep in a
    /// long line is still read.
    fn extend_partial(&mut self, mut data: &[u8]) {
        while !data.is_empty() && !self.partial_frozen {
            let room = MAX_LINE - self.partial.len();
            let take = data.len().min(room);
            self.partial.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.partial.len() == MAX_LINE && !data.is_empty() {
                if anchors().is_match(&self.partial[..]) {
                    self.partial_frozen = true;
                } else {
                    self.partial.drain(..MAX_LINE / 2);
                }
            }
        }
    }

    /// Whole lines (ending in a newline) starting at stream offset `base`.
    fn block(&mut self, block: &[u8], base: u64) {
        if self.kind == Kind::Df {
            let mut start = 0;
            for nl in memchr::memchr_iter(b'\n', block) {
                self.lines += 1;
                let row = &block[start..nl];
                let text = String::from_utf8_lossy(&row[..row.len().min(MAX_LINE)]).into_owned();
                if let Some(signal) = storage::df_row(&text) {
                    self.record(signal, &text, None, self.lines, base + start as u64);
                }
                start = nl + 1;
            }
            return;
        }
        let finder = AnchorFinder::get();
        let mut counted = 0usize;
        let mut pos = 0usize;
        while pos < block.len() {
            let Some(anchor_at) = finder.find(block, pos) else {
                break;
            };
            let start = memchr::memrchr(b'\n', &block[..anchor_at]).map_or(0, |i| i + 1);
            let end =
                memchr::memchr(b'\n', &block[anchor_at..]).map_or(block.len(), |i| anchor_at + i);
            self.lines += memchr::memchr_iter(b'\n', &block[counted..start]).count() as u64;
            counted = start;
            let line = &block[start..end];
            // A very long line: the rules read the part around the match.
            let window = if line.len() <= MAX_LINE {
                line
            } else {
                let at = anchor_at - start;
                let from = at.saturating_sub(MAX_LINE / 2);
                &line[from..(from + MAX_LINE).min(line.len())]
            };
            self.scan_line(window, self.lines + 1, base + start as u64);
            pos = end + 1;
        }
        self.lines += memchr::memchr_iter(b'\n', &block[counted..]).count() as u64;
    }

    /// A line assembled across feeds.
    fn complete_line(&mut self, line: &[u8], number: u64, offset: u64) {
        if self.kind == Kind::Df {
            let text = String::from_utf8_lossy(line).into_owned();
            if let Some(signal) = storage::df_row(&text) {
                self.record(signal, &text, None, number, offset);
            }
            return;
        }
        if anchors().is_match(line) {
            self.scan_line(line, number, offset);
        }
    }

    fn scan_line(&mut self, bytes: &[u8], number: u64, offset: u64) {
        let text = String::from_utf8_lossy(bytes);
        let parts = line::parse(&text);
        if parts.at.is_some() {
            self.last_at = parts.at;
        }
        let at = parts.at.or(self.last_at);
        if let Some((unit, ok)) = node::unit_event(parts.message) {
            let marks = self.units.entry(unit.to_owned()).or_default();
            if ok {
                marks.ok_at = at.or(marks.ok_at);
                marks.ok_line = number;
            } else {
                marks.failed_line = number;
                marks.failed = Some((
                    at.unwrap_or(i64::MAX),
                    RawEvidence {
                        line: number,
                        offset,
                        text: line::shorten(text.trim_end(), MAX_EVIDENCE_CHARS),
                        at,
                        unit: Some(unit.to_owned()),
                    },
                ));
            }
            return;
        }
        let Some(signal) = classify(parts.message) else {
            return;
        };
        let unit = self.unit.clone().or_else(|| parts.ident.map(unit_of_ident));
        if signal.nature == Nature::Recovery {
            if self.recoveries.len() < MAX_KEYS_PER_MEMBER {
                self.recoveries
                    .push((signal.category, signal.key, number, at));
            } else if let Some(last) = self.recoveries.last_mut() {
                *last = (signal.category, signal.key, number, at);
            }
            return;
        }
        let raw = RawEvidence {
            line: number,
            offset,
            text: line::shorten(text.trim_end(), MAX_EVIDENCE_CHARS),
            at,
            unit,
        };
        self.record_raw(signal, raw);
    }

    fn record(&mut self, signal: Signal, text: &str, at: Option<i64>, number: u64, offset: u64) {
        let raw = RawEvidence {
            line: number,
            offset,
            text: line::shorten(text.trim_end(), MAX_EVIDENCE_CHARS),
            at,
            unit: self.unit.clone(),
        };
        self.record_raw(signal, raw);
    }

    fn record_raw(&mut self, signal: Signal, raw: RawEvidence) {
        let index = self
            .hits
            .iter()
            .position(|h| h.signal.category == signal.category && h.signal.key == signal.key);
        let index = match index {
            Some(i) => i,
            None if self.hits.len() < MAX_KEYS_PER_MEMBER => {
                self.hits.push(Hits {
                    signal,
                    count: 0,
                    first_at: None,
                    last_at: None,
                    last_problem_line: 0,
                    evidence: Vec::new(),
                });
                self.hits.len() - 1
            }
            None => return,
        };
        let hits = &mut self.hits[index];
        hits.count += 1;
        hits.first_at = hits.first_at.or(raw.at);
        hits.last_at = raw.at.or(hits.last_at);
        hits.last_problem_line = raw.line;
        if hits.evidence.len() < EVIDENCE_PER_KEY {
            hits.evidence.push(raw);
        } else {
            // Keep the first ones and the latest.
            hits.evidence[EVIDENCE_PER_KEY - 1] = raw;
        }
    }

    /// Flushes the last, unterminated line.
    pub fn finish(&mut self) {
        if self.kind == Kind::RecordsSummary {
            return;
        }
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.lines += 1;
            self.complete_line(&line, self.lines, self.partial_offset);
        }
    }

    /// Lines of the whole stream (a partial last line counts).
    pub(super) fn total_lines(&self) -> u64 {
        self.lines
    }
}
