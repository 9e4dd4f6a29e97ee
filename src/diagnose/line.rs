//! One log line taken apart: the journal prefix (time, identifier) and the
//! message the rules read, plus the small text helpers the rules share.
//!
//! Lines come from `journalctl -o short-iso-precise`
//! (`2026-11-22T10:00:01.250000+0000 host kubelet[1234]: message`), from
//! syslog-style excerpts the bootstrap records quote (`Feb 03 10:04:01 host
//! bootkube.sh[2314]: message`, no year: no time is taken from them), or
//! from files with no prefix at all. Everything here works on any bytes: the
//! fuzz target `diagnose` drives [`parse`] and the rules with arbitrary input.

/// A line's parts. `ident` is the syslog identifier without the pid
/// (`kubelet`, `bootkube.sh`, `systemd`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts<'a> {
    /// Seconds since the Unix epoch, when the line carries a full timestamp.
    pub at: Option<i64>,
    pub ident: Option<&'a str>,
    pub message: &'a str,
}

/// Splits a journal line; a line with no recognised prefix is all message.
pub fn parse(line: &str) -> Parts<'_> {
    let line = line.trim_end_matches(['\n', '\r']);
    if let Some((at, rest)) = iso_prefix(line) {
        let (ident, message) = host_and_ident(rest);
        return Parts {
            at: Some(at),
            ident,
            message,
        };
    }
    if let Some(rest) = syslog_prefix(line) {
        let (ident, message) = host_and_ident(rest);
        return Parts {
            at: None,
            ident,
            message,
        };
    }
    Parts {
        at: None,
        ident: None,
        message: line,
    }
}

/// `2026-11-22T10:00:01.250000+0000 ` (also `Z`, `+00:00`, no fraction).
fn iso_prefix(line: &str) -> Option<(i64, &str)> {
    let end = line.find(' ')?;
    let at = parse_rfc3339(&line[..end])?;
    Some((at, &line[end + 1..]))
}

/// Seconds since the epoch of an RFC 3339-like timestamp as journalctl and
/// Go print them; `None` for anything else.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<i64> {
        let s = text.get(from..to)?;
        if s.bytes().all(|c| c.is_ascii_digit()) {
            s.parse().ok()
        } else {
            None
        }
    };
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, minute, second) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    let mut rest = &text[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        rest = &frac[digits..];
    }
    let offset = match rest {
        "" | "Z" | "UTC" | " UTC" | " +0000 UTC" => 0,
        _ => {
            let sign = match rest.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let digits: String = rest[1..].chars().filter(char::is_ascii_digit).collect();
            let digits = digits.get(..4)?;
            let h: i64 = digits[..2].parse().ok()?;
            let m: i64 = digits[2..].parse().ok()?;
            sign * (h * 3600 + m * 60)
        }
    };
    let days = days_from_civil(year, month, day);
    Some(days * 86_400 + hour * 3600 + minute * 60 + second - offset)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `Feb 03 10:04:01 ` at the start of a line.
fn syslog_prefix(line: &str) -> Option<&str> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let head = line.get(..16)?;
    let b = head.as_bytes();
    // `get`, not indexing: a multi-byte character may straddle byte 3.
    if !head.get(..3).is_some_and(|m| MONTHS.contains(&m))
        || b[3] != b' '
        || b[9] != b':'
        || b[12] != b':'
    {
        return None;
    }
    (b[15] == b' ').then(|| &line[16..])
}

/// `host ident[pid]: message` → (ident, message).
fn host_and_ident(rest: &str) -> (Option<&str>, &str) {
    let Some(space) = rest.find(' ') else {
        return (None, rest);
    };
    let after_host = &rest[space + 1..];
    let Some(colon) = after_host.find(": ") else {
        return (None, after_host);
    };
    let tag = &after_host[..colon];
    if tag.is_empty() || tag.contains(' ') {
        return (None, after_host);
    }
    let ident = tag.split('[').next().unwrap_or(tag);
    (Some(ident), &after_host[colon + 2..])
}

/// The text right after the first `pattern`.
pub fn after<'a>(text: &'a str, pattern: &str) -> Option<&'a str> {
    text.find(pattern).map(|i| &text[i + pattern.len()..])
}

/// The leading run of `text` up to (not including) any of `stops`.
pub fn token_until<'a>(text: &'a str, stops: &[char]) -> &'a str {
    let end = text
        .find(|c: char| stops.contains(&c))
        .unwrap_or(text.len());
    &text[..end]
}

/// The host of the first `https://` or `http://` URL in `text`.
pub fn url_host(text: &str) -> Option<&str> {
    let rest = after(text, "https://").or_else(|| after(text, "http://"))?;
    let host = token_until(rest, &['/', '"', ' ', '\'', '\\', ')', ',']);
    let host = host.rsplit('@').next().unwrap_or(host);
    (!host.is_empty()).then_some(host)
}

/// The registry of an image reference in a containers/image message:
/// `docker://REG/…`, `registry REG`, `in REG/repo`, or a URL.
pub fn registry_host(text: &str) -> Option<&str> {
    let candidates = [
        after(text, "docker://"),
        after(text, "container registry "),
        after(text, " in ").filter(|r| {
            let t = token_until(r, &['/', ' ', ':']);
            t.contains('.') && !t.ends_with('.')
        }),
    ];
    for rest in candidates.into_iter().flatten() {
        let host = token_until(rest, &['/', ' ', '"', ':', '@', ',']);
        if host.contains('.') || host == "localhost" {
            return Some(host);
        }
    }
    url_host(text).map(|h| token_until(h, &[':']))
}

/// At most `max` characters of `text`, with `…` when cut.
pub fn shorten(text: &str, max: usize) -> String {
    let mut chars = text.chars();
    let mut out: String = chars.by_ref().take(max).collect();
    if chars.next().is_some() {
        out.pop();
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_straddling_the_month_is_not_a_syslog_prefix() {
        // Found by fuzz/fuzz_targets/diagnose.rs: '\u{fffd}' (3 bytes) at
        // byte 2 made the month slice panic.
        let line = "20\u{fffd}25-02-03T09:e55:01 master-0 x: y";
        assert_eq!(syslog_prefix(line), None);
        let _ = parse(line);
        assert_eq!(syslog_prefix("Feb 03 10:04:01 h x: y"), Some("h x: y"));
    }

    #[test]
    fn journal_prefix_gives_time_ident_and_message() {
        let p =
            parse("2026-11-22T10:00:01.250000+0000 master-0 kubelet[1234]: E1122 hello: world\n");
        assert_eq!(p.at, Some(1_795_341_601));
        assert_eq!(p.ident, Some("kubelet"));
        assert_eq!(p.message, "E1122 hello: world");
        let p = parse("2026-11-22T11:00:01+0100 h systemd[1]: x");
        assert_eq!(p.at, Some(1_795_341_601));
    }

    #[test]
    fn syslog_prefix_has_no_time() {
        let p = parse("Feb 03 10:04:01 master-0 bootkube.sh[2314]: Error: boom");
        assert_eq!(p.at, None);
        assert_eq!(p.ident, Some("bootkube.sh"));
        assert_eq!(p.message, "Error: boom");
    }

    #[test]
    fn no_prefix_is_all_message() {
        let p = parse("Filesystem Size Used");
        assert_eq!(
            p,
            Parts {
                at: None,
                ident: None,
                message: "Filesystem Size Used"
            }
        );
        assert_eq!(parse("").message, "");
        assert_eq!(parse("2026-13-01T00:00:00Z x").at, None);
    }

    #[test]
    fn hosts_of_urls_and_images() {
        assert_eq!(url_host(r#"Get "https://quay.io/v2/": x"#), Some("quay.io"));
        assert_eq!(
            registry_host("initializing source docker://quay.io/openshift/x@sha256:1"),
            Some("quay.io")
        );
        assert_eq!(
            registry_host(
                "reading manifest sha256:1 in registry.example.com:5000/ocp4/x: unauthorized"
            ),
            Some("registry.example.com")
        );
        assert_eq!(shorten("abcdef", 4), "abc…");
        assert_eq!(shorten("abc", 4), "abc");
    }
}
