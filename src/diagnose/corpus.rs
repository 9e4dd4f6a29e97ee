//! The engine scored on the real corpus (`tests/fixtures/diagnosis/real/`):
//! excerpts of public bug reports, each labelled with its real cause, read
//! as one journal member. Top-1 is the first finding's category; a benign
//! excerpt (`healthy/`) passes when nothing is an error. The held-back part
//! (`held-back.txt`) is reported apart, and only at the end of a tuning
//! round: `CORPUS_ROUND_END=1 cargo test --lib diagnose::corpus --
//! --nocapture` prints the table docs/diagnosis.md carries (without the
//! variable, the tuning part only; the floors are checked either way).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{scan_text, whole, Engine, Severity};

const HEALTHY: &str = "healthy";
/// What an excerpt with no finding scores as.
const NONE: &str = "(none)";
/// Top-1 accuracy the held-back part keeps at least. Issue 23 asks 0.85;
/// the score reached is in docs/diagnosis.md, and this floor only guards it
/// against falling back.
const HELD_BACK_TOP1_FLOOR: f64 = 0.55;
/// The same for the tuning part.
const TUNING_TOP1_FLOOR: f64 = 0.82;

struct Case {
    id: String,
    label: String,
    held: bool,
    text: String,
}

struct Outcome {
    predicted: String,
    errors: Vec<String>,
    headline: Option<String>,
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
            cases.push(Case {
                held: held.contains(&id),
                id,
                label,
                text: text.to_owned(),
            });
        }
    }
    cases
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
    }
}

#[derive(Default, Clone, Copy)]
struct Counts {
    labelled: u32,
    predicted: u32,
    right: u32,
}

/// Per-category counts, top-1 right, failures, benign excerpts with an error.
fn score<'a>(
    cases: impl Iterator<Item = &'a Case>,
) -> (BTreeMap<String, Counts>, u32, u32, Vec<String>) {
    let mut per: BTreeMap<String, Counts> = BTreeMap::new();
    let (mut right, mut failures) = (0, 0);
    let mut benign_errors = Vec::new();
    for case in cases {
        let outcome = diagnose(&case.text);
        if case.label == HEALTHY {
            if !outcome.errors.is_empty() {
                benign_errors.push(format!("{}: error {:?}", case.id, outcome.errors));
                per.entry(outcome.errors[0].clone()).or_default().predicted += 1;
            }
            continue;
        }
        failures += 1;
        per.entry(case.label.clone()).or_default().labelled += 1;
        per.entry(outcome.predicted.clone()).or_default().predicted += 1;
        if outcome.predicted == case.label {
            right += 1;
            per.entry(case.label.clone()).or_default().right += 1;
        } else if std::env::var_os("CORPUS_MISSES").is_some() && !case.held {
            eprintln!(
                "miss {}: got {} ({})",
                case.id,
                outcome.predicted,
                outcome.headline.unwrap_or_default()
            );
        }
    }
    (per, right, failures, benign_errors)
}

fn ratio(a: u32, b: u32) -> String {
    if b == 0 {
        "–".to_owned()
    } else {
        format!("{:.0} %", 100.0 * f64::from(a) / f64::from(b))
    }
}

fn table(tune: &BTreeMap<String, Counts>, held: &BTreeMap<String, Counts>) -> String {
    let mut out = String::from(
        "| category | excerpts (tuning + held back) | precision tuning | recall tuning | precision held back | recall held back |\n|---|---:|---:|---:|---:|---:|\n",
    );
    let mut names: Vec<&String> = tune.keys().chain(held.keys()).collect();
    names.sort();
    names.dedup();
    for name in names {
        let t = tune.get(name).copied().unwrap_or_default();
        let h = held.get(name).copied().unwrap_or_default();
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
    let (tune, tune_right, tune_n, tune_benign) = score(cases.iter().filter(|c| !c.held));
    let (held, held_right, held_n, held_benign) = score(cases.iter().filter(|c| c.held));
    let benign = cases.iter().filter(|c| c.label == HEALTHY).count();
    // The held-back part is shown only at the end of a tuning round
    // (`CORPUS_ROUND_END=1`): seen on every run it would be tuned to.
    let round_end = std::env::var_os("CORPUS_ROUND_END").is_some();
    println!(
        "tuning: top-1 {tune_right}/{tune_n} ({}); benign excerpts: {benign}, with an error: {}",
        ratio(tune_right, tune_n),
        tune_benign.len() + held_benign.len()
    );
    // Of the misses, those with no finding at all: a cause the rules do
    // not read, as against one read wrongly.
    let unfound = |per: &BTreeMap<String, Counts>| per.get(NONE).map_or(0, |c| c.predicted);
    println!(
        "tuning misses with no finding: {} of {}",
        unfound(&tune),
        tune_n - tune_right
    );
    if round_end {
        println!(
            "held back: top-1 {held_right}/{held_n} ({}); misses with no finding: {} of {}",
            ratio(held_right, held_n),
            unfound(&held),
            held_n - held_right
        );
        println!("{}", table(&tune, &held));
    } else {
        println!("{}", table(&tune, &BTreeMap::new()));
    }
    let errors: Vec<&String> = tune_benign.iter().chain(&held_benign).collect();
    assert!(
        errors.is_empty(),
        "benign excerpts with an error: {errors:#?}"
    );
    let top1 = f64::from(held_right) / f64::from(held_n.max(1));
    assert!(
        top1 >= HELD_BACK_TOP1_FLOOR,
        "held-back top-1 {held_right}/{held_n} under {HELD_BACK_TOP1_FLOOR}"
    );
    let top1 = f64::from(tune_right) / f64::from(tune_n.max(1));
    assert!(
        top1 >= TUNING_TOP1_FLOOR,
        "tuning top-1 {tune_right}/{tune_n} under {TUNING_TOP1_FLOOR}"
    );
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
