//! What a collector reports: the status of each member and of the
//! collector, as written in the manifest; the size budget and the caps that
//! cut a member; and the escaping every name, source and reason goes
//! through on its way into a tar name or the manifest.

use std::fmt::Write as _;
use std::time::Duration;

// The manifest's entries are the bundle format's (`bundle-format`); collect
// fills them in.
pub(crate) use bundle_format::{cut_chars, CollectorReport, FileReport, Status};

/// How much the next member may hold, and what limits it, for the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budget {
    pub(crate) bytes: u64,
    pub(crate) reason: &'static str,
}

pub(crate) const MEMBER_CAP_REASON: &str = "member size cap";
pub(crate) const BUNDLE_CAP_REASON: &str = "bundle size cap";
pub(crate) const COLLECTOR_CAP_REASON: &str = "collector size cap";
pub(crate) const TIME_LIMIT_REASON: &str = "collector time limit";

/// Whether a reason names one of the size caps.
pub(crate) fn is_cap_reason(reason: &str) -> bool {
    [MEMBER_CAP_REASON, BUNDLE_CAP_REASON, COLLECTOR_CAP_REASON]
        .iter()
        .any(|cap| reason.starts_with(cap))
}

/// Skipped members are optional sources that are absent on this host; they
/// do not make a collector partial. Only a collector with nothing but skips
/// is skipped.
pub(super) fn summarize(files: &[FileReport], note: Option<String>) -> (Status, Option<String>) {
    let attempted: Vec<&FileReport> = files
        .iter()
        .filter(|f| f.status != Status::Skipped)
        .collect();
    if attempted.is_empty() {
        let reason = note.or_else(|| {
            let mut reasons: Vec<&str> = files.iter().filter_map(|f| f.reason.as_deref()).collect();
            reasons.dedup();
            (!reasons.is_empty()).then(|| reasons.join("; "))
        });
        return (Status::Skipped, reason);
    }
    let bad: Vec<&FileReport> = attempted
        .iter()
        .copied()
        .filter(|f| f.status != Status::Ok)
        .collect();
    let status = if bad.is_empty() {
        Status::Ok
    } else if bad.len() < attempted.len() {
        Status::Partial
    } else if bad.iter().all(|f| f.status == Status::TimedOut) {
        Status::TimedOut
    } else {
        Status::Failed
    };
    let mut reason = note.unwrap_or_default();
    if !bad.is_empty() {
        if !reason.is_empty() {
            reason.push_str("; ");
        }
        let _ = write!(
            reason,
            "{} of {} members not ok",
            bad.len(),
            attempted.len()
        );
        for f in bad.iter().take(3) {
            let _ = write!(
                reason,
                "; {}: {}",
                f.path,
                f.reason.as_deref().unwrap_or("no reason")
            );
        }
    }
    (status, (!reason.is_empty()).then_some(reason))
}

pub(super) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// `text` with control characters (C0, DEL, C1) and bidirectional
/// formatting characters (U+202A..U+202E, U+2066..U+2069) written as
/// `\x1b` / `\u{202e}` escapes. Member names, their sources and reasons
/// come from host file names, which may hold anything but `/` and NUL: a
/// newline or an escape sequence must reach neither a tar name nor a
/// terminal raw (docs/bundle.md, "Names"). Borrowed when there is nothing
/// to escape; escaping an escaped text changes nothing.
pub(crate) fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    fn needs_escape(c: char) -> bool {
        c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    }
    if !text.chars().any(needs_escape) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !needs_escape(c) {
            out.push(c);
        } else if u32::from(c) < 0x80 {
            use std::fmt::Write as _;
            let _ = write!(out, "\\x{:02x}", u32::from(c));
        } else {
            out.extend(c.escape_unicode());
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(i: usize) -> FileReport {
        FileReport {
            path: format!("records/svc-{i}.json"),
            source: format!("/var/log/openshift/svc-{i}.json"),
            status: if i % 2 == 0 {
                Status::Ok
            } else {
                Status::Skipped
            },
            reason: (i == 0).then(|| "x".repeat(10_000)),
            archived: i % 2 == 0,
            bytes: 10,
            truncated: false,
            original_bytes: None,
            redactions: 1,
            duration_ms: 0,
            reused_bytes: 0,
            origin: None,
        }
    }

    #[test]
    fn listings_are_bounded_and_what_is_left_out_counted() {
        let mut report = CollectorReport {
            name: "records".into(),
            status: Status::Ok,
            reason: None,
            bytes: 0,
            duration_ms: 0,
            files: (0..5_000).map(file).collect(),
            max_bytes: None,
            time_limit_ms: None,
            digest: None,
            unlisted: None,
        };
        assert_eq!(report.redactions(), 5_000);
        report.bound_listing(1_000, usize::MAX, 100);
        assert_eq!(report.files.len(), 1_000);
        assert_eq!(
            report.files[0].reason.as_ref().unwrap().chars().count(),
            101
        );
        let unlisted = report.unlisted.clone().unwrap();
        assert_eq!(
            (unlisted.files, unlisted.archived, unlisted.bytes),
            (4_000, 2_000, 40_000)
        );
        assert_eq!(unlisted.not_ok, 2_000);
        // Nothing is lost from the totals.
        assert_eq!(report.redactions(), 5_000);
        assert!(report
            .reason
            .unwrap()
            .starts_with("4000 more member(s) not listed"));
        // A byte bound cuts sooner.
        let mut report = CollectorReport {
            files: (1..5_000).map(file).collect(),
            reason: None,
            unlisted: None,
            ..report
        };
        report.bound_listing(1_000, 10_000, 100);
        assert!(report.files.len() < 100, "{}", report.files.len());
        assert!(serde_json::to_vec(&report.files).unwrap().len() <= 10_000 + 200);
    }
}
