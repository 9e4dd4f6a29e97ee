//! The normaliser: one log line of any shape the agent collects or a user
//! pastes, taken apart into its time, the program that logged it, and the
//! message the rules read. Shapes (docs/diagnosis.md, "Shapes read"):
//!
//! - journal prefixes of `journalctl -o short-iso(-precise)`, `short(-precise)`,
//!   `short-full` and `short-monotonic`, and kernel `dmesg` stamps;
//! - inside a message (or alone): klog (`E1018 03:03:52.904189 3674 f.go:447] m`),
//!   etcd's capnslog (`2018-12-08 06:57:52.861971 W | etcdserver: m`) and zap
//!   JSON (`{"level":"warn","ts":"…","msg":"…"}`), logrus/crio
//!   (`time="…" level=error msg="…"`), the CRI pod log format
//!   (`2024-01-02T03:04:05.6Z stderr F m`), Go's `log` (`2024/01/02 03:04:05 m`);
//! - pasted around them: `systemctl status` blocks (the `●` header, `Active:`),
//!   `bash -x` traces (`+ cmd`), shell prompts (`[core@h ~]$ cmd`, `$ cmd`),
//!   quote markers (`> `) and indentation.
//!
//! A year-less stamp (syslog, klog) is kept as month, day and time of day
//! ([`Stamp::YearLess`]); the scanner dates it from the stream's last full
//! stamp. Everything here takes any bytes: the fuzz target `diagnose` drives it.

/// When a line says it was logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stamp {
    /// Seconds since the Unix epoch.
    Full(i64),
    /// A stamp without a year (syslog's `Feb 03 10:04:01`, klog's `E0203`).
    YearLess {
        month: u8,
        day: u8,
        secs_of_day: u32,
    },
}

/// What kind of line it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Something a program logged: the rules read it.
    Event,
    /// A command typed or traced (`$ cmd`, `+ cmd`): not an event.
    Command,
    /// `● kubelet.service - …`: the unit a `systemctl status` block is about.
    StatusHeader,
    /// `Active: failed (Result: exit-code) since …` of a status block.
    StatusFailed,
}

/// A line's parts. `ident` is the syslog identifier without the pid
/// (`kubelet`, `bootkube.sh`), or the unit of a status header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts<'a> {
    /// Seconds since the Unix epoch, when the line carries a full stamp.
    pub(crate) at: Option<i64>,
    /// The stamp as the line gives it.
    pub(crate) stamp: Option<Stamp>,
    pub(crate) ident: Option<&'a str>,
    pub message: &'a str,
    pub(crate) shape: Shape,
}

/// Takes one line apart; a line with no recognised prefix is all message.
pub fn parse(line: &str) -> Parts<'_> {
    let mut end = line.len();
    while end > 0 && matches!(line.as_bytes()[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    let line = &line[..end];
    let mut text = strip_paste(line);
    let mut parts = Parts {
        at: None,
        stamp: None,
        ident: None,
        message: text,
        shape: Shape::Event,
    };
    if let Some(rest) = status_header(text) {
        parts.ident = Some(rest);
        parts.shape = Shape::StatusHeader;
        return parts;
    }
    if let Some(rest) = text.strip_prefix("Active: ") {
        if rest.starts_with("failed") {
            parts.shape = Shape::StatusFailed;
        }
        return parts;
    }
    if is_command(text) {
        parts.shape = Shape::Command;
        return parts;
    }
    // The outer (journal) prefix, then what the program itself printed.
    // A pod log or capnslog line opens with an ISO stamp too: its own.
    // Parsed once: most lines the engine reads open with the journal's.
    let iso = if text.as_bytes().first().is_some_and(u8::is_ascii_digit) {
        iso_stamp(text)
    } else {
        None
    };
    let own_stamp = iso.is_some_and(|(_, rest)| {
        rest.starts_with("stdout ") || rest.starts_with("stderr ") || rest.get(1..4) == Some(" | ")
    });
    let journal = match iso {
        Some((at, rest)) => Some((Stamp::Full(at), rest)),
        None => journal_stamp(text),
    };
    if own_stamp {
        // Read by the loop below.
    } else if let Some((stamp, rest)) = journal {
        parts.stamp = Some(stamp);
        let (ident, message) = host_and_ident(rest);
        parts.ident = ident;
        text = message;
        // A script's `set -x` trace in the journal (`configure-ovs.sh[1898]:
        // + nmcli conn up br-ex`, `++ ip -j route show default`): the
        // command, not what it printed, so not an event.
        if ident.is_some() && is_trace(text) {
            parts.message = text;
            parts.shape = Shape::Command;
            parts.at = match parts.stamp {
                Some(Stamp::Full(at)) => Some(at),
                _ => None,
            };
            return parts;
        }
    } else if let Some(rest) = dmesg_stamp(text) {
        text = rest;
    }
    for _ in 0..3 {
        let Some((stamp, ident, rest)) = inner_prefix(text) else {
            break;
        };
        let progressed = rest.len() < text.len();
        if let Some(stamp) = stamp {
            parts.stamp = Some(merge(parts.stamp, stamp));
        }
        if parts.ident.is_none() {
            parts.ident = ident;
        }
        text = rest;
        if !progressed {
            break;
        }
    }
    parts.message = text;
    parts.at = match parts.stamp {
        Some(Stamp::Full(at)) => Some(at),
        _ => None,
    };
    parts
}

/// Prefixes a paste adds: indentation, quote markers, a `systemctl status`
/// tree's `└─` and `│`.
fn strip_paste(line: &str) -> &str {
    // A journal line opens with its stamp: nothing to strip.
    if line
        .as_bytes()
        .first()
        .is_some_and(u8::is_ascii_alphanumeric)
    {
        return line;
    }
    let mut text = line.trim_start();
    loop {
        let before = text.len();
        for marker in [
            "> ",
            ">",
            "\u{2514}\u{2500}",
            "\u{2502} ",
            "\u{251c}\u{2500}",
        ] {
            if let Some(rest) = text.strip_prefix(marker) {
                text = rest.trim_start();
            }
        }
        if text.len() == before {
            return text;
        }
    }
}

/// `● kubelet.service - Kubernetes Kubelet` (also `×`, `○`): the unit name
/// without `.service`.
fn status_header(text: &str) -> Option<&str> {
    // The markers' first bytes (`●` and `○` are E2 …, `×` is C3 97).
    if !matches!(text.as_bytes().first(), Some(0xE2 | 0xC3 | b'*')) {
        return None;
    }
    let rest = ["\u{25cf} ", "\u{00d7} ", "\u{25cb} ", "* "]
        .iter()
        .find_map(|m| text.strip_prefix(m))?;
    let (unit, _) = rest.split_once(" - ")?;
    let unit = unit.trim();
    let name = unit
        .strip_suffix(".service")
        .or_else(|| unit.strip_suffix(".target"))
        .or_else(|| unit.strip_suffix(".path"))?;
    (!name.is_empty() && !name.contains(' ')).then_some(name)
}

/// A shell prompt or a `bash -x` trace: `$ oc get csr`, `# journalctl …`,
/// `[core@master-0 ~]$ …`, `+ nmcli …`, `++ ip route`.
fn is_command(text: &str) -> bool {
    if !matches!(text.as_bytes().first(), Some(b'$' | b'#' | b'+' | b'[')) {
        return false;
    }
    if text.starts_with("$ ") || text.starts_with("# ") {
        return true;
    }
    if is_trace(text) {
        return true;
    }
    if let Some(rest) = text.strip_prefix('[') {
        if let Some(close) = rest.find(']') {
            let inside = &rest[..close];
            let after = &rest[close + 1..];
            return inside.contains('@') && (after.starts_with("$ ") || after.starts_with("# "));
        }
    }
    false
}

/// A `bash -x` trace line: one to six `+` (the nesting depth) and a space.
fn is_trace(text: &str) -> bool {
    let plus = text.bytes().take_while(|&b| b == b'+').count();
    plus > 0 && plus <= 6 && text.as_bytes().get(plus) == Some(&b' ')
}

/// The stamp of a journal prefix and what follows it: ISO
/// (`2026-11-22T10:00:01.25+0000 `), syslog (`Feb 03 10:04:01[.123] `),
/// `short-full` (`Mon 2026-11-22 10:00:01 UTC `).
fn journal_stamp(text: &str) -> Option<(Stamp, &str)> {
    if let Some((at, rest)) = iso_stamp(text) {
        return Some((Stamp::Full(at), rest));
    }
    if let Some((stamp, rest)) = syslog_stamp(text) {
        return Some((stamp, rest));
    }
    // short-full: `Mon 2026-11-22 10:00:01 UTC host …`
    let b = text.as_bytes();
    if b.len() > 24 && b[3] == b' ' && b[0].is_ascii_uppercase() {
        let rest = &text[4..];
        let end = rest.get(19..)?.find(' ').map(|i| 19 + i)?;
        let zone_end = rest[end + 1..].find(' ').map(|i| end + 1 + i)?;
        let at = parse_rfc3339(&rest[..zone_end]).or_else(|| parse_rfc3339(&rest[..end]))?;
        return Some((Stamp::Full(at), &rest[zone_end + 1..]));
    }
    None
}

/// `2026-11-22T10:00:01.250000+0000 rest` (also `Z`, `+00:00`, a space for
/// `T`, no fraction).
fn iso_stamp(text: &str) -> Option<(i64, &str)> {
    let b = text.as_bytes();
    if b.len() < 20 || !b[0].is_ascii_digit() || b[4] != b'-' {
        return None;
    }
    let end = if b[10] == b'T' {
        memchr::memchr(b' ', b)?
    } else {
        // `2026-11-22 10:00:01.25 rest`: the date's space is not the end.
        19 + text.get(19..)?.find(' ')?
    };
    let at = parse_rfc3339(&text[..end])?;
    Some((at, &text[end + 1..]))
}

/// Seconds since the epoch of an RFC 3339-like stamp as journalctl and Go
/// print them; `None` for anything else.
pub(crate) fn parse_rfc3339(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    // `YYYY-MM-DD?hh:mm:ss`: the separators are checked above, every other
    // byte must be a digit (so byte 19 is a character boundary).
    let mut fields = [0i64; 6];
    for (i, &c) in b[..19].iter().enumerate() {
        let field = match i {
            4 | 7 | 10 | 13 | 16 => continue,
            0..=3 => 0,
            5 | 6 => 1,
            8 | 9 => 2,
            11 | 12 => 3,
            14 | 15 => 4,
            _ => 5,
        };
        if !c.is_ascii_digit() {
            return None;
        }
        fields[field] = fields[field] * 10 + i64::from(c - b'0');
    }
    let [year, month, day, hour, minute, second] = fields;
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let secs = hour * 3600 + minute * 60 + second;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let mut rest = &text[19..];
    if let Some(frac) = rest.strip_prefix('.').or_else(|| rest.strip_prefix(',')) {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        rest = &frac[digits..];
    }
    let offset = match rest.trim_start() {
        "" | "Z" | "UTC" | "+0000 UTC" | "GMT" => 0,
        zone => {
            let sign = match zone.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            // `+0000`, `+00:00`: the first four digits of the next six.
            let mut digits = [0i64; 4];
            let mut n = 0;
            for &c in zone.as_bytes()[1..].iter().take(6) {
                if c.is_ascii_digit() && n < 4 {
                    digits[n] = i64::from(c - b'0');
                    n += 1;
                }
            }
            if n < 4 {
                return None;
            }
            let h = digits[0] * 10 + digits[1];
            let m = digits[2] * 10 + digits[3];
            sign * (h * 3600 + m * 60)
        }
    };
    let days = days_from_civil(year, month, day);
    Some(days * 86_400 + secs - offset)
}

fn num(text: &str, from: usize, to: usize) -> Option<i64> {
    let s = text.as_bytes().get(from..to)?;
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0, |n, &c| n * 10 + i64::from(c - b'0')))
}

/// `HH:MM:SS` as seconds of the day.
fn time_of_day(text: &str) -> Option<u32> {
    let b = text.as_bytes();
    if b.len() != 8 || b[2] != b':' || b[5] != b':' {
        return None;
    }
    let (h, m, s) = (num(text, 0, 2)?, num(text, 3, 5)?, num(text, 6, 8)?);
    if h > 23 || m > 59 || s > 60 {
        return None;
    }
    u32::try_from(h * 3600 + m * 60 + s).ok()
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// algorithm).
pub(super) fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// `Feb 03 10:04:01 ` or `Feb  3 10:04:01.123456 ` at the start of a line.
fn syslog_stamp(text: &str) -> Option<(Stamp, &str)> {
    // `get`, not indexing: a multi-byte character may straddle byte 3.
    let month = MONTHS.iter().position(|m| text.get(..3) == Some(*m))?;
    let b = text.as_bytes();
    if b.get(3) != Some(&b' ') {
        return None;
    }
    let day_text = text.get(4..6)?.trim_start();
    let day: u8 = day_text.parse().ok().filter(|d| (1..=31).contains(d))?;
    if b.get(6) != Some(&b' ') {
        return None;
    }
    let secs_of_day = time_of_day(text.get(7..15)?)?;
    let mut rest = &text[15..];
    if let Some(frac) = rest.strip_prefix('.') {
        rest = &frac[frac.bytes().take_while(u8::is_ascii_digit).count()..];
    }
    let rest = rest.strip_prefix(' ')?;
    Some((
        Stamp::YearLess {
            month: u8::try_from(month + 1).ok()?,
            day,
            secs_of_day,
        },
        rest,
    ))
}

/// `[  123.456789] ` of dmesg and `short-monotonic`.
fn dmesg_stamp(text: &str) -> Option<&str> {
    let rest = text.strip_prefix('[')?;
    let close = rest.find("] ")?;
    let inside = rest[..close].trim();
    let ok = !inside.is_empty()
        && inside.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && inside.contains('.');
    ok.then(|| &rest[close + 2..])
}

/// `host ident[pid]: message` → (ident, message). Without a tag the text
/// after the stamp is all message.
fn host_and_ident(rest: &str) -> (Option<&str>, &str) {
    let Some(space) = memchr::memchr(b' ', rest.as_bytes()) else {
        return (None, rest);
    };
    let after_host = &rest[space + 1..];
    // The tag runs to the first `: `; a blank, a quote or `=` before it
    // means there is no tag. One pass over its bytes (all ASCII stops, so
    // every cut is a character boundary).
    let b = after_host.as_bytes();
    let mut colon = None;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b':' if b.get(i + 1) == Some(&b' ') => {
                colon = Some(i);
                break;
            }
            b' ' | b'"' | b'=' => return (None, rest),
            _ => {}
        }
    }
    let Some(colon) = colon.filter(|&c| c > 0) else {
        return (None, rest);
    };
    let tag = &after_host[..colon];
    let ident = memchr::memchr(b'[', tag.as_bytes()).map_or(tag, |i| &tag[..i]);
    (Some(ident), &after_host[colon + 2..])
}

/// One prefix a program printed itself, inside a journal message or alone:
/// (its stamp, its identifier, the rest).
fn inner_prefix(text: &str) -> Option<(Option<Stamp>, Option<&str>, &str)> {
    let b = text.as_bytes();
    let first = *b.first()?;
    // klog: `E1018 03:03:52.904189    3674 file.go:447] message`.
    if matches!(first, b'I' | b'W' | b'E' | b'F') && b.len() > 22 && b[5] == b' ' {
        if let (Some(month), Some(day)) = (num(text, 1, 3), num(text, 3, 5)) {
            if let Some(secs_of_day) = text.get(6..14).and_then(time_of_day) {
                let close = close_bracket(b)?;
                let stamp = match (u8::try_from(month), u8::try_from(day)) {
                    (Ok(month @ 1..=12), Ok(day @ 1..=31)) => Some(Stamp::YearLess {
                        month,
                        day,
                        secs_of_day,
                    }),
                    _ => None,
                };
                return Some((stamp, None, &text[close + 2..]));
            }
        }
    }
    // CRI pod log: `2024-01-02T03:04:05.123456789+00:00 stderr F message`.
    if first.is_ascii_digit() {
        if let Some((at, rest)) = iso_stamp(text) {
            for stream in ["stdout ", "stderr "] {
                if let Some(tail) = rest.strip_prefix(stream) {
                    let tail = tail
                        .strip_prefix("F ")
                        .or_else(|| tail.strip_prefix("P "))
                        .unwrap_or(tail);
                    return Some((Some(Stamp::Full(at)), None, tail));
                }
            }
            // capnslog: `2018-12-08 06:57:52.861971 W | etcdserver: message`.
            let rb = rest.as_bytes();
            if rb.len() > 4 && rb[1] == b' ' && rest[2..].starts_with("| ") {
                let body = &rest[4..];
                let (ident, message) = match body.split_once(": ") {
                    Some((pkg, m)) if !pkg.contains(' ') => (Some(pkg), m),
                    _ => (None, body),
                };
                return Some((Some(Stamp::Full(at)), ident, message));
            }
            // A program's own ISO stamp before its message (installer,
            // assisted-installer, etcd's plain text).
            return Some((Some(Stamp::Full(at)), None, rest));
        }
        // Go's log: `2024/01/02 03:04:05 message`.
        if b.len() > 20 && b[4] == b'/' && b[7] == b'/' && b[10] == b' ' {
            let iso = format!(
                "{}-{}-{}T{}Z",
                text.get(..4)?,
                text.get(5..7)?,
                text.get(8..10)?,
                text.get(11..19)?
            );
            let at = parse_rfc3339(&iso)?;
            let rest = text
                .get(19..)?
                .trim_start_matches(|c: char| c == '.' || c.is_ascii_digit());
            return Some((Some(Stamp::Full(at)), None, rest.trim_start()));
        }
    }
    // etcd's zap JSON: the stamp from `"ts"`; the object stays the message
    // (its fields carry the durations the rules compare).
    if text.starts_with("{\"level\":") || text.starts_with("{\"ts\":") {
        let ts = super::line::after_lit!(text, "\"ts\":\"")
            .map(|r| super::line::token_until(r, &['"']))
            .and_then(parse_rfc3339);
        return ts.map(|at| (Some(Stamp::Full(at)), None, text));
    }
    // logrus (crio, podman, the installer): `time="2024-…" level=error msg="…"`.
    if let Some(rest) = text.strip_prefix("time=\"") {
        let (ts, tail) = rest.split_once('"')?;
        let at = parse_rfc3339(ts);
        return Some((at.map(Stamp::Full), None, tail.trim_start()));
    }
    None
}

/// Where the first `] ` starts (klog's header ends there).
fn close_bracket(b: &[u8]) -> Option<usize> {
    memchr::memchr_iter(b']', b).find(|&i| b.get(i + 1) == Some(&b' '))
}

/// A year-less stamp dated by a full stamp (the stream's latest): the year
/// that puts it nearest.
pub(crate) fn date_yearless(stamp: Stamp, near: Option<i64>) -> Option<i64> {
    match stamp {
        Stamp::Full(at) => Some(at),
        Stamp::YearLess {
            month,
            day,
            secs_of_day,
        } => {
            let near = near?;
            let year = near.div_euclid(86_400 * 365_2425 / 10_000) + 1970;
            [year - 1, year, year + 1]
                .into_iter()
                .map(|y| {
                    days_from_civil(y, i64::from(month), i64::from(day)) * 86_400
                        + i64::from(secs_of_day)
                })
                .min_by_key(|at| (at - near).abs())
        }
    }
}

/// Joins two stamps of one line: the journal's full stamp wins (it is
/// when the line was logged, in one clock for every program); a program's
/// own stamp dates a line that has no full one.
fn merge(outer: Option<Stamp>, inner: Stamp) -> Stamp {
    match (outer, inner) {
        (Some(Stamp::Full(at)), _) => Stamp::Full(at),
        (_, inner) => inner,
    }
}

/// Whether `line` opens with an ISO date and time (`2026-11-22T10:00:01`
/// or with a space), the shape of the journal's own lines.
pub(crate) fn starts_with_iso_stamp(line: &[u8]) -> bool {
    line.len() > 20
        && line[0].is_ascii_digit()
        && line[4] == b'-'
        && line[7] == b'-'
        && matches!(line[10], b'T' | b' ')
        && line[13] == b':'
}

/// Where a record of some program starts in `text`: a line that opens with
/// one of the shapes above. Continuation lines of a wrapped message do not.
pub(crate) fn starts_record(text: &str) -> bool {
    // The journal's own lines, nearly every line the agent reads: an ISO
    // date at the start is enough.
    if starts_with_iso_stamp(text.as_bytes()) {
        return true;
    }
    let text = strip_paste(text);
    if text.is_empty() {
        return false;
    }
    journal_stamp(text).is_some()
        || dmesg_stamp(text).is_some()
        || inner_prefix(text).is_some()
        || text.starts_with("{\"")
        || status_header(text).is_some()
        || text.starts_with("Active: ")
        || is_command(text)
}

/// Whether lines after `text` may continue it: an event some program
/// logged, not a command typed or a status block's header.
pub(crate) fn takes_continuations(text: &str) -> bool {
    starts_record(text) && is_event_start(text)
}

/// For a line that starts a record: whether it is an event (not a command
/// typed or a status block's header), so that lines after it may continue it.
pub(crate) fn is_event_start(text: &str) -> bool {
    let bare = strip_paste(text);
    status_header(bare).is_none() && !bare.starts_with("Active: ") && !is_command(bare)
}

/// Byte offsets in `text` (after its first) where another journal record
/// starts: several messages run together on one line.
pub(crate) fn run_together(text: &str) -> Vec<usize> {
    let mut cuts = Vec::new();
    let b = text.as_bytes();
    let mut from = 1;
    while let Some(i) = memchr::memchr(b' ', b.get(from..).unwrap_or_default()) {
        let at = from + i + 1;
        from = at;
        if cuts.len() >= 8 {
            break;
        }
        let Some(head) = text.get(at..) else {
            continue;
        };
        // Cheap look first: an ISO date or a month's name.
        let hb = head.as_bytes();
        let iso = hb.len() > 20 && hb[0].is_ascii_digit() && hb[4] == b'-' && hb[7] == b'-';
        let month =
            hb.len() > 16 && hb[3] == b' ' && MONTHS.iter().any(|m| hb.starts_with(m.as_bytes()));
        if !iso && !month {
            continue;
        }
        let prev = text[..at - 1].trim_end();
        if prev.ends_with(':') || prev.ends_with('=') || prev.ends_with("time") {
            continue;
        }
        if let Some((_, rest)) = journal_stamp(head) {
            if host_and_ident(rest).0.is_some() {
                cuts.push(at);
            }
        }
    }
    cuts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_straddling_the_month_is_not_a_syslog_prefix() {
        // Found by fuzz/fuzz_targets/diagnose.rs: '\u{fffd}' (3 bytes) at
        // byte 2 made the month slice panic.
        let line = "20\u{fffd}25-02-03T09:e55:01 master-0 x: y";
        assert_eq!(syslog_stamp(line), None);
        let _ = parse(line);
        assert!(syslog_stamp("Feb 03 10:04:01 h x: y").is_some());
    }

    #[test]
    fn characters_straddling_stamp_fields_are_not_stamps() {
        // Found by fuzz/fuzz_targets/diagnose.rs: a 3-byte character at
        // byte 18 made the ISO end search slice mid-character.
        for line in [
            "2026-11-200 master-0 r\u{fffd}x",
            "2026-11-20 10:00:0\u{fffd} master-0 x[1]: y",
            "2024/01/02 03:04:0\u{fffd} boom",
        ] {
            let _ = parse(line);
            let _ = starts_record(line);
            let _ = run_together(line);
        }
    }

    #[test]
    fn journal_prefix_gives_time_ident_and_message() {
        let p = parse("2026-11-22T10:00:01.250000+0000 master-0 kubelet[1234]: hello: world\n");
        assert_eq!(p.at, Some(1_795_341_601));
        assert_eq!(p.ident, Some("kubelet"));
        assert_eq!(p.message, "hello: world");
        let p = parse("2026-11-22T11:00:01+0100 h systemd[1]: x");
        assert_eq!(p.at, Some(1_795_341_601));
        let p = parse("Sun 2026-11-22 10:00:01 UTC master-0 kubelet[1]: m");
        assert_eq!(
            (p.at, p.ident, p.message),
            (Some(1_795_341_601), Some("kubelet"), "m")
        );
    }

    #[test]
    fn syslog_prefix_has_a_yearless_stamp() {
        let p = parse("Feb 03 10:04:01 master-0 bootkube.sh[2314]: Error: boom");
        assert_eq!(p.at, None);
        assert_eq!(
            p.stamp,
            Some(Stamp::YearLess {
                month: 2,
                day: 3,
                secs_of_day: 36_241
            })
        );
        assert_eq!(p.ident, Some("bootkube.sh"));
        assert_eq!(p.message, "Error: boom");
        let p = parse("Feb  3 10:04:01.123456 m x[1]: y");
        assert_eq!((p.ident, p.message), (Some("x"), "y"));
        let near = parse_rfc3339("2025-02-03T09:00:00Z");
        assert_eq!(
            date_yearless(p.stamp.unwrap(), near),
            parse_rfc3339("2025-02-03T10:04:01Z")
        );
    }

    #[test]
    fn klog_inside_the_journal_and_alone() {
        let p = parse("2026-11-22T10:00:01.25Z m0 kubelet[7]: E1122 10:00:01.250000    3674 file.go:447] failed to list: boom");
        assert_eq!(p.ident, Some("kubelet"));
        assert_eq!(p.message, "failed to list: boom");
        assert_eq!(p.at, Some(1_795_341_601));
        let p = parse("E1018 03:03:52.904189    3674 reflector.go:147] pkg: Failed to watch");
        assert_eq!(p.message, "pkg: Failed to watch");
        assert!(matches!(
            p.stamp,
            Some(Stamp::YearLess {
                month: 10,
                day: 18,
                ..
            })
        ));
    }

    #[test]
    fn capnslog_cri_logrus_golog_and_zap() {
        let p = parse(
            "2018-12-08 06:57:52.861971 W | etcdserver: read-only range request took too long",
        );
        assert_eq!(p.ident, Some("etcdserver"));
        assert_eq!(p.message, "read-only range request took too long");
        assert_eq!(p.at, parse_rfc3339("2018-12-08T06:57:52Z"));
        let p =
            parse("2024-01-02T03:04:05.123456789+00:00 stderr F E0102 03:04:05.1 1 x.go:1] boom");
        assert_eq!(p.message, "boom");
        let p = parse(r#"time="2024-01-02T03:04:05Z" level=error msg="pull failed""#);
        assert_eq!(p.message, r#"level=error msg="pull failed""#);
        assert!(p.at.is_some());
        let p = parse("2024/01/02 03:04:05 dial tcp: i/o timeout");
        assert_eq!(p.message, "dial tcp: i/o timeout");
        let z = r#"{"level":"warn","ts":"2024-01-02T03:04:05.1Z","msg":"slow fdatasync"}"#;
        let line = format!("2024-01-02T03:04:06Z m0 etcd[9]: {z}");
        let p = parse(&line);
        assert_eq!(p.message, z);
    }

    #[test]
    fn pasted_shapes() {
        let p = parse("  > Feb 03 10:04:01 m x[1]: y");
        assert_eq!(p.message, "y");
        assert_eq!(parse("+ nmcli conn up br-ex").shape, Shape::Command);
        assert_eq!(parse("++ ip route show").shape, Shape::Command);
        let traced = parse("Jul 30 20:38:13 master-2 configure-ovs.sh[1898]: + echo 'Default gateway interface found: null'");
        assert_eq!(traced.shape, Shape::Command);
        assert_eq!(traced.ident, Some("configure-ovs.sh"));
        let printed = parse("Jul 30 20:38:13 master-2 configure-ovs.sh[1898]: Default gateway interface found: null");
        assert_eq!(printed.shape, Shape::Event);
        assert_eq!(parse("[core@master-0 ~]$ oc get csr").shape, Shape::Command);
        assert_eq!(parse("$ journalctl -u kubelet").shape, Shape::Command);
        let h = parse("\u{25cf} kubelet.service - Kubernetes Kubelet");
        assert_eq!((h.shape, h.ident), (Shape::StatusHeader, Some("kubelet")));
        let a = parse("     Active: failed (Result: exit-code) since Mon 2024-01-01");
        assert_eq!(a.shape, Shape::StatusFailed);
        assert_eq!(
            parse("[   12.345678] ens3: Link is Down").message,
            "ens3: Link is Down"
        );
    }

    #[test]
    fn no_prefix_is_all_message() {
        let p = parse("Filesystem Size Used");
        assert_eq!(
            (p.at, p.ident, p.message),
            (None, None, "Filesystem Size Used")
        );
        assert_eq!(parse("").message, "");
        assert_eq!(parse("2026-13-01T00:00:00Z x").at, None);
    }

    #[test]
    fn records_start_and_run_together() {
        assert!(starts_record("2026-11-22T10:00:01Z m x[1]: y"));
        assert!(starts_record("I1018 03:03:52.904189 1 a.go:1] m"));
        assert!(!starts_record("ed to pull image: no such host"));
        assert!(!starts_record(""));
        let line = "2026-11-22T10:00:01Z m a[1]: first 2026-11-22T10:00:02Z m b[2]: second";
        let cuts = run_together(line);
        assert_eq!(cuts.len(), 1);
        assert_eq!(&line[cuts[0]..], "2026-11-22T10:00:02Z m b[2]: second");
        // A time inside a message is not a new record.
        let x509 = "2026-11-22T10:00:01Z m a[1]: x509: current time 2026-11-22T10:00:01Z is before 2027-01-01T00:00:00Z";
        assert!(run_together(x509).is_empty());
    }
}
