//! The engine scored on the real corpus (`tests/fixtures/diagnosis/real/`):
//! excerpts of public bug reports, each labelled with its real cause and
//! the evidence for it, read as one journal member. Only excerpts whose
//! cause is visible in them (an `evidence:` line, not `evidence: not
//! visible`) are scored: top-1 is the first finding's category, the
//! headline's precision is how often the headline, when there is one,
//! names the right category. A benign excerpt (`healthy/`) passes when
//! nothing is an error and no headline is shown. The held-back part
//! (`held-back.txt`) is reported apart, and only at the end of a tuning
//! round: `CORPUS_ROUND_END=1 cargo test --lib diagnose::corpus --
//! --nocapture` prints the table docs/diagnosis.md carries (without the
//! variable, the tuning part only; the floors are checked either way).
//! `CORPUS_MISSES=1` lists the tuning part's misses with their headline.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{scan_text, whole, Engine, Severity};

const HEALTHY: &str = "healthy";
/// What an excerpt with no finding scores as.
const NONE: &str = "(none)";
/// Top-1 accuracy the held-back part keeps at least, of its excerpts whose
/// cause is visible. Issue 35 asks 0.85;
/// the score reached is in docs/diagnosis.md, and this floor only guards it
/// against falling back.
const HELD_BACK_TOP1_FLOOR: f64 = 0.65;
/// The same for the tuning part.
const TUNING_TOP1_FLOOR: f64 = 0.9;
/// Headline precision each part keeps at least (issue 35 asks 0.95 of the
/// held-back part; the figures reached are in docs/diagnosis.md).
const TUNING_HEADLINE_FLOOR: f64 = 0.95;
const HELD_BACK_HEADLINE_FLOOR: f64 = 0.9;

struct Case {
    id: String,
    label: String,
    held: bool,
    /// The lines that show the cause; empty when it is not visible.
    evidence: Vec<String>,
    text: String,
}

struct Outcome {
    predicted: String,
    errors: Vec<String>,
    headline: Option<String>,
    /// The category of the finding the headline is from.
    headline_category: Option<String>,
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/diagnosis/real")
}

fn load() -> Vec<Case> {
    let dir = corpus_dir();
    let held: Vec<String> = std::fs::read_to_string(dir.join("held-back.txt"))
        .expect("held-back.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(str::to_owned)
        .collect();
    let mut cases = Vec::new();
    let mut categories: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    categories.sort();
    for category in categories {
        let mut files: Vec<_> = std::fs::read_dir(&category)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for file in files {
            let raw = std::fs::read_to_string(&file).unwrap();
            let (header, text) = raw
                .split_once("\n---\n")
                .unwrap_or_else(|| panic!("{}: no --- line", file.display()));
            let label = header
                .lines()
                .find_map(|l| l.strip_prefix("category: "))
                .unwrap_or_else(|| panic!("{}: no category", file.display()))
                .trim()
                .to_owned();
            let cat_dir = category.file_name().unwrap().to_string_lossy().into_owned();
            assert_eq!(
                label,
                cat_dir,
                "{}: label and folder differ",
                file.display()
            );
            let id = format!("{cat_dir}/{}", file.file_name().unwrap().to_string_lossy());
            let evidence = evidence_of(&id, header, text, &label);
            cases.push(Case {
                held: held.contains(&id),
                id,
                label,
                evidence,
                text: text.to_owned(),
            });
        }
    }
    cases
}

/// The excerpt's `evidence:` lines: each a line of the excerpt (whole or a
/// part of one) that shows the cause, or one `evidence: not visible —
/// REASON`. Every failure excerpt has them; a benign one has none.
fn evidence_of(id: &str, header: &str, text: &str, label: &str) -> Vec<String> {
    let lines: Vec<&str> = header
        .lines()
        .filter_map(|l| l.strip_prefix("evidence:"))
        .map(str::trim)
        .collect();
    if label == HEALTHY {
        assert!(lines.is_empty(), "{id}: a benign excerpt shows no cause");
        return Vec::new();
    }
    assert!(!lines.is_empty(), "{id}: no evidence: line");
    if let Some(reason) = lines.iter().find_map(|l| l.strip_prefix("not visible")) {
        assert!(
            lines.len() == 1 && reason.trim_start_matches([' ', '—', '-', ':']).len() > 10,
            "{id}: `evidence: not visible — REASON`, alone"
        );
        return Vec::new();
    }
    for line in &lines {
        assert!(
            text.contains(line),
            "{id}: evidence not in the excerpt: {line}"
        );
    }
    lines.into_iter().map(str::to_owned).collect()
}

fn diagnose(text: &str) -> Outcome {
    let scanner =
        scan_text("journal/excerpt.log", text.as_bytes()).expect("journal members are read");
    let placement = whole(&scanner);
    let mut engine = Engine::new();
    engine.absorb(scanner, placement);
    let diagnosis = engine.finish();
    Outcome {
        predicted: diagnosis
            .findings
            .first()
            .map_or_else(|| NONE.to_owned(), |f| f.category.as_str().to_owned()),
        errors: diagnosis
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .map(|f| f.category.as_str().to_owned())
            .collect(),
        headline: diagnosis.headline(),
        headline_category: diagnosis
            .findings
            .iter()
            .find(|f| f.severity != Severity::Info)
            .map(|f| f.category.as_str().to_owned()),
    }
}

#[derive(Default, Clone, Copy)]
struct Counts {
    labelled: u32,
    predicted: u32,
    right: u32,
}

/// One part's scores.
#[derive(Default)]
struct Scores {
    per: BTreeMap<String, Counts>,
    /// Visible-evidence failure excerpts, and those whose first finding is right.
    visible: u32,
    right: u32,
    /// Failure excerpts whose cause is not visible in them (not scored).
    not_visible: u32,
    /// Visible-evidence excerpts with a headline, and those whose headline
    /// names the right category.
    spoke: u32,
    spoke_right: u32,
    /// Benign excerpts, those with an error, those with a headline.
    benign: u32,
    benign_errors: Vec<String>,
    benign_headlines: Vec<String>,
    misses: Vec<String>,
}

fn score<'a>(cases: impl Iterator<Item = &'a Case>) -> Scores {
    let mut s = Scores::default();
    for case in cases {
        let outcome = diagnose(&case.text);
        if case.label == HEALTHY {
            s.benign += 1;
            if !outcome.errors.is_empty() {
                s.benign_errors
                    .push(format!("{}: error {:?}", case.id, outcome.errors));
                s.per
                    .entry(outcome.errors[0].clone())
                    .or_default()
                    .predicted += 1;
            }
            if let Some(h) = outcome.headline {
                s.benign_headlines.push(format!("{}: {h}", case.id));
            }
            continue;
        }
        if case.evidence.is_empty() {
            s.not_visible += 1;
            continue;
        }
        s.visible += 1;
        s.per.entry(case.label.clone()).or_default().labelled += 1;
        s.per
            .entry(outcome.predicted.clone())
            .or_default()
            .predicted += 1;
        if outcome.headline.is_some() {
            s.spoke += 1;
            if outcome.headline_category.as_deref() == Some(case.label.as_str()) {
                s.spoke_right += 1;
            }
        }
        if outcome.predicted == case.label {
            s.right += 1;
            s.per.entry(case.label.clone()).or_default().right += 1;
        } else {
            s.misses.push(format!(
                "{}: got {} ({})",
                case.id,
                outcome.predicted,
                outcome.headline.unwrap_or_default()
            ));
        }
    }
    s
}

fn ratio(a: u32, b: u32) -> String {
    if b == 0 {
        "–".to_owned()
    } else {
        format!("{:.0} %", 100.0 * f64::from(a) / f64::from(b))
    }
}

/// Recall per category (of the visible-evidence excerpts labelled so, how
/// many the first finding names) and precision (of the first findings
/// naming it, how many are right), tuning and, at a round's end, held back.
fn table(
    tune: &BTreeMap<String, Counts>,
    held: &BTreeMap<String, Counts>,
    with_held: bool,
) -> String {
    let mut out = String::from(
        "| category | scored excerpts (tuning + held back) | precision tuning | recall tuning | precision held back | recall held back |\n|---|---:|---:|---:|---:|---:|\n",
    );
    let mut names: Vec<&String> = tune.keys().chain(held.keys()).collect();
    names.sort();
    names.dedup();
    for name in names {
        let t = tune.get(name).copied().unwrap_or_default();
        let h = if with_held {
            held.get(name).copied().unwrap_or_default()
        } else {
            Counts::default()
        };
        let _ = writeln!(
            out,
            "| `{name}` | {} + {} | {} | {} | {} | {} |",
            t.labelled,
            h.labelled,
            ratio(t.right, t.predicted),
            ratio(t.right, t.labelled),
            ratio(h.right, h.predicted),
            ratio(h.right, h.labelled),
        );
    }
    out
}

#[test]
fn the_real_corpus_is_diagnosed_right() {
    let cases = load();
    assert!(cases.len() >= 140, "{} excerpts", cases.len());
    let tune = score(cases.iter().filter(|c| !c.held));
    let held = score(cases.iter().filter(|c| c.held));
    // The held-back part is shown only at the end of a tuning round
    // (`CORPUS_ROUND_END=1`): seen on every run it would be tuned to.
    let round_end = std::env::var_os("CORPUS_ROUND_END").is_some();
    let part = |name: &str, s: &Scores| {
        let unfound = s.per.get(NONE).map_or(0, |c| c.predicted);
        println!(
            "{name}: top-1 {}/{} ({}) of the excerpts whose cause is visible ({} not visible, not scored); \
             headline precision {}/{} ({}); misses with no finding: {} of {}",
            s.right,
            s.visible,
            ratio(s.right, s.visible),
            s.not_visible,
            s.spoke_right,
            s.spoke,
            ratio(s.spoke_right, s.spoke),
            unfound,
            s.visible - s.right
        );
    };
    part("tuning", &tune);
    if round_end {
        part("held back", &held);
    }
    let benign = tune.benign + held.benign;
    // Issue 35: at least 60 excerpts of installs that worked.
    assert!(benign >= 60, "{benign} benign excerpts");
    let benign_errors: Vec<&String> = tune
        .benign_errors
        .iter()
        .chain(&held.benign_errors)
        .collect();
    let benign_headlines: Vec<&String> = tune
        .benign_headlines
        .iter()
        .chain(&held.benign_headlines)
        .collect();
    println!(
        "benign excerpts: {benign}, with an error: {}, with a warning headline: {}",
        benign_errors.len(),
        benign_headlines.len()
    );
    println!(
        "{}",
        table(
            &tune.per,
            if round_end { &held.per } else { &tune.per },
            round_end
        )
    );
    if std::env::var_os("CORPUS_MISSES").is_some() {
        for miss in &tune.misses {
            println!("miss {miss}");
        }
        if round_end {
            for miss in &held.misses {
                println!("held-back miss {miss}");
            }
        }
    }
    assert!(
        benign_errors.is_empty(),
        "benign excerpts with an error: {benign_errors:#?}"
    );
    assert!(
        benign_headlines.is_empty(),
        "benign excerpts with a headline: {benign_headlines:#?}"
    );
    let top1 = f64::from(held.right) / f64::from(held.visible.max(1));
    assert!(
        top1 >= HELD_BACK_TOP1_FLOOR,
        "held-back top-1 {}/{} under {HELD_BACK_TOP1_FLOOR}",
        held.right,
        held.visible
    );
    let top1 = f64::from(tune.right) / f64::from(tune.visible.max(1));
    assert!(
        top1 >= TUNING_TOP1_FLOOR,
        "tuning top-1 {}/{} under {TUNING_TOP1_FLOOR}",
        tune.right,
        tune.visible
    );
    for (name, s, floor) in [
        ("tuning", &tune, TUNING_HEADLINE_FLOOR),
        ("held-back", &held, HELD_BACK_HEADLINE_FLOOR),
    ] {
        let precision = f64::from(s.spoke_right) / f64::from(s.spoke.max(1));
        assert!(
            precision >= floor,
            "{name} headline precision {}/{} under {floor}",
            s.spoke_right,
            s.spoke
        );
    }
}

#[test]
fn dispatch_by_anchor_loses_no_signal_on_real_lines() {
    for case in load() {
        for line in case.text.lines() {
            let message = super::parse_line(line).message;
            assert_eq!(
                super::classify(message),
                super::classify_every_rule(message),
                "{}: {line}",
                case.id
            );
        }
    }
}

#[test]
fn every_headline_is_short_and_leads_with_its_value() {
    for case in load() {
        if let Some(headline) = diagnose(&case.text).headline {
            assert!(
                headline.chars().count() <= super::HEADLINE_MAX_CHARS,
                "{}: {headline}",
                case.id
            );
        }
    }
}
