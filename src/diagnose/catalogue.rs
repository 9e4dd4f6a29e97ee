//! The signature catalogue: the entries of `signatures/*.sigs` (their
//! format is `signatures/README.md`), embedded at build time (`build.rs`),
//! parsed once at start-up, and matched against a message. Its anchors join
//! the finder's (`anchors.rs`, the dispatch bit [`CATALOGUE_BIT`]); a line
//! holding one is put to the entries whose anchors it holds, each pattern
//! matched left to right with bounded captures, so a line costs the same
//! whatever it holds and however many entries there are.
//!
//! A malformed entry fails the unit test that parses every embedded file; at
//! run time it is skipped and logged once, never a panic on a host.

use std::fmt;
use std::sync::OnceLock;

use aho_corasick::AhoCorasick;

use super::grams::is_common;
use super::line;
use super::signal::{Category, Nature, Signal};

// Generated offsets are plain numbers.
#[allow(clippy::unreadable_literal)]
mod embedded {
    include!(concat!(env!("OUT_DIR"), "/signature_files.rs"));
}

/// Every embedded `.sigs` file as `(name, text)`, inflated once.
pub(crate) fn files() -> &'static [(&'static str, &'static str)] {
    static FILES: OnceLock<Vec<(&'static str, &'static str)>> = OnceLock::new();
    FILES.get_or_init(|| {
        use std::io::Read as _;
        let mut text = String::with_capacity(embedded::TEXT_LEN);
        if let Err(e) =
            flate2::read::DeflateDecoder::new(embedded::PACKED).read_to_string(&mut text)
        {
            // Packed by build.rs: only a damaged binary gets here.
            tracing::warn!("the signature catalogue could not be inflated ({e}); no entry is used");
            return Vec::new();
        }
        // Kept for the process's life: entries borrow their fields from it.
        let text: &'static str = Box::leak(text.into_boxed_str());
        embedded::FILES
            .iter()
            .filter_map(|&(name, start, end)| Some((name, text.get(start..end)?)))
            .collect()
    })
}

/// Which entries a line is put to: the dispatch bit of the catalogue's
/// anchors (the rules take bits 0 to 61, the unit events 63).
pub(super) const CATALOGUE_BIT: u64 = 1 << 62;
/// Longest capture in bytes: a longer one fails the match, so matching a
/// pattern costs a bounded amount per place its first literal occurs.
const MAX_CAPTURE: usize = 200;
/// Characters of a `{name...}` capture kept.
const MAX_REST_CHARS: usize = 120;
/// Shortest anchor, and the literal part every pattern needs.
const MIN_ANCHOR: usize = 4;
const MIN_LITERAL: usize = 8;
/// Longest summary once filled (the headline's own bound).
pub(crate) const MAX_SUMMARY_CHARS: usize = 160;

/// An entry's `severity:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    Error,
    Warning,
    Info,
    Recovery,
}

impl Level {
    fn parse(text: &str) -> Option<Level> {
        Some(match text {
            "error" => Level::Error,
            "warning" => Level::Warning,
            "info" => Level::Info,
            "recovery" => Level::Recovery,
            _ => return None,
        })
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Info => "info",
            Level::Recovery => "recovery",
        }
    }

    /// How the correlation weighs the signal (`signal::Nature`).
    fn nature(self) -> Nature {
        match self {
            Level::Error => Nature::Fatal,
            Level::Warning => Nature::Transient,
            Level::Info => Nature::Note,
            Level::Recovery => Nature::Recovery,
        }
    }
}

/// A piece of a pattern or a summary.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part<'a> {
    Literal(String),
    /// A capture: its name (`None` for `{_}`), and whether it takes the
    /// rest of the message (`{name...}`).
    Capture {
        name: Option<&'a str>,
        rest: bool,
    },
}

/// One `match:` line.
#[derive(Debug, Clone)]
struct Pattern<'a> {
    parts: Vec<Part<'a>>,
    /// The longest run of a literal part without `"` or `\` (which a log
    /// wrapper escapes: the finder reads the line as written).
    anchor: String,
    /// Bytes of literal text: among several entries matching one message,
    /// the most specific (most literal bytes) speaks.
    literal_bytes: usize,
}

impl Pattern<'_> {
    fn kept(&self) -> impl Iterator<Item = &str> + '_ {
        self.parts.iter().filter_map(|p| match p {
            Part::Capture { name, .. } => *name,
            Part::Literal(_) => None,
        })
    }
}

/// An entry's decisive value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Key<'a> {
    Capture(&'a str),
    Literal(&'a str),
}

/// One `example:` with its `expect:` line (empty when left out).
#[derive(Debug, Clone)]
pub(crate) struct Example<'a> {
    pub(crate) line: &'a str,
    pub(crate) expect: &'a str,
}

/// One entry of the catalogue.
#[derive(Debug, Clone)]
pub(crate) struct Signature<'a> {
    pub(crate) id: &'a str,
    pub(crate) category: Category,
    pub(crate) level: Level,
    patterns: Vec<Pattern<'a>>,
    key: Key<'a>,
    summary: Vec<Part<'a>>,
    hint: Option<&'a str>,
    pub(crate) source: &'a str,
    pub(crate) examples: Vec<Example<'a>>,
    /// The file and the line the entry starts on.
    pub(crate) file: &'a str,
    pub(crate) line: usize,
}

impl Signature<'_> {
    /// What to check: the entry's own hint, else its category's.
    pub(crate) fn hint(&self) -> &str {
        self.hint.unwrap_or_else(|| self.category.hint())
    }

    /// The capture names of the entry, in the order of its first pattern
    /// then any other's.
    #[cfg(test)]
    fn capture_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for p in &self.patterns {
            for n in p.kept() {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
        names
    }

    /// The captures of the first pattern matching `message`, with the
    /// literal bytes of that pattern.
    fn captures<'m>(&self, message: &'m str) -> Option<(usize, Vec<(&str, &'m str)>)> {
        self.patterns
            .iter()
            .find_map(|p| Some((p.literal_bytes, match_pattern(&p.parts, message)?)))
    }

    /// The summary filled with `captures`, before its bound.
    fn fill_unshortened(&self, captures: &[(&str, &str)]) -> String {
        let mut summary = String::new();
        for part in &self.summary {
            match part {
                Part::Literal(text) => summary.push_str(text),
                Part::Capture { name, .. } => {
                    push_escaped(&mut summary, value_of(captures, name.unwrap_or("")));
                }
            }
        }
        summary
    }

    /// The summary (bounded) and the key filled with `captures`.
    fn fill(&self, captures: &[(&str, &str)]) -> (String, String) {
        let value = |name: &str| value_of(captures, name);
        let summary = self.fill_unshortened(captures);
        let key = match self.key {
            Key::Capture(name) => {
                let mut key = String::new();
                push_escaped(&mut key, value(name));
                key
            }
            Key::Literal(text) => text.to_owned(),
        };
        (line::shorten(&summary, MAX_SUMMARY_CHARS), key)
    }

    /// The `expect:` captures of `example`, by the entry's capture names.
    #[cfg(test)]
    pub(crate) fn expected<'e>(&self, example: &Example<'e>) -> Vec<(String, &'e str)> {
        parse_expect(example.expect, &self.capture_names())
    }
}

/// The value of capture `name` (empty when absent: never, for an entry
/// that parsed).
fn value_of<'c>(captures: &[(&str, &'c str)], name: &str) -> &'c str {
    captures
        .iter()
        .find(|(n, _)| *n == name)
        .map_or("", |(_, v)| *v)
}

/// A capture's text as it may reach a headline: control characters
/// escaped (a terminal escape in a log line stays inert).
fn push_escaped(out: &mut String, text: &str) {
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
}

/// Why an entry was refused: the file, the line, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EntryError {
    pub(crate) file: String,
    pub(crate) line: usize,
    pub(crate) message: String,
}

impl fmt::Display for EntryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

/// The entries of one file, and why the others were refused.
pub(crate) fn parse_file<'a>(
    file: &'a str,
    text: &'a str,
) -> (Vec<Signature<'a>>, Vec<EntryError>) {
    let mut entries = Vec::new();
    let mut errors = Vec::new();
    let mut fields: Vec<(usize, &'a str, &'a str)> = Vec::new();
    let mut start = 0;
    let mut flush = |fields: &mut Vec<(usize, &'a str, &'a str)>, start: usize| {
        if fields.is_empty() {
            return;
        }
        match parse_entry(file, start, fields) {
            Ok(entry) => entries.push(entry),
            Err(message) => errors.push(EntryError {
                file: file.to_owned(),
                line: start,
                message,
            }),
        }
        fields.clear();
    };
    for (n, raw) in text.lines().enumerate() {
        let number = n + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            flush(&mut fields, start);
            continue;
        }
        if trimmed.starts_with('#') {
            continue;
        }
        if fields.is_empty() {
            start = number;
        }
        match raw.split_once(':') {
            Some((name, value)) if !name.contains(' ') => {
                fields.push((number, name, value.trim()));
            }
            _ => fields.push((number, "", trimmed)),
        }
    }
    flush(&mut fields, start);
    (entries, errors)
}

const FIELDS: [&str; 10] = [
    "id", "category", "severity", "match", "key", "summary", "hint", "source", "example", "expect",
];

fn parse_entry<'a>(
    file: &'a str,
    start: usize,
    fields: &[(usize, &'a str, &'a str)],
) -> Result<Signature<'a>, String> {
    let mut single: [Option<&'a str>; 10] = [None; 10];
    let mut matches = Vec::new();
    let mut examples: Vec<Example<'a>> = Vec::new();
    for &(number, name, value) in fields {
        let Some(i) = FIELDS.iter().position(|f| *f == name) else {
            return Err(format!(
                "line {number}: not a `field: value` line of a known field"
            ));
        };
        match name {
            "match" => matches.push((number, value)),
            "example" => examples.push(Example {
                line: value,
                expect: "",
            }),
            "expect" => match examples.last_mut() {
                Some(e) if e.expect.is_empty() => e.expect = value,
                _ => return Err(format!("line {number}: `expect:` without its `example:`")),
            },
            _ if single[i].is_some() => return Err(format!("line {number}: `{name}:` twice")),
            _ => single[i] = Some(value),
        }
    }
    let field = |name: &str| -> Result<&'a str, String> {
        let i = FIELDS.iter().position(|f| *f == name).expect("a field");
        single[i]
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("no `{name}:`"))
    };
    let id = field("id")?;
    let well_formed = id.split('.').count() >= 3
        && id.split('.').all(|p| !p.is_empty())
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'.');
    if !well_formed {
        return Err(format!(
            "id `{id}`: not `component.family.name` of [a-z0-9_.]"
        ));
    }
    let at = |message: String| format!("{id}: {message}");
    let category_name = field("category").map_err(at)?;
    let category = Category::from_name(category_name)
        .ok_or_else(|| at(format!("unknown category `{category_name}`")))?;
    let severity = field("severity").map_err(at)?;
    let level =
        Level::parse(severity).ok_or_else(|| at(format!("unknown severity `{severity}`")))?;
    if matches.is_empty() {
        return Err(at("no `match:`".into()));
    }
    let mut patterns = Vec::new();
    for (number, text) in matches {
        patterns.push(parse_pattern(text).map_err(|e| at(format!("line {number}: {e}")))?);
    }
    let key_text = field("key").map_err(at)?;
    let key = match key_text.strip_prefix('"').and_then(|k| k.strip_suffix('"')) {
        Some(literal) if !literal.is_empty() => Key::Literal(literal),
        Some(_) => return Err(at("an empty key".into())),
        None => Key::Capture(key_text),
    };
    let summary_text = field("summary").map_err(at)?;
    let summary = parse_parts(summary_text).map_err(|e| at(format!("summary: {e}")))?;
    if summary_text.contains("**") || summary_text.contains('`') {
        return Err(at("summary: no markdown".into()));
    }
    let mut used: Vec<&str> = Vec::new();
    for part in &summary {
        match part {
            Part::Capture {
                name: Some(name),
                rest: false,
            } => used.push(name),
            Part::Capture { .. } => {
                return Err(at(
                    "summary: a capture is `{name}`, one the patterns keep".into()
                ))
            }
            Part::Literal(_) => {}
        }
    }
    if let Key::Capture(name) = key {
        used.push(name);
    }
    for (i, p) in patterns.iter().enumerate() {
        if let Some(missing) = used.iter().find(|n| !p.kept().any(|k| k == **n)) {
            return Err(at(format!(
                "`{missing}` (key or summary) is not captured by match {}",
                i + 1
            )));
        }
    }
    let source = field("source").map_err(at)?;
    let mut words = source.split_whitespace();
    let cited = words.next().is_some_and(|repo| repo.contains('/')) && words.count() >= 2;
    if !cited {
        return Err(at("source: `owner/repo path function-or-symbol`".into()));
    }
    if examples.is_empty() {
        return Err(at("no `example:`".into()));
    }
    let hint = single[6].filter(|h| !h.is_empty());
    Ok(Signature {
        id,
        category,
        level,
        patterns,
        key,
        summary,
        hint,
        source,
        examples,
        file,
        line: start,
    })
}

/// Literal text and `{name}`, `{name...}`, `{_}` captures; `{{` and `}}`
/// are literal braces.
fn parse_parts(text: &str) -> Result<Vec<Part<'_>>, String> {
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(['{', '}']) {
        literal.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(after) = tail.strip_prefix("{{").or_else(|| tail.strip_prefix("}}")) {
            literal.push_str(&tail[..1]);
            rest = after;
            continue;
        }
        if tail.starts_with('}') {
            return Err("a lone `}` (write `}}`)".into());
        }
        let close = tail.find('}').ok_or("an unclosed `{`")?;
        let inner = &tail[1..close];
        let (name, is_rest) = match inner.strip_suffix("...") {
            Some(name) => (name, true),
            None => (inner, false),
        };
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !valid {
            return Err(format!(
                "`{{{inner}}}`: a capture is `{{name}}` of [a-z0-9_]"
            ));
        }
        if !literal.is_empty() {
            parts.push(Part::Literal(std::mem::take(&mut literal)));
        } else if matches!(parts.last(), Some(Part::Capture { .. })) {
            return Err(format!(
                "`{{{inner}}}`: two captures need literal text between them"
            ));
        }
        parts.push(Part::Capture {
            name: (name != "_").then_some(name),
            rest: is_rest,
        });
        rest = &tail[close + 1..];
    }
    literal.push_str(rest);
    if !literal.is_empty() {
        parts.push(Part::Literal(literal));
    }
    Ok(parts)
}

fn parse_pattern(text: &str) -> Result<Pattern<'_>, String> {
    let parts = parse_parts(text)?;
    let mut names: Vec<&str> = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        if let Part::Capture { name, rest } = part {
            if *rest && i + 1 != parts.len() {
                return Err("`{name...}` ends the pattern".into());
            }
            if let Some(name) = name {
                if names.contains(name) {
                    return Err(format!("`{{{name}}}` twice"));
                }
                names.push(name);
            }
        }
    }
    let literals = || {
        parts.iter().filter_map(|p| match p {
            Part::Literal(text) => Some(text.as_str()),
            Part::Capture { .. } => None,
        })
    };
    if !literals().any(|l| l.len() >= MIN_LITERAL) {
        return Err(format!("no literal part of {MIN_LITERAL} bytes or more"));
    }
    // The rarest run is the anchor: the one with the most 4-byte sequences
    // outside a healthy journal's commonest (`grams.rs`), then the longest.
    // A long but common run (`): state changed `) would stop the finder on
    // every healthy line that holds it, and each stop costs a read.
    let rarity = |run: &str| {
        let rare = run.as_bytes().windows(4).filter(|g| !is_common(g)).count();
        (rare, run.len())
    };
    let anchor = literals()
        .flat_map(|l| l.split(['"', '\\']))
        .fold("", |best, run| {
            if rarity(run) > rarity(best) {
                run
            } else {
                best
            }
        });
    if anchor.len() < MIN_ANCHOR {
        return Err(format!(
            "no run of {MIN_ANCHOR} bytes without `\"` or `\\` in a literal part (the anchor)"
        ));
    }
    let literal_bytes = literals().map(str::len).sum();
    Ok(Pattern {
        anchor: anchor.to_owned(),
        parts,
        literal_bytes,
    })
}

/// `name=value …` by the entry's capture names: a value runs to the next
/// ` name=` of one of them.
#[cfg(test)]
fn parse_expect<'e>(text: &'e str, names: &[&str]) -> Vec<(String, &'e str)> {
    // Where each `name=` starts (at the start, or after a blank).
    let mut starts: Vec<(usize, &str)> = Vec::new();
    for name in names {
        let token = format!("{name}=");
        for (at, _) in text.match_indices(&token) {
            if at == 0 || text.as_bytes()[at - 1] == b' ' {
                starts.push((at, name));
            }
        }
    }
    starts.sort_unstable();
    let mut out = Vec::new();
    for (i, &(at, name)) in starts.iter().enumerate() {
        let end = starts.get(i + 1).map_or(text.len(), |&(next, _)| next);
        let value = text[at + name.len() + 1..end].trim_end_matches(' ');
        out.push((name.to_owned(), value));
    }
    out
}

/// The captures of `parts` in `message` (anywhere in it), or `None`. Each
/// place the first literal occurs is tried once, left to right with no
/// backtracking, and every capture is bounded: the cost is linear in the
/// message.
fn match_pattern<'p, 'm>(parts: &[Part<'p>], message: &'m str) -> Option<Vec<(&'p str, &'m str)>> {
    let first = parts.iter().position(|p| matches!(p, Part::Literal(_)))?;
    let Part::Literal(literal) = &parts[first] else {
        return None;
    };
    let (hay, needle) = (message.as_bytes(), literal.as_bytes());
    let mut from = 0;
    while let Some(at) = find(&hay[from..], needle).map(|i| from + i) {
        if let Some(captures) = match_from(parts, message, first, at) {
            return Some(captures);
        }
        from = at + 1;
    }
    None
}

/// Where `needle` first occurs in `hay`: its first byte found by `memchr`,
/// the rest compared. The haystacks here are one message (a few KiB at
/// most) or a capture's window, and the needles short: cheaper than
/// building a `memmem` searcher for each search.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    let mut from = 0;
    while let Some(i) = memchr::memchr(first, &hay[from..]) {
        let at = from + i;
        if hay[at + 1..].starts_with(rest) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// Trailing characters that close a quotation or a sentence around a
/// token, not part of it.
const TOKEN_CLOSERS: &[char] = &['"', '\'', ',', ';', ')', ']', '}', '.'];

fn match_from<'p, 'm>(
    parts: &[Part<'p>],
    message: &'m str,
    first: usize,
    at: usize,
) -> Option<Vec<(&'p str, &'m str)>> {
    let bytes = message.as_bytes();
    let mut captures = Vec::new();
    if first == 1 {
        // A leading capture: the token that ends where the literal starts.
        let before = &message[..at];
        let from = before
            .bytes()
            .rposition(|b| b.is_ascii_whitespace())
            .map_or(0, |i| i + 1);
        let token = before[from..].trim_start_matches(['"', '\'', '(', '[', '{', '<']);
        if token.is_empty() || token.len() > MAX_CAPTURE {
            return None;
        }
        if let Part::Capture {
            name: Some(name), ..
        } = &parts[0]
        {
            captures.push((*name, token));
        }
    }
    let mut pos = at;
    let mut i = first;
    while i < parts.len() {
        match &parts[i] {
            Part::Literal(text) => {
                if !bytes[pos..].starts_with(text.as_bytes()) {
                    return None;
                }
                pos += text.len();
                i += 1;
            }
            Part::Capture { name, rest } => {
                let (value, end) = match parts.get(i + 1) {
                    Some(Part::Literal(next)) => {
                        // The shortest non-empty text up to the next literal.
                        let from = pos + message[pos..].chars().next()?.len_utf8();
                        let limit = (pos + MAX_CAPTURE + next.len()).min(bytes.len());
                        let found = find(bytes.get(from..limit)?, next.as_bytes())?;
                        (&message[pos..from + found], from + found)
                    }
                    Some(Part::Capture { .. }) => return None,
                    None if *rest => {
                        let text = message[pos..].trim();
                        if text.is_empty() {
                            return None;
                        }
                        let cut = text
                            .char_indices()
                            .nth(MAX_REST_CHARS)
                            .map_or(text.len(), |(i, _)| i);
                        (text[..cut].trim_end(), bytes.len())
                    }
                    None => {
                        let end = bytes[pos..]
                            .iter()
                            .position(u8::is_ascii_whitespace)
                            .map_or(bytes.len(), |i| pos + i);
                        let token = message[pos..end]
                            .trim_start_matches(['"', '\''])
                            .trim_end_matches(TOKEN_CLOSERS);
                        if token.is_empty() {
                            return None;
                        }
                        (token, end)
                    }
                };
                if value.len() > MAX_CAPTURE {
                    return None;
                }
                if let Some(name) = name {
                    captures.push((*name, value));
                }
                pos = end;
                i += 1;
            }
        }
    }
    Some(captures)
}

/// Captures by name: the pattern's names, the message's text.
type Captures<'p, 'm> = Vec<(&'p str, &'m str)>;

/// The catalogue built from the embedded files: every entry, the anchors
/// (for the finder) and the automaton that names the entries a message's
/// anchors belong to.
pub(crate) struct Catalogue {
    pub(crate) entries: Vec<Signature<'static>>,
    /// Distinct anchors (the entry and pattern of the first that holds
    /// it), and for each the entries holding it.
    anchors: Vec<((u32, u32), Vec<u32>)>,
    automaton: Option<AhoCorasick>,
    /// Entries refused (a build that passed its tests has none).
    pub(crate) errors: Vec<EntryError>,
}

impl Catalogue {
    /// The catalogue of the embedded files, built on first use.
    pub(crate) fn get() -> &'static Catalogue {
        static CATALOGUE: OnceLock<Catalogue> = OnceLock::new();
        CATALOGUE.get_or_init(|| {
            let catalogue = Catalogue::build(files());
            for error in &catalogue.errors {
                tracing::warn!("signature catalogue: entry skipped: {error}");
            }
            catalogue
        })
    }

    /// The catalogue of `files` (name, text): entries refused and ids seen
    /// before are left out and said in `errors`.
    pub(crate) fn build(files: &'static [(&'static str, &'static str)]) -> Catalogue {
        let mut entries: Vec<Signature<'static>> = Vec::new();
        let mut errors = Vec::new();
        for (name, text) in files {
            let (parsed, refused) = parse_file(name, text);
            errors.extend(refused);
            for entry in parsed {
                if entries.iter().any(|e| e.id == entry.id) {
                    errors.push(EntryError {
                        file: (*name).to_owned(),
                        line: entry.line,
                        message: format!("id `{}` used before", entry.id),
                    });
                    continue;
                }
                entries.push(entry);
            }
        }
        // Each distinct anchor: where it is written first (entry, pattern)
        // and the entries holding it.
        let mut anchors: Vec<((u32, u32), Vec<u32>)> = Vec::new();
        let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for (i, entry) in entries.iter().enumerate() {
            let index = u32::try_from(i).expect("fewer than 4 billion entries");
            for (p, pattern) in entry.patterns.iter().enumerate() {
                let place = (index, u32::try_from(p).expect("a few patterns"));
                match seen.get(pattern.anchor.as_str()) {
                    Some(&a) if anchors[a].1.last() != Some(&index) => anchors[a].1.push(index),
                    Some(_) => {}
                    None => {
                        seen.insert(&pattern.anchor, anchors.len());
                        anchors.push((place, vec![index]));
                    }
                }
            }
        }
        // A contiguous NFA: small (a few hundred KiB at most for thousands
        // of anchors); it reads only lines the finder stopped at.
        let automaton = aho_corasick::AhoCorasickBuilder::new()
            .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
            .build(
                anchors
                    .iter()
                    .map(|&((e, p), _)| entries[e as usize].patterns[p as usize].anchor.as_str()),
            )
            .ok();
        Catalogue {
            entries,
            anchors,
            automaton,
            errors,
        }
    }

    /// The distinct anchors, for the finder.
    pub(super) fn anchors(&'static self) -> impl Iterator<Item = &'static str> {
        self.anchors.iter().map(|&((e, p), _)| {
            self.entries[e as usize].patterns[p as usize]
                .anchor
                .as_str()
        })
    }

    /// The entry that matches `message` best, with its captures: among
    /// the entries whose anchors it holds, the one whose matching pattern
    /// has the most literal bytes (the most specific), the first in the
    /// catalogue's order at equal length.
    fn best<'s, 'm>(&'s self, message: &'m str) -> Option<(usize, Captures<'s, 'm>)> {
        let automaton = self.automaton.as_ref()?;
        let mut candidates: Vec<u32> = Vec::new();
        for m in automaton.find_overlapping_iter(message) {
            candidates.extend(&self.anchors[m.pattern().as_usize()].1);
        }
        candidates.sort_unstable();
        candidates.dedup();
        let mut best: Option<(usize, usize, Captures<'s, 'm>)> = None;
        for i in candidates {
            let i = i as usize;
            let Some((bytes, captures)) = self.entries[i].captures(message) else {
                continue;
            };
            if best.as_ref().is_none_or(|(b, _, _)| bytes > *b) {
                best = Some((bytes, i, captures));
            }
        }
        best.map(|(_, i, captures)| (i, captures))
    }

    /// The signal of the entry that matches `message` (the part after the
    /// journal prefix), read with `\"` unescaped as the component wrote it.
    pub(super) fn classify(&self, message: &str) -> Option<Signal> {
        let unescaped;
        let message = if message.contains("\\\"") {
            unescaped = message.replace("\\\"", "\"");
            unescaped.as_str()
        } else {
            message
        };
        let (i, captures) = self.best(message)?;
        let entry = &self.entries[i];
        let (summary, key) = entry.fill(&captures);
        let mut signal = Signal::new(entry.category, key, summary, entry.level.nature());
        signal.signature = Some(u32::try_from(i).expect("fewer than 4 billion entries"));
        Some(signal)
    }

    /// The captures of entry `index` in `message` (tests: what the
    /// example's `expect:` is checked against).
    #[cfg(test)]
    pub(crate) fn captures_of<'s, 'm>(
        &'s self,
        index: usize,
        message: &'m str,
    ) -> Option<Vec<(&'s str, &'m str)>> {
        self.entries[index].captures(message).map(|(_, c)| c)
    }
}

/// The signal of the catalogue entry that matches `message`, if any.
pub(super) fn classify(message: &str) -> Option<Signal> {
    Catalogue::get().classify(message)
}

#[cfg(test)]
mod tests;

/// What to check for a signal: the catalogue entry's hint when an entry
/// spoke, else the category's.
pub(super) fn hint_of(signal: &Signal) -> &'static str {
    signal
        .signature
        .and_then(|i| Catalogue::get().entries.get(i as usize))
        .map_or_else(|| signal.category.hint(), |e| e.hint())
}
