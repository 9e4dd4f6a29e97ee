//! The scanner: one member's redacted bytes read as they stream to the
//! archive. Which members are read and how ([`Kind`]), lines assembled
//! across feeds and cut at [`MAX_LINE`], candidate lines found by their
//! anchors and taken apart, the rules asked, and what each member keeps for
//! the engine: bounded hits with evidence, recoveries, units' ends.

use std::collections::BTreeMap;

use super::anchors::{AnchorFinder, Found, Memo, Repeating};
use super::classify::classify_with;
use super::known::{self, FactKey, Known};
use super::line;
use super::normalise::{self, Shape};
use super::rules::{Dispatch, UNIT_EVENT_BIT};
use super::signal::{Category, Nature, Signal};
use super::{files, node, storage};

/// Lines after a record that are read as its continuation (a message
/// wrapped by a terminal or a tracker).
const MAX_CONTINUATIONS: u8 = 2;

/// Bytes of one line the rules read; the rest of a longer line is skipped.
pub const MAX_LINE: usize = 4096;
/// Characters of a line kept as evidence.
pub const MAX_EVIDENCE_CHARS: usize = 400;
/// Distinct (category, value) signals one member keeps.
pub const MAX_KEYS_PER_MEMBER: usize = 64;
/// Evidence lines kept per signal and member: the first ones and the last.
pub const EVIDENCE_PER_KEY: usize = 3;
/// An anchor's first hit lines in a member are always read, whatever
/// else floods it: a rarer cause, or the recovery after a flood of
/// failures, has anchors of its own.
const FREE_READS_PER_ANCHOR: u8 = 4;
/// Past those, input earns reads: one per this many bytes scanned, so the
/// rules' cost follows the bytes (as gzip's does), not what the host logs.
const READ_EARN_BYTES: u64 = 16 * 1024;
/// Reads saved up at most, and a member's starting allowance.
const READ_BURST: u64 = 1024;
/// What counting a line of a known fact (`known.rs`) costs of the read
/// budget's credit: a 32nd of a read, about what it costs against a read.
const KNOWN_COST: u64 = READ_EARN_BYTES / 32;
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
    /// A host file read whole when the engine correlates (`files.rs`):
    /// resolv.conf, the hostname, routes, addresses, rpm-ostree's status.
    HostFile,
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
    if files::is_host_file(path) {
        return Some(Kind::HostFile);
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
    unit_name_of_ident(ident).to_owned()
}

fn unit_name_of_ident(ident: &str) -> &str {
    match ident.trim_end_matches(".sh") {
        "release-image-download" => "release-image",
        other => other,
    }
}

/// A record holding an anchor, with the lines that continue it so far.
/// Its buffers are reused from record to record.
#[derive(Debug, Clone, Default)]
struct Pending {
    /// It holds a record.
    active: bool,
    head: String,
    continuations: Vec<String>,
    number: u64,
    offset: u64,
    /// More continuation lines may follow.
    open: bool,
    /// The key of a known fact (`known.rs`) the record teaches when read
    /// alone.
    fact: Option<(Repeating, Vec<u8>)>,
    /// The rules of every anchor in the head's line, when the scan found
    /// them (else 0: searched for in each record).
    rules: Dispatch,
}

impl Pending {
    fn start(&mut self, head: &str, number: u64, offset: u64, open: bool) {
        self.active = true;
        self.head.clear();
        self.head.push_str(head);
        self.continuations.clear();
        self.number = number;
        self.offset = offset;
        self.open = open;
        self.fact = None;
        self.rules = 0;
    }
}

/// `base` and its continuation lines, joined by `separator`, into `out`.
fn join_into(out: &mut String, base: &str, continuations: &[String], separator: &str) {
    out.clear();
    out.push_str(base);
    for c in continuations {
        out.push_str(separator);
        out.push_str(c);
    }
}

/// The line as text: borrowed when it is valid UTF-8 (the standard
/// library's validation has an ASCII fast path the lossy one lacks).
fn utf8(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// How many hit lines a member's rules read: an anchor's first
/// [`FREE_READS_PER_ANCHOR`] always, then as the bytes scanned earn reads
/// (a token bucket of [`READ_BURST`] reads, one more per
/// [`READ_EARN_BYTES`]). A line past the budget is counted as unread:
/// its rules' earlier lines have been read, and later ones will be as the
/// budget refills.
#[derive(Debug, Clone)]
struct ReadBudget {
    /// Bytes of credit; a read costs [`READ_EARN_BYTES`].
    credit: u64,
    /// Free reads used, per anchor (its index in the anchor table).
    free_used: Vec<u8>,
    /// Hit lines left unread.
    unread: u64,
}

impl ReadBudget {
    const FULL: u64 = READ_BURST * READ_EARN_BYTES;

    fn new() -> Self {
        Self {
            credit: Self::FULL,
            free_used: vec![0; super::anchors::anchor_count()],
            unread: 0,
        }
    }

    fn earn(&mut self, bytes: usize) {
        self.credit = (self.credit + bytes as u64).min(Self::FULL);
    }

    /// Whether a line whose first anchor is `anchor` is read.
    fn allow(&mut self, anchor: usize) -> bool {
        if super::anchors::is_unit_ok(anchor) {
            return true;
        }
        if let Some(used) = self.free_used.get_mut(anchor) {
            if *used < FREE_READS_PER_ANCHOR {
                *used += 1;
                return true;
            }
        }
        if self.credit >= READ_EARN_BYTES {
            self.credit -= READ_EARN_BYTES;
            return true;
        }
        self.unread += 1;
        false
    }

    /// Whether a line of a known fact is counted ([`KNOWN_COST`]).
    fn allow_known(&mut self) -> bool {
        if self.credit >= KNOWN_COST {
            self.credit -= KNOWN_COST;
            return true;
        }
        self.unread += 1;
        false
    }
}

/// The time of the last ISO journal stamp read, by its bytes without the
/// fraction of a second (which `parse_rfc3339` does not count): lines a
/// second apart or less are not parsed again.
#[derive(Debug, Clone, Default)]
struct StampCache {
    key: Vec<u8>,
    at: Option<i64>,
}

impl StampCache {
    fn at(&mut self, stamp: &[u8]) -> Option<i64> {
        // `2026-11-22T10:00:00` then `.250000` then the zone.
        let second = stamp.get(..19)?;
        let rest = &stamp[19..];
        let zone = match rest.first() {
            Some(b'.' | b',') => {
                let digits = rest[1..].iter().take_while(|b| b.is_ascii_digit()).count();
                &rest[1 + digits..]
            }
            _ => rest,
        };
        let same = self.key.len() == second.len() + zone.len()
            && self.key[..19] == *second
            && self.key[19..] == *zone;
        if !same {
            self.key.clear();
            self.key.extend_from_slice(second);
            self.key.extend_from_slice(zone);
            self.at = std::str::from_utf8(stamp)
                .ok()
                .and_then(normalise::parse_rfc3339);
        }
        self.at
    }
}

/// What becomes of a line of a repeating anchor.
enum FactLine {
    /// Counted in the hits of its key.
    Counted,
    /// Past the budget.
    Unread,
    /// Read as any other; when it holds a key, the key it teaches.
    Read(Option<(Repeating, Vec<u8>)>),
}

/// The most hit lines a member of `bytes` bytes has read: every rule's
/// free reads, the starting allowance, and what the bytes earn.
#[cfg(test)]
pub(super) fn read_budget_bound(bytes: usize) -> u64 {
    super::anchors::anchor_count() as u64 * u64::from(FREE_READS_PER_ANCHOR)
        + READ_BURST
        + bytes as u64 / READ_EARN_BYTES
}

/// Where a scanned member ended up in the archive, to turn stream line
/// numbers into member line numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// The member is in the archive.
    pub(crate) archived: bool,
    /// Bytes of the (redacted) stream dropped from the front by a cap.
    pub(crate) dropped_bytes: u64,
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
    /// The last complete line (its first [`MAX_LINE`] bytes): the head of a
    /// wrapped message whose anchor is on its continuation.
    prev_line: Vec<u8>,
    /// A line holding an anchor, waiting for its continuations.
    pending: Pending,
    /// The unit of the `systemctl status` block being read.
    status_unit: Option<String>,
    /// How many hit lines the rules read.
    budget: ReadBudget,
    /// Keys of repeating anchors' facts read, and their hits.
    known: Known,
    /// The hits the latest hit was counted in.
    last_hit: Option<usize>,
    /// The latest journal stamp of a known fact's line, to the second.
    stamps: StampCache,
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
            prev_line: Vec::new(),
            pending: Pending::default(),
            status_unit: None,
            budget: ReadBudget::new(),
            known: Known::default(),
            last_hit: None,
            stamps: StampCache::default(),
            document: Vec::new(),
            document_overflow: false,
            busy: std::time::Duration::ZERO,
        })
    }

    /// A copy that carries on with the same stream in a later bundle:
    /// every line, finding and recovery seen so far kept, its time already
    /// counted in the bundle that read it.
    #[must_use]
    pub(crate) fn resumed(&self) -> Self {
        let mut copy = self.clone();
        copy.busy = std::time::Duration::ZERO;
        copy
    }

    /// Lines seen so far (complete ones).
    pub(crate) fn lines(&self) -> u64 {
        self.lines
    }

    /// Lines holding an anchor that the read budget left unread.
    pub(crate) fn unread_lines(&self) -> u64 {
        self.budget.unread
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
        if matches!(self.kind, Kind::RecordsSummary | Kind::HostFile) {
            let cap = if self.kind == Kind::HostFile {
                files::MAX_HOST_FILE
            } else {
                MAX_SUMMARY_BYTES
            };
            let room = cap.saturating_sub(self.document.len());
            self.document_overflow |= data.len() > room;
            self.document
                .extend_from_slice(&data[..data.len().min(room)]);
            self.lines += crate::newlines::count(data);
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
                if AnchorFinder::get().find(&self.partial, 0).is_some() {
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
        // Bytes earn reads as they are scanned (a block may be a whole
        // member: earned at once, most would be lost to the cap).
        let mut earned = 0usize;
        // `self.lines` counts the lines that end before `block[counted]`.
        let mut counted = 0usize;
        let mut pos = self.continue_pending(block, 0, &mut counted);
        // The next anchor, when looking past a line found it already: where
        // that search started, and what it found.
        let mut ahead: Option<(usize, Option<Found>)> = None;
        let mut memo = Memo::default();
        while pos < block.len() {
            let found = match ahead.take() {
                Some((from, next)) if from <= pos && next.is_none_or(|f| f.start >= pos) => next,
                _ => finder.find_memo(block, pos, &mut memo),
            };
            let Some(found) = found else {
                break;
            };
            let anchor_at = found.start;
            let start = memchr::memrchr(b'\n', &block[..anchor_at]).map_or(0, |i| i + 1);
            let end =
                memchr::memchr(b'\n', &block[anchor_at..]).map_or(block.len(), |i| anchor_at + i);
            self.lines += crate::newlines::count(&block[counted..start]);
            self.budget.earn(end.saturating_sub(earned));
            earned = end;
            let mut fact = None;
            // The rules of every anchor in the line, found by the search
            // going on through it (the next line's anchor is kept): the
            // rules its records are put to, not searched for again.
            let mut line_rules = None;
            if let Some(kind) = super::anchors::repeating(found.anchor) {
                let (rules, next) = line_anchors(finder, block, (start, found), end, &mut memo);
                ahead = Some(next);
                line_rules = Some(rules);
                let alone = rules == super::anchors::dispatch_of(found.anchor);
                let place = (self.lines + 1, base + start as u64);
                match self.fact_line(kind, block, (start, end), anchor_at, alone, place) {
                    FactLine::Read(key) => fact = key,
                    FactLine::Counted | FactLine::Unread => {
                        self.lines += 1;
                        counted = (end + 1).min(block.len());
                        pos = counted;
                        continue;
                    }
                }
            }
            if !self.budget.allow(found.anchor) {
                self.lines += 1;
                counted = (end + 1).min(block.len());
                pos = counted;
                continue;
            }
            let rules = line_rules.unwrap_or_else(|| {
                let (rules, next) = line_anchors(finder, block, (start, found), end, &mut memo);
                ahead = Some(next);
                rules
            });
            let line = &block[start..end];
            // A very long line: the rules read the part around the match.
            let window = if line.len() <= MAX_LINE {
                line
            } else {
                let at = anchor_at - start;
                let from = at.saturating_sub(MAX_LINE / 2);
                &line[from..(from + MAX_LINE).min(line.len())]
            };
            if start > 0 {
                let prev_start = memchr::memrchr(b'\n', &block[..start - 1]).map_or(0, |i| i + 1);
                let prev = &block[prev_start..start - 1];
                self.prev_line.clear();
                self.prev_line
                    .extend_from_slice(&prev[..prev.len().min(MAX_LINE)]);
            }
            self.open_pending(window, self.lines + 1, base + start as u64);
            if self.pending.active && self.pending.number == self.lines + 1 {
                self.pending.fact = fact;
                self.pending.rules = rules;
            }
            self.lines += 1;
            counted = (end + 1).min(block.len());
            pos = self.continue_pending(block, counted, &mut counted);
        }
        self.lines += crate::newlines::count(&block[counted..]);
        self.budget.earn(block.len().saturating_sub(earned));
        // The last line, for a wrapped message continued in the next block.
        let body = block.strip_suffix(b"\n").unwrap_or(block);
        let last_start = memchr::memrchr(b'\n', body).map_or(0, |i| i + 1);
        self.prev_line.clear();
        self.prev_line
            .extend_from_slice(&body[last_start..body.len().min(last_start + MAX_LINE)]);
    }

    /// A line of a repeating anchor (`block[start..end]`, the anchor at
    /// `anchor_at`, alone in the line or not; `place`: its number and
    /// stream offset): counted in the hits of its key when a line of that
    /// key was read and reading this one could not say otherwise (a
    /// journal line, not too long, no other anchor, the next line not its
    /// continuation); else read, teaching its key when it has one.
    fn fact_line(
        &mut self,
        kind: Repeating,
        block: &[u8],
        (start, end): (usize, usize),
        anchor_at: usize,
        alone: bool,
        (number, offset): (u64, u64),
    ) -> FactLine {
        let line = &block[start..end];
        if !alone || line.len() > MAX_LINE {
            return FactLine::Read(None);
        }
        let Some(prefix) = known::journal_prefix(line) else {
            return FactLine::Read(None);
        };
        let Some(key) = known::fact_key(kind, line, prefix.message, anchor_at - start) else {
            return FactLine::Read(None);
        };
        let key = FactKey {
            ident: prefix.ident,
            key,
        };
        // The next line opens with its own stamp: it continues nothing.
        let next_is_record = block
            .get(end + 1..)
            .is_some_and(normalise::starts_with_iso_stamp);
        let counted = if next_is_record {
            self.known.hits_of(kind, key)
        } else {
            None
        };
        let text = std::str::from_utf8(line).ok();
        let at = self.stamps.at(prefix.stamp);
        let ident = std::str::from_utf8(prefix.ident).ok();
        let (Some(index), Some(text), Some(at), Some(ident)) = (counted, text, at, ident) else {
            return FactLine::Read(Some((kind, known::key_bytes(key))));
        };
        if !self.budget.allow_known() {
            return FactLine::Unread;
        }
        self.last_at = Some(at);
        let unit = self
            .unit
            .as_deref()
            .unwrap_or_else(|| unit_name_of_ident(ident));
        count_in(
            &mut self.hits[index],
            text,
            Some(at),
            Some(unit),
            number,
            offset,
        );
        FactLine::Counted
    }

    /// Offers the lines of `block` from `pos` to the pending line as its
    /// continuations; returns where reading goes on. Consumed lines are
    /// counted (`counted` moves past them).
    fn continue_pending(&mut self, block: &[u8], mut pos: usize, counted: &mut usize) -> usize {
        while self.pending.active && pos < block.len() {
            let end = memchr::memchr(b'\n', &block[pos..]).map_or(block.len(), |i| pos + i);
            let line = &block[pos..end];
            if !self.try_continue(line) {
                self.flush_pending();
                break;
            }
            self.lines += 1;
            pos = (end + 1).min(block.len());
            *counted = pos;
        }
        pos
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
        if self.pending.active {
            if self.try_continue(line) {
                self.set_prev(line);
                return;
            }
            self.flush_pending();
        }
        self.budget.earn(line.len() + 1);
        if let Some(found) = AnchorFinder::get().find_with(line, 0) {
            if self.budget.allow(found.anchor) {
                self.open_pending(line, number, offset);
            }
        }
        self.set_prev(line);
    }

    fn set_prev(&mut self, line: &[u8]) {
        self.prev_line.clear();
        self.prev_line
            .extend_from_slice(&line[..line.len().min(MAX_LINE)]);
    }

    /// A line holding an anchor: read at once, or kept until the lines
    /// after it show whether they continue it. A line that continues a
    /// record without an anchor of its own (`prev_line`) becomes that
    /// record's continuation.
    fn open_pending(&mut self, line: &[u8], number: u64, offset: u64) {
        let text = utf8(line);
        let starts = normalise::starts_record(&text);
        if !starts && number > 1 && !self.prev_line.is_empty() {
            let prev = utf8(&self.prev_line);
            if normalise::takes_continuations(&prev) {
                let head_offset = offset.saturating_sub(self.prev_line.len() as u64 + 1);
                self.pending.start(&prev, number - 1, head_offset, true);
                if !self.try_continue(line) {
                    self.flush_pending();
                    self.pending.start(&text, number, offset, false);
                    self.flush_pending();
                }
                return;
            }
        }
        let open = starts && normalise::is_event_start(&text);
        self.pending.start(&text, number, offset, open);
        if !starts {
            self.flush_pending();
        }
    }

    /// Takes `line` as a continuation of the pending record when it is one.
    fn try_continue(&mut self, line: &[u8]) -> bool {
        let pending = &mut self.pending;
        if !pending.active || !pending.open || line.iter().all(u8::is_ascii_whitespace) {
            return false;
        }
        // A journal line opens with its ISO stamp: not a continuation.
        if normalise::starts_with_iso_stamp(line) {
            return false;
        }
        let text = utf8(&line[..line.len().min(MAX_LINE)]);
        if normalise::starts_record(&text) {
            return false;
        }
        pending.continuations.push(text.trim().to_owned());
        if pending.continuations.len() >= usize::from(MAX_CONTINUATIONS) {
            pending.open = false;
            self.flush_pending();
        }
        true
    }

    /// Reads the pending record: each record run together on its line, its
    /// continuations joined to the last.
    fn flush_pending(&mut self) {
        if !self.pending.active {
            return;
        }
        self.pending.active = false;
        // Taken out while its record is read (the rules borrow the scanner),
        // put back after: its buffers are reused.
        let mut pending = std::mem::take(&mut self.pending);
        let head = pending.head.as_str();
        let cuts = normalise::run_together(head);
        // A record of a known fact's key, read alone, teaches it.
        let learn = pending
            .fact
            .take()
            .filter(|_| cuts.is_empty() && pending.continuations.is_empty());
        self.last_hit = None;
        let mut from = 0;
        for (i, &cut) in cuts.iter().chain(std::iter::once(&head.len())).enumerate() {
            let segment = &head[from..cut];
            from = cut;
            let last = i == cuts.len();
            let continuations: &[String] = if last { &pending.continuations } else { &[] };
            let offset = pending.offset + (segment.as_ptr() as u64 - head.as_ptr() as u64);
            let rules = if continuations.is_empty() {
                pending.rules
            } else {
                0
            };
            self.read_record(
                segment.trim_end(),
                continuations,
                rules,
                pending.number,
                offset,
            );
        }
        if let (Some((kind, key)), Some(hits)) = (learn, self.last_hit) {
            self.known.learn(kind, key, hits);
        }
        self.pending = pending;
    }

    /// One record: taken apart, put to the rules its anchors name (joined
    /// with its continuations by a space, then without one: a terminal
    /// breaks words), its signal recorded.
    fn read_record(
        &mut self,
        head: &str,
        continuations: &[String],
        line_rules: Dispatch,
        number: u64,
        offset: u64,
    ) {
        let parts = normalise::parse(head);
        if let Some(at) = parts.at {
            self.last_at = Some(at);
        }
        let at = parts.at.or_else(|| {
            parts
                .stamp
                .and_then(|s| normalise::date_yearless(s, self.last_at))
        });
        match parts.shape {
            Shape::Command => return,
            Shape::StatusHeader => {
                self.status_unit = parts.ident.map(str::to_owned);
                return;
            }
            Shape::StatusFailed => {
                if let Some(unit) = self.status_unit.clone() {
                    self.unit_failed(&unit, head, at, number, offset);
                }
                return;
            }
            Shape::Event => {}
        }
        let finder = AnchorFinder::get();
        let mut joined = String::new();
        let message = if continuations.is_empty() {
            parts.message
        } else {
            join_into(&mut joined, parts.message, continuations, " ");
            &joined
        };
        // The line's rules are those of its message and maybe more (an
        // anchor in its prefix, another record run together on the line):
        // a rule asked without its anchor answers nothing.
        let dispatch = if line_rules != 0 {
            line_rules
        } else {
            finder.dispatch(message.as_bytes(), 0)
        };
        if dispatch == 0 {
            return;
        }
        if dispatch & UNIT_EVENT_BIT != 0 {
            if let Some((unit, ok)) = node::unit_event(message) {
                let unit = unit.to_owned();
                if ok {
                    let marks = self.units.entry(unit).or_default();
                    marks.ok_at = at.or(marks.ok_at);
                    marks.ok_line = number;
                } else {
                    self.unit_failed(&unit, head, at, number, offset);
                }
                return;
            }
        }
        let mut signal = classify_with(message, dispatch);
        if signal.is_none() && !continuations.is_empty() {
            let mut glued = String::new();
            join_into(&mut glued, parts.message, continuations, "");
            signal = classify_with(&glued, finder.dispatch(glued.as_bytes(), 0));
        }
        let Some(signal) = signal else {
            return;
        };
        let unit = self
            .unit
            .clone()
            .or_else(|| parts.ident.map(unit_of_ident))
            .or_else(|| self.status_unit.clone());
        if signal.nature == Nature::Recovery {
            if self.recoveries.len() < MAX_KEYS_PER_MEMBER {
                self.recoveries
                    .push((signal.category, signal.key, number, at));
            } else if let Some(last) = self.recoveries.last_mut() {
                *last = (signal.category, signal.key, number, at);
            }
            return;
        }
        let evidence_text = if continuations.is_empty() {
            head
        } else {
            join_into(&mut joined, head, continuations, " ");
            &joined
        };
        self.record_hit(signal, evidence_text, at, unit.as_deref(), number, offset);
    }

    fn unit_failed(&mut self, unit: &str, text: &str, at: Option<i64>, number: u64, offset: u64) {
        let marks = self.units.entry(unit.to_owned()).or_default();
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

    fn record(&mut self, signal: Signal, text: &str, at: Option<i64>, number: u64, offset: u64) {
        let unit = self.unit.clone();
        self.record_hit(signal, text, at, unit.as_deref(), number, offset);
    }

    /// Counts a hit; its text is copied only into evidence kept (the first
    /// lines of a signal, and a reused slot for its latest).
    fn record_hit(
        &mut self,
        signal: Signal,
        text: &str,
        at: Option<i64>,
        unit: Option<&str>,
        number: u64,
        offset: u64,
    ) {
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
        self.last_hit = Some(index);
        count_in(&mut self.hits[index], text, at, unit, number, offset);
    }

    /// Flushes the last, unterminated line and the record waiting for its
    /// continuations.
    pub(crate) fn finish(&mut self) {
        if matches!(self.kind, Kind::RecordsSummary | Kind::HostFile) {
            return;
        }
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.lines += 1;
            self.complete_line(&line, self.lines, self.partial_offset);
        }
        self.flush_pending();
    }

    /// Lines of the whole stream (a partial last line counts).
    pub(super) fn total_lines(&self) -> u64 {
        self.lines
    }
}

/// The rules of every anchor in the line of `found` (it ends at `end`),
/// and the search for the next anchor after the line, to go on with: where
/// it started and what it found.
fn line_anchors(
    finder: &AnchorFinder,
    block: &[u8],
    (start, found): (usize, Found),
    end: usize,
    memo: &mut Memo,
) -> (Dispatch, (usize, Option<Found>)) {
    // Every anchor of the line, each needle's anchors all checked (a
    // search going on past `found` could pass over one starting before
    // it); then the next line's first anchor.
    let rules = found.dispatch | finder.line_dispatch(block, (start, found.start), end);
    (rules, (end, finder.find_memo(block, end, memo)))
}

/// Counts a hit of one signal: its text is copied only into evidence kept
/// (the first lines of a signal, and a reused slot for its latest).
fn count_in(
    hits: &mut Hits,
    text: &str,
    at: Option<i64>,
    unit: Option<&str>,
    number: u64,
    offset: u64,
) {
    hits.count += 1;
    hits.first_at = hits.first_at.or(at);
    hits.last_at = at.or(hits.last_at);
    hits.last_problem_line = number;
    // Keep the first ones and the latest (its slot reused).
    if hits.evidence.len() < EVIDENCE_PER_KEY {
        hits.evidence.push(RawEvidence {
            line: number,
            offset,
            text: line::shorten(text.trim_end(), MAX_EVIDENCE_CHARS),
            at,
            unit: unit.map(str::to_owned),
        });
    } else {
        let slot = &mut hits.evidence[EVIDENCE_PER_KEY - 1];
        slot.line = number;
        slot.offset = offset;
        line::shorten_into(text.trim_end(), MAX_EVIDENCE_CHARS, &mut slot.text);
        slot.at = at;
        if slot.unit.as_deref() != unit {
            slot.unit = unit.map(str::to_owned);
        }
    }
}
