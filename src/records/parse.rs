//! One record file parsed: the JSON entries a bootstrap service wrote about
//! itself (`bootstrap-service-record.sh`), salvaged whatever state the file
//! is in, then folded into that service's runs and steps ([`Service`]) with
//! how each ended ([`Outcome`]). `docs/bundle.md` (Records summary) says
//! what a reader of the bundle gets.
//!
//! Each file is one JSON array of entries (`timestamp`, `phase`, `stage`,
//! `preCommand`, `postCommand`, `result`, `errorLine`, `errorMessage`). Real
//! hosts leave worse: empty files, arrays cut mid-entry by a reboot, starts
//! with no end (a killed service), and many repeated `service start`s from
//! `Restart=on-failure`. The parser never fails: it salvages every complete
//! entry before a break and names each problem.

use std::io::{self, Read};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Entries kept per record file: the newest ones, which hold the last run.
/// A real file has tens to a few hundred (each restart adds about ten); the
/// cap keeps the summary (and `records/summary.json`) bounded whatever a
/// host wrote, while every entry is still parsed, in linear time.
pub const MAX_ENTRIES: usize = 10_000;

/// One entry of a service's record file, as written by
/// `bootstrap-service-record.sh`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    #[serde(default)]
    pub(crate) timestamp: Option<String>,
    #[serde(default)]
    pub(crate) phase: Option<String>,
    #[serde(default)]
    pub(crate) stage: Option<String>,
    #[serde(default)]
    pub(crate) pre_command: Option<String>,
    #[serde(default)]
    pub(crate) post_command: Option<String>,
    #[serde(default)]
    pub(crate) result: Option<String>,
    #[serde(default)]
    pub(crate) error_line: Option<String>,
    #[serde(default)]
    pub(crate) error_message: Option<String>,
}

/// Longest field of an entry kept, in bytes: stage names and error
/// messages are short; a giant one must not blow up the summary (cut on a
/// character boundary, marked with `…`).
pub const MAX_FIELD_BYTES: usize = 4096;

impl Entry {
    /// Bytes of its fields, what keeping it costs beyond its shape.
    fn text_bytes(&self) -> usize {
        [
            &self.timestamp,
            &self.phase,
            &self.stage,
            &self.pre_command,
            &self.post_command,
            &self.result,
            &self.error_line,
            &self.error_message,
        ]
        .into_iter()
        .flatten()
        .map(String::len)
        .sum()
    }

    fn shorten_fields(&mut self) {
        for field in [
            &mut self.timestamp,
            &mut self.phase,
            &mut self.stage,
            &mut self.pre_command,
            &mut self.post_command,
            &mut self.result,
            &mut self.error_line,
            &mut self.error_message,
        ]
        .into_iter()
        .flatten()
        {
            if field.len() > MAX_FIELD_BYTES {
                let mut cut = MAX_FIELD_BYTES;
                while !field.is_char_boundary(cut) {
                    cut -= 1;
                }
                field.truncate(cut);
                field.push('…');
            }
        }
    }
}

/// How a step (a stage, a pre/post-command, or the service run) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Success,
    Failure,
    /// Started, no end recorded, and nothing came after: may still run.
    Running,
    /// Started, no end recorded, but the service started again afterwards:
    /// the run was killed (or the host rebooted).
    Killed,
}

impl Outcome {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failure => "failure",
            Outcome::Running => "running",
            Outcome::Killed => "killed",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepKind {
    Stage,
    PreCommand,
    PostCommand,
}

impl StepKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            StepKind::Stage => "stage",
            StepKind::PreCommand => "pre-command",
            StepKind::PostCommand => "post-command",
        }
    }
}

/// A stage or pre/post-command within one run of a service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    pub(crate) kind: StepKind,
    pub(crate) name: String,
    pub(crate) start: Option<String>,
    pub(crate) end: Option<String>,
    pub(crate) duration_secs: Option<i64>,
    pub(crate) result: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error_line: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error_message: Option<String>,
}

/// One `service start` … `service end` of a service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    pub(crate) start: Option<String>,
    pub(crate) end: Option<String>,
    pub(crate) duration_secs: Option<i64>,
    pub(crate) result: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error_line: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error_message: Option<String>,
    pub(crate) steps: Vec<Step>,
}

/// A failed step or run, for the failures list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// 1-based run of the service.
    pub(crate) run: usize,
    /// `service`, or the step kind and name (`stage cvo-bootstrap`).
    pub(crate) what: String,
    pub(crate) at: Option<String>,
    pub(crate) error_line: Option<String>,
    pub(crate) error_message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Service {
    pub service: String,
    /// Record file name, e.g. `bootkube.json`.
    pub(crate) file: String,
    /// The outcome of the last run.
    pub(crate) status: Outcome,
    pub(crate) runs: Vec<Run>,
    pub(crate) failures: Vec<Failure>,
    /// Entries salvaged from the file.
    pub entries: usize,
    /// Runs before those listed, left out to keep the summary within its
    /// size cap ([`Service::condense`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) runs_left_out: usize,
    /// What [`Service::condense`] left out, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) condensed: Option<String>,
    /// The last run's steps and the failures before any condensing, for
    /// the words of a second one.
    #[serde(skip)]
    whole: Option<(usize, usize)>,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if signature
fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Steps of the last run a condensed service keeps at least: the newest.
pub(crate) const CONDENSED_STEPS: usize = 10;
/// Failures a condensed service keeps: the newest.
pub(crate) const CONDENSED_FAILURES: usize = 5;

impl Service {
    pub(crate) fn last_run(&self) -> Option<&Run> {
        self.runs.last()
    }

    /// `service start`s beyond the first.
    pub(crate) fn restarts(&self) -> usize {
        (self.runs.len() + self.runs_left_out).saturating_sub(1)
    }

    /// Every run, counting those [`Service::condense`] left out.
    pub(crate) fn run_count(&self) -> usize {
        self.runs.len() + self.runs_left_out
    }

    /// Steps in all its runs.
    pub(crate) fn step_count(&self) -> usize {
        self.runs.iter().map(|r| r.steps.len()).sum()
    }

    /// Keeps what says where the service stands (its last run, that run's
    /// newest `keep_steps` steps, at least [`CONDENSED_STEPS`], the newest
    /// [`CONDENSED_FAILURES`] failures) and says what went: the summary's
    /// size cap condenses services past its share for detail
    /// (`docs/bundle.md`).
    pub(crate) fn condense(&mut self, keep_steps: usize) {
        let runs = self.run_count();
        let older = self.runs.len().saturating_sub(1);
        self.runs.drain(..older);
        self.runs.shrink_to_fit();
        self.runs_left_out += older;
        let last_steps = self.runs.last().map_or(0, |r| r.steps.len());
        let (steps, failures) = *self.whole.get_or_insert((last_steps, self.failures.len()));
        if let Some(run) = self.runs.last_mut() {
            let cut = run
                .steps
                .len()
                .saturating_sub(keep_steps.max(CONDENSED_STEPS));
            run.steps.drain(..cut);
            // The point is the memory too: a run of 10,000 steps held 2 MiB.
            run.steps.shrink_to_fit();
        }
        let cut = self.failures.len().saturating_sub(CONDENSED_FAILURES);
        self.failures.drain(..cut);
        self.failures.shrink_to_fit();
        let kept_steps = self.runs.last().map_or(0, |r| r.steps.len());
        self.condensed = Some(format!(
            "condensed to keep records/summary.json within its size cap: {} of {runs} runs, {} of {steps} steps of the last run and {} of {failures} failures left out",
            self.runs_left_out,
            steps - kept_steps,
            failures - self.failures.len()
        ));
    }
}

/// The result of parsing one file: what was salvaged and what went wrong.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    pub entries: Vec<Entry>,
    pub problem: Option<String>,
}

/// Parses one record file held in memory (see [`parse_reader`]).
pub fn parse_entries(data: &[u8]) -> Parsed {
    parse_reader(data)
}

/// A record file that is not an array (entries one after another, made by
/// hand) is salvaged from its first 1 MiB; an array is streamed whatever
/// its size.
pub(crate) const NON_ARRAY_LIMIT: usize = 1024 * 1024;
/// Longest entry read, in bytes of JSON once its long strings are cut: a
/// bigger one (thousands of keys) is skipped and counted.
pub const MAX_ENTRY_BYTES: usize = 1024 * 1024;
/// Bytes of fields the kept entries of one file may hold: the newest that
/// fit. With [`MAX_ENTRIES`] this is the entry cap; it keeps a file of
/// 4 KiB fields at 2 MiB of memory rather than 320.
pub const MAX_ENTRY_TEXT: usize = 2 * 1024 * 1024;
/// Raw bytes of a JSON string kept: at least [`MAX_FIELD_BYTES`] decoded
/// bytes whatever its escapes (a `\uXXXX` is 6 bytes for 1 to 3), so a
/// field is cut exactly as if it had been read whole.
const RAW_STRING_KEEP: usize = 6 * MAX_FIELD_BYTES + 64;
const READ_CHUNK: usize = 64 * 1024;

/// Parses one record file as it is read, salvaging the complete entries
/// before any break. Memory is one entry (at most [`MAX_ENTRY_BYTES`], its
/// strings cut to what a field keeps) and the entries kept, never the
/// file: a 21 MiB one-line record costs what a small one does.
pub fn parse_reader(reader: impl Read) -> Parsed {
    let mut input = Input::new(reader);
    // Kept for a file that is not an array: its positions count them.
    let mut leading = Vec::new();
    while let Some(b) = input.peek().filter(u8::is_ascii_whitespace) {
        if leading.len() < NON_ARRAY_LIMIT {
            leading.push(b);
        }
        input.bump();
    }
    let mut kept = Kept::default();
    let problem = match input.peek() {
        None => {
            let mut problem = Some("empty file".to_owned());
            if let Some(err) = input.error.take() {
                append(&mut problem, format!("reading stopped: {err}"));
            }
            return Parsed {
                entries: Vec::new(),
                problem,
            };
        }
        Some(b'[') => {
            input.bump();
            read_array(&mut input, &mut kept)
        }
        Some(_) => {
            // Not an array: perhaps entries one after another.
            let mut data = leading;
            input.read_into(&mut data, NON_ARRAY_LIMIT);
            let mut problem = Some(salvage_non_array(&data, &mut kept));
            if input.peek().is_some() {
                append(
                    &mut problem,
                    format!("only its first {} MiB read", NON_ARRAY_LIMIT >> 20),
                );
            }
            problem
        }
    };
    kept.finish(problem, input.error.take())
}

/// The entries of one file kept so far: the newest, within the entry cap.
#[derive(Default)]
struct Kept {
    entries: std::collections::VecDeque<Entry>,
    /// Field bytes of `entries`.
    text: usize,
    dropped: usize,
    non_objects: usize,
    oversized: usize,
}

impl Kept {
    fn push(&mut self, value: Value) {
        let entry = match value {
            Value::Object(_) => serde_json::from_value::<Entry>(value).ok(),
            _ => None,
        };
        let Some(mut entry) = entry else {
            self.non_objects += 1;
            return;
        };
        entry.shorten_fields();
        self.text += entry.text_bytes();
        if self.entries.len() == self.entries.capacity() && self.entries.len() >= MAX_ENTRIES / 2 {
            // Past half the cap, grow to the cap exactly rather than to the
            // next power of two: 2 MiB of entries for 10,000, not 3.
            self.entries
                .reserve_exact((MAX_ENTRIES + 1).saturating_sub(self.entries.len()).max(1));
        }
        self.entries.push_back(entry);
        while self.entries.len() > 1
            && (self.entries.len() > MAX_ENTRIES || self.text > MAX_ENTRY_TEXT)
        {
            if let Some(old) = self.entries.pop_front() {
                self.text -= old.text_bytes();
                self.dropped += 1;
            }
        }
    }

    fn finish(self, mut problem: Option<String>, read_error: Option<io::Error>) -> Parsed {
        if let Some(err) = read_error {
            append(&mut problem, format!("reading stopped: {err}"));
        }
        if self.dropped > 0 {
            append(
                &mut problem,
                format!(
                    "{} entries: only the newest {} kept (entry cap)",
                    self.dropped + self.entries.len(),
                    self.entries.len()
                ),
            );
        }
        if self.non_objects > 0 {
            append(
                &mut problem,
                format!("{} entries are not record objects", self.non_objects),
            );
        }
        if self.oversized > 0 {
            append(
                &mut problem,
                format!(
                    "{} entries over {} MiB skipped",
                    self.oversized,
                    MAX_ENTRY_BYTES >> 20
                ),
            );
        }
        if let Some(p) = &mut problem {
            if self.entries.is_empty() {
                p.push_str("; nothing salvaged");
            } else {
                use std::fmt::Write as _;
                let _ = write!(p, "; salvaged {} complete entries", self.entries.len());
            }
        }
        Parsed {
            entries: self.entries.into(),
            problem,
        }
    }
}

fn append(problem: &mut Option<String>, note: String) {
    *problem = Some(match problem.take() {
        Some(p) => format!("{p}; {note}"),
        None => note,
    });
}

/// A file that is not an array, read as a stream of values (arrays
/// flattened) from bytes in memory, at most [`NON_ARRAY_LIMIT`] of them.
fn salvage_non_array(data: &[u8], kept: &mut Kept) -> String {
    let mut stream = serde_json::Deserializer::from_slice(data).into_iter::<Value>();
    for item in stream.by_ref() {
        match item {
            Ok(Value::Array(items)) => items.into_iter().for_each(|v| kept.push(v)),
            Ok(value) => kept.push(value),
            Err(err) => return format!("not a JSON array; stopped at {err}"),
        }
    }
    "not a JSON array".into()
}

/// Reads `[ value, value, … ]` after the `[`, one value at a time; returns
/// what broke it, if anything.
fn read_array<R: Read>(input: &mut Input<R>, kept: &mut Kept) -> Option<String> {
    let mut value = Vec::new();
    let mut first = true;
    loop {
        input.skip_whitespace();
        let at = input.offset();
        let Some(b) = input.peek() else {
            return Some(entry_problem(None, at));
        };
        if b == b']' {
            input.bump();
            input.skip_whitespace();
            return input
                .peek()
                .is_some()
                .then(|| format!("trailing data after the array at byte {}", at + 1));
        }
        if !first {
            if b != b',' {
                return Some(format!("invalid JSON at byte {at}: expected `,` or `]`"));
            }
            input.bump();
            input.skip_whitespace();
        }
        first = false;
        let start = input.offset();
        match read_value(input, &mut value) {
            Lexed::Whole => {}
            Lexed::Oversized => {
                kept.oversized += 1;
                continue;
            }
            Lexed::Eof if value.is_empty() => return Some(entry_problem(None, start)),
            Lexed::Eof => {
                // Cut off, or broken before the cut: the parser says which.
                let err = serde_json::from_slice::<serde::de::IgnoredAny>(&value).err();
                return Some(entry_problem(err.as_ref(), start));
            }
        }
        if value.is_empty() {
            // A delimiter where a value should be (`[1,]`).
            let here = [input.peek().unwrap_or(b' ')];
            let err = serde_json::from_slice::<serde::de::IgnoredAny>(&here).err();
            return Some(entry_problem(err.as_ref(), start));
        }
        if value[0] == b'{' {
            match serde_json::from_slice::<Value>(&value) {
                Ok(entry) => kept.push(entry),
                Err(err) => return Some(entry_problem(Some(&err), start)),
            }
        } else {
            // Not an entry: checked without being built (millions of tiny
            // non-objects must not cost a value each).
            match serde_json::from_slice::<serde::de::IgnoredAny>(&value) {
                Ok(_) => kept.push(Value::Null),
                Err(err) => return Some(entry_problem(Some(&err), start)),
            }
        }
    }
}

/// How reading one value of the array ended.
enum Lexed {
    /// In the buffer, whole (its long strings cut).
    Whole,
    /// Read to its end, but too big to keep.
    Oversized,
    /// The file ended inside it.
    Eof,
}

/// Reads one JSON value's bytes into `out`, tracking only strings and
/// nesting (the parser checks the rest): strings longer than a field keeps
/// are cut, and a value over [`MAX_ENTRY_BYTES`] is read to its end but not
/// kept.
fn read_value<R: Read>(input: &mut Input<R>, out: &mut Vec<u8>) -> Lexed {
    out.clear();
    let mut depth = 0usize;
    let mut keep = true;
    loop {
        let Some(b) = input.peek() else {
            return Lexed::Eof;
        };
        match b {
            b'"' => {
                input.bump();
                if !read_string(input, out, keep) {
                    return Lexed::Eof;
                }
                if depth == 0 {
                    break;
                }
            }
            // A scalar's end (`1,`, `1]`, `1 `), or nothing where a value
            // should be.
            _ if depth == 0 && (matches!(b, b'}' | b']' | b',') || b.is_ascii_whitespace()) => {
                break
            }
            b'{' | b'[' => {
                depth += 1;
                input.bump();
                if keep {
                    out.push(b);
                }
            }
            b'}' | b']' => {
                depth -= 1;
                input.bump();
                if keep {
                    out.push(b);
                }
                if depth == 0 {
                    break;
                }
            }
            _ => {
                input.bump();
                if keep {
                    out.push(b);
                }
            }
        }
        if keep && out.len() > MAX_ENTRY_BYTES {
            keep = false;
            out.clear();
        }
    }
    if keep {
        Lexed::Whole
    } else {
        Lexed::Oversized
    }
}

/// Reads a JSON string's body and closing quote (the opening one was
/// read), appending it to `out` when `keep`, cut after [`RAW_STRING_KEEP`]
/// raw bytes: never inside an escape or a character, never leaving half a
/// surrogate pair. `false` when the file ends inside it.
fn read_string<R: Read>(input: &mut Input<R>, out: &mut Vec<u8>, keep: bool) -> bool {
    let mut cut = CutString {
        raw: 0,
        done: !keep,
        high_surrogate_at: None,
    };
    if keep {
        out.push(b'"');
    }
    loop {
        let Some(avail) = input.buffered() else {
            return false;
        };
        let Some(i) = memchr::memchr2(b'"', b'\\', avail) else {
            let n = avail.len();
            cut.plain(out, avail);
            input.consume(n);
            continue;
        };
        let quote = avail[i] == b'"';
        cut.plain(out, &avail[..i]);
        input.consume(i + 1);
        if quote {
            break;
        }
        let mut escape = [b'\\', 0, 0, 0, 0, 0];
        let Some(kind) = input.next_byte() else {
            return false;
        };
        escape[1] = kind;
        let len = if kind == b'u' {
            for slot in &mut escape[2..6] {
                let Some(hex) = input.next_byte() else {
                    return false;
                };
                *slot = hex;
            }
            6
        } else {
            2
        };
        cut.escape(out, &escape[..len]);
    }
    if keep {
        if let Some(at) = cut
            .high_surrogate_at
            .filter(|&at| cut.done && at + 6 == out.len())
        {
            out.truncate(at);
        }
        out.push(b'"');
    }
    true
}

/// Where a string being read stands against its cut.
struct CutString {
    /// Raw bytes of the body so far.
    raw: usize,
    /// Nothing more is kept.
    done: bool,
    /// Where in the output the last escape kept starts, if it is the first
    /// half of a surrogate pair and nothing was kept after it.
    high_surrogate_at: Option<usize>,
}

impl CutString {
    fn plain(&mut self, out: &mut Vec<u8>, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if !self.done {
            let room = RAW_STRING_KEEP.saturating_sub(self.raw);
            let mut end = bytes.len().min(room);
            if end < bytes.len() {
                // Never a continuation byte first after the cut.
                while end > 0 && bytes[end] & 0xc0 == 0x80 {
                    end -= 1;
                }
                self.done = true;
            }
            if end > 0 {
                out.extend_from_slice(&bytes[..end]);
                self.high_surrogate_at = None;
            }
        }
        self.raw += bytes.len();
    }

    fn escape(&mut self, out: &mut Vec<u8>, escape: &[u8]) {
        if !self.done && self.raw + escape.len() <= RAW_STRING_KEEP {
            let high = escape.len() == 6
                && std::str::from_utf8(&escape[2..])
                    .ok()
                    .and_then(|hex| u16::from_str_radix(hex, 16).ok())
                    .is_some_and(|unit| (0xd800..0xdc00).contains(&unit));
            self.high_surrogate_at = high.then_some(out.len());
            out.extend_from_slice(escape);
        } else {
            self.done = true;
        }
        self.raw += escape.len();
    }
}

/// A record file read through a buffer, one byte or one run at a time,
/// knowing its position.
struct Input<R> {
    reader: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    /// File offset of `buf[0]`.
    base: usize,
    eof: bool,
    /// A read error, reported with the salvage (the end of the file, as
    /// far as the parse goes).
    error: Option<io::Error>,
}

impl<R: Read> Input<R> {
    fn new(reader: R) -> Self {
        Input {
            reader,
            buf: vec![0; READ_CHUNK],
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
            error: None,
        }
    }

    /// The buffered bytes not yet consumed, read in if there are none;
    /// `None` at the end of the file.
    fn buffered(&mut self) -> Option<&[u8]> {
        if self.pos == self.end {
            if self.eof {
                return None;
            }
            self.base += self.end;
            self.pos = 0;
            self.end = 0;
            loop {
                match self.reader.read(&mut self.buf) {
                    Ok(0) => {
                        self.eof = true;
                        return None;
                    }
                    Ok(n) => {
                        self.end = n;
                        break;
                    }
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                    Err(err) => {
                        self.error = Some(err);
                        self.eof = true;
                        return None;
                    }
                }
            }
        }
        Some(&self.buf[self.pos..self.end])
    }

    fn peek(&mut self) -> Option<u8> {
        self.buffered().map(|b| b[0])
    }

    fn bump(&mut self) {
        self.pos += 1;
    }

    fn consume(&mut self, n: usize) {
        self.pos += n;
    }

    fn next_byte(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.pos += 1;
        Some(b)
    }

    /// The file offset of the next byte.
    fn offset(&self) -> usize {
        self.base + self.pos
    }

    fn skip_whitespace(&mut self) {
        while let Some(avail) = self.buffered() {
            match avail.iter().position(|b| !b.is_ascii_whitespace()) {
                Some(n) => {
                    self.pos += n;
                    return;
                }
                None => self.pos = self.end,
            }
        }
    }

    /// Appends the next bytes to `out` until it holds `limit`.
    fn read_into(&mut self, out: &mut Vec<u8>, limit: usize) {
        while out.len() < limit {
            let Some(avail) = self.buffered() else {
                return;
            };
            let take = avail.len().min(limit - out.len());
            out.extend_from_slice(&avail[..take]);
            self.pos += take;
        }
    }
}

pub(super) fn parse_time(ts: Option<&str>) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(ts?.trim_end_matches('Z')).ok()
}

fn duration(start: Option<&str>, end: Option<&str>) -> Option<i64> {
    let (s, e) = (parse_time(start)?, parse_time(end)?);
    Some(match e.duration_since(s) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(back) => -i64::try_from(back.duration().as_secs()).unwrap_or(i64::MAX),
    })
}

fn outcome(result: Option<&str>) -> Outcome {
    match result {
        Some(r) if r.eq_ignore_ascii_case("success") => Outcome::Success,
        _ => Outcome::Failure,
    }
}

/// Builds a service's runs from its entries, which it takes apart (their
/// fields move into the steps rather than being copied: a file's newest
/// 10,000 entries are then in memory once).
pub fn service_from_entries(service: &str, file: &str, entries: Vec<Entry>) -> Service {
    let entry_count = entries.len();
    let mut runs: Vec<Run> = Vec::new();
    // Steps of the last run still waiting for their end, by kind and name
    // (indices into its `steps`, innermost last): an end finds its start
    // in constant time, however many steps the run has.
    let mut open_steps: std::collections::HashMap<(StepKind, String), Vec<usize>> =
        std::collections::HashMap::new();
    let new_run = |start: Option<String>| Run {
        start,
        end: None,
        duration_secs: None,
        result: Outcome::Running,
        error_line: None,
        error_message: None,
        steps: Vec::new(),
    };
    for entry in entries {
        let Entry {
            timestamp: ts,
            phase,
            stage,
            pre_command,
            post_command,
            result,
            error_line,
            error_message,
        } = entry;
        let phase = phase.as_deref().unwrap_or("").trim();
        let (kind, name) = if let Some(c) = pre_command {
            (StepKind::PreCommand, c)
        } else if let Some(c) = post_command {
            (StepKind::PostCommand, c)
        } else {
            (StepKind::Stage, stage.unwrap_or_default())
        };
        match phase {
            "service start" => {
                open_steps.clear();
                runs.push(new_run(ts));
            }
            "service end" => {
                if runs.last().is_none_or(|r| r.result != Outcome::Running) {
                    // An end without its start (the start was cut off).
                    open_steps.clear();
                    runs.push(new_run(None));
                }
                let run = runs.last_mut().expect("pushed above");
                run.end = ts;
                run.result = outcome(result.as_deref());
                run.error_line = error_line;
                run.error_message = error_message;
                run.duration_secs = duration(run.start.as_deref(), run.end.as_deref());
            }
            "stage start" | "pre-command start" | "post-command start" => {
                if runs.last().is_none_or(|r| r.result != Outcome::Running) {
                    open_steps.clear();
                    runs.push(new_run(None));
                }
                let run = runs.last_mut().expect("pushed above");
                // A step starting while the previous one never ended: that
                // one was abandoned (the script does not nest steps).
                open_steps
                    .entry((kind, name.clone()))
                    .or_default()
                    .push(run.steps.len());
                run.steps.push(Step {
                    kind,
                    name,
                    start: ts,
                    end: None,
                    duration_secs: None,
                    result: Outcome::Running,
                    error_line: None,
                    error_message: None,
                });
            }
            "stage end" | "pre-command end" | "post-command end" => {
                if runs.last().is_none_or(|r| r.result != Outcome::Running) {
                    open_steps.clear();
                    runs.push(new_run(None));
                }
                let run = runs.last_mut().expect("pushed above");
                let open = open_steps.get_mut(&(kind, name.clone())).and_then(Vec::pop);
                let step = if let Some(i) = open {
                    &mut run.steps[i]
                } else {
                    run.steps.push(Step {
                        kind,
                        name,
                        start: None,
                        end: None,
                        duration_secs: None,
                        result: Outcome::Running,
                        error_line: None,
                        error_message: None,
                    });
                    run.steps.last_mut().expect("pushed above")
                };
                step.end = ts;
                step.result = outcome(result.as_deref());
                step.error_line = error_line;
                step.error_message = error_message;
                step.duration_secs = duration(step.start.as_deref(), step.end.as_deref());
            }
            _ => {}
        }
    }
    // Runs without an end: the last may still be going; earlier ones were
    // killed, since the service started again.
    let last = runs.len().saturating_sub(1);
    for (i, run) in runs.iter_mut().enumerate() {
        let unfinished = if i == last {
            Outcome::Running
        } else {
            Outcome::Killed
        };
        // `result` is `Running` until an end entry (timestamped or not) is seen.
        let run_ended = run.result != Outcome::Running;
        if !run_ended {
            run.result = unfinished;
        }
        for step in &mut run.steps {
            if step.result == Outcome::Running {
                step.result = if run_ended {
                    Outcome::Killed
                } else {
                    unfinished
                };
            }
        }
    }
    let mut failures = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        for step in &run.steps {
            if step.result == Outcome::Failure {
                failures.push(Failure {
                    run: i + 1,
                    what: format!("{} {}", step.kind.as_str(), step.name),
                    at: step.end.clone(),
                    error_line: step.error_line.clone(),
                    error_message: step.error_message.clone(),
                });
            }
        }
        if run.result == Outcome::Failure {
            failures.push(Failure {
                run: i + 1,
                what: "service".into(),
                at: run.end.clone(),
                error_line: run.error_line.clone(),
                error_message: run.error_message.clone(),
            });
        }
    }
    Service {
        service: service.to_owned(),
        file: file.to_owned(),
        status: runs.last().map_or(Outcome::Running, |r| r.result),
        runs,
        failures,
        entries: entry_count,
        runs_left_out: 0,
        condensed: None,
        whole: None,
    }
}

/// Why reading an entry at byte `offset` stopped: cut off, invalid, or the
/// array's end missing (`None`: no entry and no `]`).
fn entry_problem(err: Option<&serde_json::Error>, offset: usize) -> String {
    match err {
        Some(err) if err.is_eof() => {
            format!("truncated JSON: an entry at byte {offset} is cut off")
        }
        Some(err) => format!("invalid JSON in the entry at byte {offset}: {err}"),
        None => format!("truncated JSON: the array ends at byte {offset} without `]`"),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::records::summary::Summary;

    const FIXTURES: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/root/var/log/openshift"
    );

    /// A record file of the test fixture root, by name.
    pub(in crate::records) fn fixture(name: &str) -> Vec<u8> {
        std::fs::read(format!("{FIXTURES}/{name}")).unwrap()
    }

    #[test]
    fn truncated_file_keeps_complete_entries_and_names_the_break() {
        let whole = fixture("bootkube.json");
        // Cut in the middle of the 6th entry.
        let mut cut = 0;
        let mut seen = 0;
        for (i, &b) in whole.iter().enumerate() {
            if b == b'}' {
                seen += 1;
                if seen == 5 {
                    cut = i + 20;
                    break;
                }
            }
        }
        let parsed = parse_entries(&whole[..cut]);
        assert_eq!(parsed.entries.len(), 5);
        let problem = parsed.problem.unwrap();
        assert!(problem.starts_with("truncated JSON"), "{problem}");
        assert!(
            problem.ends_with("salvaged 5 complete entries"),
            "{problem}"
        );

        let mut summary = Summary::default();
        summary.add_file("bootkube.json", &whole[..cut]);
        summary.finish();
        assert_eq!(summary.services.len(), 1);
        assert!(summary.problems[0].starts_with("bootkube.json: truncated JSON"));
        // Nothing failed in what was salvaged: the break itself is the finding.
        assert_eq!(
            summary.digest.as_deref(),
            Some("records: bootkube.json: truncated JSON: an entry at byte 569 is cut off; salvaged 5 complete entries")
        );
        // Cut right after a stage start: that stage reads as running.
        let cut = whole
            .windows(b"\"etcd-bootstrap\"".len())
            .position(|w| w == b"\"etcd-bootstrap\"")
            .unwrap()
            + 40;
        let mut summary = Summary::default();
        summary.add_file("bootkube.json", &whole[..cut]);
        assert_eq!(
            summary.digest().as_deref(),
            Some("bootkube: stage etcd-bootstrap still running since 2025-02-03T10:02:31Z")
        );
    }

    /// A reader that hands out `size` bytes at a time.
    struct Trickle<'a> {
        data: &'a [u8],
        size: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.size.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    #[test]
    fn streaming_reads_the_same_however_the_file_arrives() {
        let whole = fixture("bootkube.json");
        let mut cases: Vec<Vec<u8>> = vec![
            whole.clone(),
            whole[..whole.len() / 2].to_vec(),
            b"[1, {\"phase\":\"service start\"}, \"x\", [2]]".to_vec(),
            b"[{\"phase\":\"service start\"}] x".to_vec(),
            b"[{\"phase\":\"service start\"},]".to_vec(),
            b"[{\"phase\":\"service start\"} {\"a\":1}]".to_vec(),
            b"[{\"phase\": tru}]".to_vec(),
            b"[".to_vec(),
            b"{\"phase\":\"service start\"} {\"phase\":\"service end\"}".to_vec(),
        ];
        let escaped = format!(
            "[{{\"phase\":\"service end\",\"result\":\"failure\",\"errorMessage\":\"{}\\ud83e\\udd80{}\"}}]",
            "\\u00e9\\n\\\"".repeat(2000),
            "é".repeat(10_000)
        );
        cases.push(escaped.into_bytes());
        for data in &cases {
            let whole = parse_entries(data);
            for size in [1, 2, 3, 7, 4096] {
                let trickled = parse_reader(Trickle { data, size });
                assert_eq!(
                    trickled,
                    whole,
                    "{size}: {:?}",
                    String::from_utf8_lossy(data)
                );
            }
        }
        assert_eq!(
            parse_entries(&cases[4]).problem.as_deref(),
            Some("invalid JSON in the entry at byte 27: expected value at line 1 column 1; salvaged 1 complete entries")
        );
    }

    #[test]
    fn long_fields_are_cut_as_if_read_whole() {
        // 2000 × `\u00e9\n\"` is 24,000 raw bytes for 8,000 decoded ones,
        // then a surrogate pair and 10,000 `é`: cut to 4096 bytes plus `…`.
        let body = format!(
            "{}\\ud83e\\udd80{}",
            "\\u00e9\\n\\\"".repeat(2000),
            "é".repeat(10_000)
        );
        let data = format!("[{{\"phase\":\"service end\",\"errorMessage\":\"{body}\"}}]");
        let parsed = parse_entries(data.as_bytes());
        let message = parsed.entries[0].error_message.as_deref().unwrap();
        let decoded: String = serde_json::from_str(&format!("\"{body}\"")).unwrap();
        let mut cut = MAX_FIELD_BYTES;
        while !decoded.is_char_boundary(cut) {
            cut -= 1;
        }
        assert_eq!(message, format!("{}…", &decoded[..cut]));
        // The cut can fall inside a surrogate pair's escapes: the half pair
        // is dropped, never kept broken.
        for pad in 0..12 {
            let body = format!(
                "{}{}",
                "x".repeat(RAW_STRING_KEEP - 6 - pad),
                "\\ud83e\\udd80".repeat(4)
            );
            let data = format!("[{{\"phase\":\"service end\",\"errorLine\":\"{body}\"}}]");
            let parsed = parse_entries(data.as_bytes());
            assert!(parsed.problem.is_none(), "{pad}: {:?}", parsed.problem);
            assert!(parsed.entries[0]
                .error_line
                .as_deref()
                .unwrap()
                .ends_with('…'));
        }
    }

    #[test]
    fn entries_are_bounded_in_size_and_in_text() {
        use std::fmt::Write as _;
        // An entry of a million keys is read to its end, skipped, counted.
        let mut big = String::from("[{\"phase\":\"service start\"},{");
        for i in 0..120_000 {
            let _ = write!(big, "\"k{i}\":1,");
        }
        big.push_str("\"phase\":\"x\"},{\"phase\":\"service end\",\"result\":\"success\"}]");
        let parsed = parse_entries(big.as_bytes());
        assert_eq!(parsed.entries.len(), 2);
        let problem = parsed.problem.unwrap();
        assert!(
            problem.starts_with("1 entries over 1 MiB skipped"),
            "{problem}"
        );
        // Entries of 4 KiB fields: the newest that fit 2 MiB of text.
        let message = "m".repeat(MAX_FIELD_BYTES);
        let mut data = String::from("[");
        for i in 0..1000 {
            if i > 0 {
                data.push(',');
            }
            let _ = write!(
                data,
                "{{\"phase\":\"stage end\",\"stage\":\"s{i}\",\"errorLine\":\"{message}\",\"errorMessage\":\"{message}\"}}"
            );
        }
        data.push(']');
        let parsed = parse_entries(data.as_bytes());
        let kept = parsed.entries.len();
        assert!(
            kept < 1000 && kept * 2 * MAX_FIELD_BYTES <= MAX_ENTRY_TEXT,
            "{kept}"
        );
        assert_eq!(
            parsed.entries.last().unwrap().stage.as_deref(),
            Some("s999")
        );
        assert!(parsed.problem.unwrap().starts_with(&format!(
            "1000 entries: only the newest {kept} kept (entry cap)"
        )));
    }
}
