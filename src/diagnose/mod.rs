//! First-failure diagnosis: reads what the collectors produce, in the same
//! streaming pass that redacts it, and says why a boot failed.
//!
//! Each member the bundle writer produces gets a [`Scanner`] (when its path
//! is worth reading): the redacted bytes on their way to the spool pass
//! through it too, so no journal is read twice. A scanner finds candidate
//! lines with one multi-pattern pass ([`ANCHORS`]), takes them apart
//! ([`line::parse`]) and asks the rules (one module per family) for a
//! [`Signal`]: a category, the decisive value (`key`) and a one-line summary.
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

mod line;
mod net;
mod node;
mod registry;
mod signal;
mod storage;
mod tls;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use aho_corasick::AhoCorasick;
use serde::{Deserialize, Serialize};

use crate::records::{Outcome, Summary};

pub use line::{parse as parse_line, Parts};
pub use signal::{Category, Nature, Severity, Signal};

/// This boot's whole journal, which repeats every unit member's lines.
const WHOLE_JOURNAL: &str = "journal/this-boot.log";

/// Name of the member, relative to the bundle's top directory.
pub const DIAGNOSIS_NAME: &str = "diagnosis.json";
pub const FORMAT_VERSION: u32 = 1;
/// Bytes of one line the rules read; the rest of a longer line is skipped.
pub const MAX_LINE: usize = 4096;
/// Characters of a line kept as evidence.
pub const MAX_EVIDENCE_CHARS: usize = 400;
/// Distinct (category, value) signals one member keeps.
pub const MAX_KEYS_PER_MEMBER: usize = 64;
/// Evidence lines kept per signal and member: the first ones and the last.
pub const EVIDENCE_PER_KEY: usize = 3;
/// Evidence lines kept per finding in the output.
pub const MAX_EVIDENCE_PER_FINDING: usize = 8;
/// Findings in the output.
pub const MAX_FINDINGS: usize = 32;
/// Longest `progress_info` headline, in characters.
pub const HEADLINE_MAX_CHARS: usize = 200;
/// Largest records summary parsed (it is generated, normally a few KiB).
const MAX_SUMMARY_BYTES: usize = 4 * 1024 * 1024;

/// Rules in precedence order: a line that matches several is the first's
/// (a lookup failing through a mirror is a mirror problem; an expired
/// certificate is a clock problem before it is a trust problem).
const RULES: &[fn(&str) -> Option<Signal>] = &[
    registry::mirror,
    tls::clock,
    tls::trust,
    net::proxy,
    net::dns,
    registry::auth,
    storage::full,
    storage::crio_storage,
    storage::etcd,
    net::mcs,
    net::api,
    net::link,
    registry::release,
    node::csr,
    node::selinux,
];

/// The signal of one message (the part after the journal prefix).
pub fn classify(message: &str) -> Option<Signal> {
    RULES.iter().find_map(|rule| rule(message))
}

/// Byte strings at least one of which every rule needs; lines without any
/// are not looked at further. Case-sensitive: these are fixed texts of the
/// programs that print them.
pub const ANCHORS: &[&str] = &[
    "lookup ",
    "resolve host",
    "name resolution",
    "Name or service not known",
    "proxyconnect",
    "Proxy Authentication",
    "from proxy",
    ":6443",
    ":22623",
    "GET result: OK",
    "Unable to connect to the server",
    "Successfully registered node",
    "Link is ",
    "link disconnected",
    "link connected",
    "network is unreachable",
    "no route to host",
    "x509",
    "certificate is not trusted",
    "local issuer certificate",
    "signed certificate in certificate chain",
    "System clock wrong",
    "of NTP time",
    "Can't synchronise",
    "unauthorized",
    "Unauthorized",
    "resource is denied",
    "invalid username/password",
    "Mirrors also failed",
    "registries.conf",
    "manifest unknown",
    "exec format error",
    "does not match",
    "no image found in manifest list",
    "no space left on device",
    "fdatasync",
    "took too long",
    "slow disk",
    "sync duration of",
    "layer not known",
    "image not known",
    "overlay mount",
    "storage corruption",
    "storage/overlay",
    "not signed",
    "Pending",
    "avc:  denied",
    ".service: Failed with result",
    ".service: Deactivated successfully",
    ".service: Succeeded",
];

fn anchors() -> &'static AhoCorasick {
    static ANCHORS_AC: OnceLock<AhoCorasick> = OnceLock::new();
    // A contiguous NFA: a few KiB where the default DFA takes about 1 MiB
    // of the agent's RSS; the SIMD prefilter does the searching either way.
    ANCHORS_AC.get_or_init(|| {
        aho_corasick::AhoCorasickBuilder::new()
            .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
            .build(ANCHORS)
            .expect("fixed patterns build")
    })
}

/// Finds the next anchor in a block of lines at the speed of a vectorised
/// scan. The automaton above has no useful prefilter for 50 patterns (its
/// Teddy fingerprint is their first bytes, shared by most log text) and
/// walks every byte at about 100 MB/s; here aho-corasick's packed (Teddy)
/// searcher looks for one 4-byte needle of each anchor, the one made of the
/// bytes least common in logs, and a needle found is checked against the
/// anchors it was taken from.
struct AnchorFinder {
    searcher: Option<aho_corasick::packed::Searcher>,
    /// For each needle (pattern id): the anchors holding it and where.
    owners: Vec<Vec<(&'static [u8], usize)>>,
}

const NEEDLE: usize = 4;

/// How common a byte is in log text, roughly: needles avoid blanks, the
/// most frequent letters, digits and the punctuation of timestamps.
fn commonness(b: u8) -> u32 {
    match b {
        b' ' => 10,
        b'e' | b't' | b'a' | b'o' | b'i' | b'n' | b's' | b'r' => 9,
        b'a'..=b'z' => 7,
        b'0'..=b'9' | b'-' | b'.' | b'/' | b':' | b'=' | b'"' => 6,
        b'A'..=b'Z' => 3,
        _ => 2,
    }
}

impl AnchorFinder {
    fn get() -> &'static AnchorFinder {
        static FINDER: OnceLock<AnchorFinder> = OnceLock::new();
        FINDER.get_or_init(|| {
            let mut needles: Vec<&'static [u8]> = Vec::new();
            let mut owners: Vec<Vec<(&'static [u8], usize)>> = Vec::new();
            for anchor in ANCHORS {
                let anchor = anchor.as_bytes();
                let at = (0..=anchor.len() - NEEDLE)
                    .min_by_key(|&i| {
                        anchor[i..i + NEEDLE]
                            .iter()
                            .map(|&b| commonness(b))
                            .sum::<u32>()
                    })
                    .expect("anchors are at least a needle long");
                let needle = &anchor[at..at + NEEDLE];
                if let Some(id) = needles.iter().position(|n| *n == needle) {
                    owners[id].push((anchor, at));
                } else {
                    needles.push(needle);
                    owners.push(vec![(anchor, at)]);
                }
            }
            let searcher = aho_corasick::packed::Config::new()
                .heuristic_pattern_limits(false)
                .builder()
                .extend(&needles)
                .build();
            AnchorFinder { searcher, owners }
        })
    }

    /// Start of the first anchor in `block[from..]`.
    fn find(&self, block: &[u8], mut from: usize) -> Option<usize> {
        let Some(searcher) = &self.searcher else {
            // No Teddy on this CPU: the automaton.
            let m = anchors().find(aho_corasick::Input::new(block).span(from..block.len()))?;
            return Some(m.start());
        };
        loop {
            let m = searcher.find_in(
                block,
                aho_corasick::Span {
                    start: from,
                    end: block.len(),
                },
            )?;
            let at = m.start();
            for &(anchor, offset) in &self.owners[m.pattern().as_usize()] {
                if at >= offset && block[at - offset..].starts_with(anchor) {
                    return Some(at - offset);
                }
            }
            // Needles are all NEEDLE bytes long and distinct: the next one
            // may start at the next byte.
            from = at + 1;
        }
    }
}

/// How a member is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
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

/// One line a finding rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// Member path inside the bundle's top directory.
    pub path: String,
    /// 1-based line in that member; `None` when the line was cut from the
    /// member by a size cap (it was seen while collecting).
    pub line: Option<u64>,
    /// The line as it is in the bundle (redacted), at most
    /// [`MAX_EVIDENCE_CHARS`] characters.
    pub text: String,
    /// RFC 3339 time of the line, when it carries one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// The unit that logged it, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

/// A failed service attached to the finding that explains it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Consequence {
    /// The unit, e.g. `bootkube`.
    pub unit: String,
    /// What failed: `stage mco-bootstrap`, `service`, `unit`.
    pub what: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// A later run (or the unit) succeeded.
    pub recovered: bool,
}

/// One diagnosis: `diagnosis.json`'s entries, most likely cause first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub category: Category,
    pub severity: Severity,
    /// One line with the decisive value.
    pub summary: String,
    pub hint: String,
    /// The decisive value alone (host, registry, mount, unit).
    pub key: String,
    /// Lines that matched, all members together.
    pub occurrences: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_seen: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_seen: Option<String>,
    /// Services that failed because of it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub consequences: Vec<Consequence>,
    pub evidence: Vec<Evidence>,
}

/// `diagnosis.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnosis {
    pub format_version: u32,
    pub findings: Vec<Finding>,
    /// Members read and lines in them.
    pub members_scanned: u64,
    pub lines_scanned: u64,
}

impl Diagnosis {
    /// The worst finding as one line for `progress_info`: `severity
    /// category: summary`, at most [`HEADLINE_MAX_CHARS`] characters. Only
    /// errors and warnings: an info is not worth the UI's attention.
    pub fn headline(&self) -> Option<String> {
        let worst = self
            .findings
            .iter()
            .find(|f| f.severity != Severity::Info)?;
        // The cause first; the failed services after it only as far as they
        // fit whole, so the line never ends in half a unit name.
        let mut parts = worst.summary.split("; ");
        let mut headline = format!(
            "{} {}: {}",
            worst.severity.as_str(),
            worst.category.as_str(),
            parts.next().unwrap_or_default()
        );
        for part in parts {
            if headline.chars().count() + 2 + part.chars().count() > HEADLINE_MAX_CHARS {
                break;
            }
            headline.push_str("; ");
            headline.push_str(part);
        }
        Some(line::shorten(&headline, HEADLINE_MAX_CHARS))
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
struct RawEvidence {
    line: u64,
    offset: u64,
    text: String,
    at: Option<i64>,
    unit: Option<String>,
}

/// One (category, key) in one member.
#[derive(Debug, Clone)]
struct Hits {
    signal: Signal,
    count: u64,
    first_at: Option<i64>,
    last_at: Option<i64>,
    /// Line of the last problem, and of the last recovery after it.
    last_problem_line: u64,
    evidence: Vec<RawEvidence>,
}

#[derive(Debug, Clone, Default)]
struct UnitMarks {
    failed: Option<(i64, RawEvidence)>,
    failed_line: u64,
    ok_at: Option<i64>,
    ok_line: u64,
}

/// Reads one member's redacted bytes as they stream to the archive.
///
/// Cloneable so that a stream read across several bundles (the journal
/// cache, `collect::journal`) is read once: each bundle's engine absorbs a
/// copy, and the next bundle carries on from [`Scanner::resumed`].
#[derive(Debug, Clone)]
pub struct Scanner {
    path: String,
    kind: Kind,
    unit: Option<String>,
    /// Complete lines seen.
    lines: u64,
    /// Bytes seen.
    bytes: u64,
    /// The line being assembled (at most [`MAX_LINE`] bytes of it).
    partial: Vec<u8>,
    partial_offset: u64,
    /// The window of an overlong line holds an anchor: keep it.
    partial_frozen: bool,
    hits: Vec<Hits>,
    /// Recoveries: (category, key, line, time).
    recoveries: Vec<(Category, String, u64, Option<i64>)>,
    units: BTreeMap<String, UnitMarks>,
    /// Time of the latest timestamped line, for lines without one.
    last_at: Option<i64>,
    document: Vec<u8>,
    document_overflow: bool,
    /// Time spent in [`Scanner::feed`], for the manifest's cost figure.
    busy: std::time::Duration,
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
    fn total_lines(&self) -> u64 {
        self.lines
    }
}

/// One finding being built across members.
#[derive(Debug, Clone)]
struct Acc {
    signal: Signal,
    count: u64,
    first_at: Option<i64>,
    last_at: Option<i64>,
    evidence: Vec<(Option<i64>, usize, Evidence)>,
    /// A recovery came after the last problem.
    recovered: bool,
    /// Some problem came after every recovery (or there was none).
    unrecovered_somewhere: bool,
    consequences: Vec<(Consequence, Option<i64>)>,
    units: Vec<String>,
    /// Lines in `journal/this-boot.log`, which repeats the unit members:
    /// occurrences are the larger of the two counts.
    count_whole_journal: u64,
}

/// Gathers one bundle's scanners and correlates them.
#[derive(Debug, Default)]
pub struct Engine {
    accs: Vec<Acc>,
    /// Recoveries by category, with their latest time.
    recoveries: Vec<(Category, String, Option<i64>)>,
    units: BTreeMap<String, UnitMarks>,
    /// Unit, time, the `Failed with result` line, recovered in its member.
    unit_failures: Vec<(String, Option<i64>, Evidence, bool)>,
    summary: Option<Summary>,
    members: u64,
    lines: u64,
    seq: usize,
    /// Time the scanners spent reading lines.
    scan_time: std::time::Duration,
}

impl Engine {
    pub fn new() -> Self {
        Self::default()
    }

    /// A scanner for the member, when it is one the engine reads.
    pub fn scanner(&self, path: &str) -> Option<Scanner> {
        Scanner::for_member(path)
    }

    /// Takes in a finished scanner.
    pub fn absorb(&mut self, mut scanner: Scanner, placement: Placement) {
        let started = std::time::Instant::now();
        scanner.finish();
        self.scan_time += scanner.busy + started.elapsed();
        self.members += 1;
        self.lines += scanner.total_lines();
        if scanner.kind == Kind::RecordsSummary {
            if !scanner.document_overflow {
                self.summary = serde_json::from_slice(&scanner.document).ok();
            }
            return;
        }
        let total = scanner.total_lines();
        let place = |raw: &RawEvidence| -> Evidence {
            let line = if !placement.archived || raw.offset < placement.dropped_bytes {
                None
            } else if placement.dropped_bytes == 0 {
                Some(raw.line)
            } else {
                // Lines after this one are all in the kept part.
                placement
                    .member_lines
                    .checked_sub(total.saturating_sub(raw.line))
                    .filter(|&l| l > 0)
            };
            Evidence {
                path: scanner.path.clone(),
                line,
                text: raw.text.clone(),
                at: raw.at.map(format_time),
                unit: raw.unit.clone(),
            }
        };
        for (unit, marks) in &scanner.units {
            let entry = self.units.entry(unit.clone()).or_default();
            if let Some(ok) = marks.ok_at {
                entry.ok_at = Some(entry.ok_at.map_or(ok, |o| o.max(ok)));
            }
            if let Some((at, raw)) = &marks.failed {
                let recovered_here = marks.ok_line > marks.failed_line;
                self.unit_failures.push((
                    unit.clone(),
                    (*at != i64::MAX).then_some(*at),
                    place(raw),
                    recovered_here,
                ));
            }
        }
        for (category, key, line, at) in &scanner.recoveries {
            self.recoveries.push((*category, key.clone(), *at));
            for hits in &scanner.hits {
                if hits.signal.category == *category
                    && (key == "*" || *key == hits.signal.key)
                    && *line > hits.last_problem_line
                {
                    if let Some(acc) = self.find_acc(*category, &hits.signal.key) {
                        acc.recovered = true;
                    }
                }
            }
        }
        for hits in &scanner.hits {
            let recovered_in_member = scanner.recoveries.iter().any(|(c, k, l, _)| {
                *c == hits.signal.category
                    && (k == "*" || *k == hits.signal.key)
                    && *l > hits.last_problem_line
            });
            let seq = self.seq;
            self.seq += 1;
            let whole_journal = scanner.path == WHOLE_JOURNAL;
            let acc = self.acc_for(&hits.signal);
            if whole_journal {
                acc.count_whole_journal += hits.count;
            } else {
                acc.count += hits.count;
            }
            acc.first_at = min_opt(acc.first_at, hits.first_at);
            acc.last_at = max_opt(acc.last_at, hits.last_at);
            if recovered_in_member {
                acc.recovered = true;
            } else {
                acc.unrecovered_somewhere = true;
            }
            for raw in &hits.evidence {
                let ev = place(raw);
                if let Some(unit) = &ev.unit {
                    if !acc.units.contains(unit) {
                        acc.units.push(unit.clone());
                    }
                }
                // journal/this-boot.log repeats every unit's lines: the
                // unit's own member is the better reference.
                if let Some(same) = acc.evidence.iter_mut().find(|(_, _, e)| e.text == ev.text) {
                    if same.2.path == WHOLE_JOURNAL && !whole_journal {
                        *same = (raw.at, seq, ev);
                    }
                    continue;
                }
                acc.evidence.push((raw.at, seq, ev));
            }
        }
    }

    fn find_acc(&mut self, category: Category, key: &str) -> Option<&mut Acc> {
        self.accs
            .iter_mut()
            .find(|a| a.signal.category == category && a.signal.key == key)
    }

    fn acc_for(&mut self, signal: &Signal) -> &mut Acc {
        let found = self
            .accs
            .iter()
            .position(|a| a.signal.category == signal.category && a.signal.key == signal.key);
        let i = if let Some(i) = found {
            i
        } else {
            {
                self.accs.push(Acc {
                    signal: signal.clone(),
                    count: 0,
                    first_at: None,
                    last_at: None,
                    evidence: Vec::new(),
                    recovered: false,
                    unrecovered_somewhere: false,
                    consequences: Vec::new(),
                    units: Vec::new(),
                    count_whole_journal: 0,
                });
                self.accs.len() - 1
            }
        };
        &mut self.accs[i]
    }

    /// Time the scanners spent reading lines (their share of the bundle's
    /// CPU: the scan runs on the collecting thread, which is busy meanwhile).
    pub fn scan_time(&self) -> std::time::Duration {
        self.scan_time
    }

    /// Correlates and orders everything absorbed.
    pub fn finish(mut self) -> Diagnosis {
        self.attach_records();
        self.attach_unit_failures();
        let mut findings: Vec<(Severity, Option<i64>, usize, Finding)> = self
            .accs
            .into_iter()
            .enumerate()
            .map(|(i, acc)| {
                let severity = severity(&acc);
                let first = min_opt(
                    acc.first_at,
                    acc.consequences.iter().filter_map(|(_, t)| *t).min(),
                );
                (severity, first, i, finding(acc, severity))
            })
            .collect();
        findings.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| match (a.1, b.1) {
                    (Some(x), Some(y)) => x.cmp(&y),
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (None, None) => std::cmp::Ordering::Equal,
                })
                .then_with(|| a.2.cmp(&b.2))
        });
        findings.truncate(MAX_FINDINGS);
        Diagnosis {
            format_version: FORMAT_VERSION,
            findings: findings.into_iter().map(|f| f.3).collect(),
            members_scanned: self.members,
            lines_scanned: self.lines,
        }
    }

    /// Failed bootstrap services (records) become consequences of the
    /// finding their error message names, or of the earliest finding seen
    /// in that unit before the failure, or `other` findings.
    fn attach_records(&mut self) {
        let Some(summary) = self.summary.take() else {
            return;
        };
        for service in &summary.services {
            let runs = service.runs.len();
            for failure in &service.failures {
                let recovered = failure.run < runs || service.status == Outcome::Success;
                let at_text = failure.at.clone();
                let at = at_text.as_deref().and_then(line::parse_rfc3339);
                let consequence = Consequence {
                    unit: service.service.clone(),
                    what: failure.what.clone(),
                    at: at_text,
                    recovered,
                };
                let message = failure.error_message.as_deref().unwrap_or_default();
                let signal = message
                    .lines()
                    .filter_map(|l| classify(line::parse(l).message))
                    .find(|s| s.nature != Nature::Recovery);
                if let Some(signal) = signal {
                    let acc = self.acc_for(&signal);
                    acc.first_at = min_opt(acc.first_at, at);
                    push_consequence(acc, consequence, at);
                    continue;
                }
                if let Some(acc) = self.cause_in_unit(&service.service, at) {
                    push_consequence(acc, consequence, at);
                    continue;
                }
                let last_line = message
                    .lines()
                    .map(|l| line::parse(l).message)
                    .find(|m| m.starts_with("Error") || m.contains("error"))
                    .or_else(|| message.lines().next().map(|l| line::parse(l).message))
                    .unwrap_or("no error message recorded");
                let signal = Signal::new(
                    Category::Other,
                    format!("{} {}", service.service, failure.what),
                    format!(
                        "{} {} failed: {}",
                        service.service,
                        failure.what,
                        line::shorten(last_line, 160)
                    ),
                    Nature::Transient,
                );
                let acc = self.acc_for(&signal);
                acc.first_at = min_opt(acc.first_at, at);
                push_consequence(acc, consequence, at);
            }
        }
    }

    /// Earliest non-`other` finding with evidence from `unit` no later than `at`.
    fn cause_in_unit(&mut self, unit: &str, at: Option<i64>) -> Option<&mut Acc> {
        self.accs
            .iter_mut()
            .filter(|a| a.signal.category != Category::Other && a.units.iter().any(|u| u == unit))
            .filter(|a| match (a.first_at, at) {
                (Some(first), Some(at)) => first <= at,
                _ => true,
            })
            .min_by_key(|a| a.first_at.unwrap_or(i64::MAX))
    }

    /// `X.service: Failed with result` with no later success of X.
    fn attach_unit_failures(&mut self) {
        let failures = std::mem::take(&mut self.unit_failures);
        let mut seen: Vec<String> = Vec::new();
        for (unit, at, evidence, recovered_here) in failures {
            if seen.contains(&unit) {
                continue;
            }
            seen.push(unit.clone());
            let recovered = recovered_here
                || match (at, self.units.get(&unit).and_then(|m| m.ok_at)) {
                    (Some(at), Some(ok)) => ok > at,
                    _ => false,
                };
            // Already explained by the records.
            let explained = self
                .accs
                .iter()
                .any(|a| a.consequences.iter().any(|(c, _)| c.unit == unit));
            if explained {
                continue;
            }
            let consequence = Consequence {
                unit: unit.clone(),
                what: "unit".into(),
                at: at.map(format_time),
                recovered,
            };
            if let Some(acc) = self.cause_in_unit(&unit, at) {
                push_consequence(acc, consequence, at);
                continue;
            }
            let category = if unit == "NetworkManager-wait-online" {
                Category::NetworkLink
            } else {
                Category::Other
            };
            let signal = Signal::new(
                category,
                unit.clone(),
                format!(
                    "{unit}.service failed ({})",
                    line::parse(&evidence.text).message
                ),
                Nature::Transient,
            );
            let acc = self.acc_for(&signal);
            acc.first_at = min_opt(acc.first_at, at);
            acc.count += 1;
            acc.unrecovered_somewhere = true;
            acc.evidence.push((at, usize::MAX, evidence));
            push_consequence(acc, consequence, at);
        }
    }
}

fn push_consequence(acc: &mut Acc, consequence: Consequence, at: Option<i64>) {
    if !acc
        .consequences
        .iter()
        .any(|(c, _)| c.unit == consequence.unit && c.what == consequence.what)
    {
        acc.consequences.push((consequence, at));
    }
}

/// How long a transient signal must keep coming, unrecovered, to be an
/// error on its own (seconds), and how many lines it takes.
fn persistence(category: Category) -> Option<(i64, u64)> {
    match category {
        Category::ApiUnreachable | Category::CsrPending => Some((20 * 60, 3)),
        Category::DnsResolution
        | Category::Proxy
        | Category::McsUnreachable
        | Category::NetworkLink
        | Category::ClockSkew => Some((5 * 60, 3)),
        Category::EtcdSlowDisk => Some((10 * 60, 20)),
        _ => None,
    }
}

fn severity(acc: &Acc) -> Severity {
    let count = acc.count.max(acc.count_whole_journal);
    if acc.consequences.iter().any(|(c, _)| !c.recovered) {
        return Severity::Error;
    }
    if !acc.consequences.is_empty() {
        return Severity::Warning;
    }
    let recovered = acc.recovered && !acc.unrecovered_somewhere;
    let benign = matches!(
        acc.signal.category,
        Category::ApiUnreachable | Category::CsrPending
    );
    if recovered {
        // A retry that succeeded and failed nothing: every install has some.
        return Severity::Info;
    }
    match acc.signal.nature {
        Nature::Fatal if !acc.recovered => Severity::Error,
        Nature::Fatal | Nature::Recovery => Severity::Warning,
        Nature::Transient => {
            let lasting = persistence(acc.signal.category).is_some_and(|(secs, min_count)| {
                let span = match (acc.first_at, acc.last_at) {
                    (Some(a), Some(b)) => b - a,
                    _ => 0,
                };
                span >= secs && count >= min_count && !acc.recovered
            });
            if lasting {
                Severity::Error
            } else if benign {
                Severity::Info
            } else {
                Severity::Warning
            }
        }
    }
}

fn finding(mut acc: Acc, severity: Severity) -> Finding {
    acc.count = acc.count.max(acc.count_whole_journal);
    let mut summary = acc.signal.summary.clone();
    // One phrase per unit, in time order, naming the failed step if any.
    let mut ordered: Vec<&(Consequence, Option<i64>)> = acc.consequences.iter().collect();
    ordered.sort_by_key(|(_, at)| at.unwrap_or(i64::MAX));
    let mut phrases: Vec<(String, String)> = Vec::new();
    for (c, _) in ordered {
        if phrases.iter().any(|(unit, _)| *unit == c.unit) {
            continue;
        }
        let step = acc
            .consequences
            .iter()
            .map(|(c2, _)| c2)
            .find(|c2| c2.unit == c.unit && c2.what != "service" && c2.what != "unit")
            .map(|c2| format!(" ({})", c2.what))
            .unwrap_or_default();
        let how = if c.recovered {
            "failed, then recovered"
        } else {
            "failed"
        };
        phrases.push((c.unit.clone(), format!("{}{step} {how}", c.unit)));
    }
    if !phrases.is_empty() && acc.signal.category != Category::Other {
        let list: Vec<String> = phrases.into_iter().map(|(_, p)| p).collect();
        summary = format!("{summary}; {}", list.join("; "));
    }
    let mut evidence = acc.evidence;
    evidence.sort_by(|a, b| {
        a.0.unwrap_or(i64::MAX)
            .cmp(&b.0.unwrap_or(i64::MAX))
            .then(a.1.cmp(&b.1))
    });
    // Spread the kept evidence over members: one per member first.
    let mut kept: Vec<Evidence> = Vec::new();
    let mut rest: Vec<Evidence> = Vec::new();
    for (_, _, e) in evidence {
        if kept.iter().any(|k| k.path == e.path) {
            rest.push(e);
        } else {
            kept.push(e);
        }
    }
    kept.extend(rest);
    kept.truncate(MAX_EVIDENCE_PER_FINDING);
    Finding {
        category: acc.signal.category,
        severity,
        summary: line::shorten(&summary, 300),
        hint: acc.signal.category.hint().to_owned(),
        key: acc.signal.key,
        occurrences: acc.count,
        first_seen: acc.first_at.map(format_time),
        last_seen: acc.last_at.map(format_time),
        consequences: acc.consequences.into_iter().map(|(c, _)| c).collect(),
        evidence: kept,
    }
}

fn min_opt(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn max_opt(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn format_time(secs: i64) -> String {
    let t = u64::try_from(secs)
        .ok()
        .map(|s| std::time::UNIX_EPOCH + std::time::Duration::from_secs(s));
    t.map_or_else(
        || secs.to_string(),
        |t| humantime::format_rfc3339_seconds(t).to_string(),
    )
}

/// What the agent sends as `progress_info`: the last bundle's worst finding
/// when it has one (it says why), else the bootstrap records' digest (read
/// from the host, so it shows even when no bundle was taken). Bounded to
/// [`HEADLINE_MAX_CHARS`]; the caller sends it only when it changed.
pub fn progress_info(headline: Option<&str>, records_digest: Option<String>) -> Option<String> {
    headline
        .map(|h| line::shorten(h, HEADLINE_MAX_CHARS))
        .or(records_digest)
}

/// At most `max` characters of `text`, `…` when cut.
pub fn shorten_text(text: &str, max: usize) -> String {
    line::shorten(text, max)
}

/// Scans a whole text as one member (tests, fuzzing, offline checks).
pub fn scan_text(path: &str, data: &[u8]) -> Option<Scanner> {
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
mod tests;
