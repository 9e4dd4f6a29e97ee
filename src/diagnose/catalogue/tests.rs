//! The catalogue: every embedded file parses, every example yields its
//! entry through the scanner, and the match syntax's corners.

use super::super::signal::Category;
use super::super::{parse_line, scan_text};
use super::*;

/// A catalogue of `text` alone (tests: `build` takes `'static` files).
fn catalogue_of(text: &'static str) -> Catalogue {
    let files: &'static [(&'static str, &'static str)] =
        Box::leak(vec![("test.sigs", text)].into_boxed_slice());
    Catalogue::build(files)
}

#[test]
fn every_embedded_file_parses() {
    assert!(!FILES.is_empty());
    let mut ids: Vec<&str> = Vec::new();
    for (name, text) in FILES {
        let (entries, errors) = parse_file(name, text);
        assert!(
            errors.is_empty(),
            "{}",
            errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        );
        assert!(!entries.is_empty(), "{name} holds no entry");
        ids.extend(entries.iter().map(|e| e.id));
    }
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "an id is used twice");
    let catalogue = Catalogue::get();
    assert!(catalogue.errors.is_empty());
    assert_eq!(catalogue.entries.len(), ids.len());
    for entry in &catalogue.entries {
        assert!(Category::ALL.contains(&entry.category));
        // The key is bound by every alternative (a refused entry otherwise).
        if let Key::Capture(name) = entry.key {
            assert!(
                entry.patterns.iter().all(|p| p.kept().any(|k| k == name)),
                "{}",
                entry.id
            );
        }
    }
}

#[test]
fn every_example_yields_its_entry_through_the_scanner() {
    let catalogue = Catalogue::get();
    let mut checked = 0;
    let mut wrong = Vec::new();
    let mut ruled_otherwise = Vec::new();
    for (i, entry) in catalogue.entries.iter().enumerate() {
        for example in &entry.examples {
            let at = format!(
                "{}:{} {} example `{}`",
                entry.file, entry.line, entry.id, example.line
            );
            let text = format!("{}\n", example.line);
            let mut scanner = scan_text("journal/this-boot.log", text.as_bytes()).expect("read");
            scanner.finish();
            let message = parse_line(example.line).message.replace("\\\"", "\"");
            let captures = catalogue
                .captures_of(i, &message)
                .unwrap_or_else(|| panic!("{at}: no match"));
            let want = entry.expected(example);
            let have: Vec<(String, &str)> = captures
                .iter()
                .map(|(n, v)| ((*n).to_owned(), *v))
                .collect();
            assert_eq!(have, want, "{at}: captures (expect:)");
            let (summary, key) = entry.fill(&captures);
            let unshortened = entry.fill_unshortened(&captures);
            assert!(
                unshortened.chars().count() <= MAX_SUMMARY_CHARS,
                "{at}: summary over {MAX_SUMMARY_CHARS} characters: {unshortened}"
            );
            assert!(!summary.contains('{'), "{at}: {summary}");
            // A rule that reads the line keeps it (classify.rs); it must
            // then say the same category, or the two disagree.
            let spoke = if entry.level == Level::Recovery {
                scanner
                    .recoveries
                    .first()
                    .map(|recovery| (recovery.0, None))
            } else {
                scanner
                    .hits
                    .first()
                    .map(|hit| (hit.signal.category, hit.signal.signature))
            };
            match spoke {
                Some((_, Some(s))) if s as usize == i => {
                    if entry.level != Level::Recovery {
                        let signal = &scanner.hits[0].signal;
                        assert_eq!(scanner.hits.len(), 1, "{at}: {:?}", scanner.hits);
                        assert_eq!(signal.category, entry.category, "{at}");
                        assert_eq!(signal.key, key, "{at}");
                        assert_eq!(signal.summary, summary, "{at}");
                        assert_eq!(signal.nature, entry.level.nature(), "{at}");
                    }
                }
                Some((category, None)) if category == entry.category => {}
                Some((category, Some(s))) if entry.level == Level::Recovery => {
                    if category != entry.category {
                        wrong.push(format!(
                            "{at}: entry {} spoke",
                            catalogue.entries[s as usize].id
                        ));
                    }
                }
                // A rule of another category keeps the line (classify.rs):
                // mostly the cause a wrapper entry quotes (a full disk
                // under a failed deployment). Counted, and bounded below.
                Some((category, None)) => {
                    ruled_otherwise.push(format!("{at}: a rule says {}", category.as_str()));
                }
                Some((category, Some(s))) => wrong.push(format!(
                    "{at}: {} spoke with category {}",
                    catalogue.entries[s as usize].id,
                    category.as_str()
                )),
                None => {
                    // A recovery is recorded by the scanner under its key.
                    if entry.level == Level::Recovery {
                        let signal = super::super::classify(&message).expect("a signal");
                        assert_eq!(signal.category, entry.category, "{at}");
                    } else {
                        wrong.push(format!("{at}: nothing spoke"));
                    }
                }
            }
            checked += 1;
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {checked} examples:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(checked >= catalogue.entries.len());
    assert!(
        ruled_otherwise.len() * 10 < checked,
        "{} of {checked} examples are read by a rule of another category:\n{}",
        ruled_otherwise.len(),
        ruled_otherwise.join("\n")
    );
}

const SYNTAX: &str = r#"
# A comment, then entries of every shape.
id: t.syntax.middle
category: dns_resolution
severity: error
match: dial tcp: lookup {host} on {server}: {reason...}
match: dial tcp: lookup {host}: {reason...}
key: host
summary: {host} did not resolve: {reason}
source: golang/go src/net/dnsclient_unix.go (*Resolver).goLookupIPCNAMEOrder
example: Get "https://quay.io/v2/": dial tcp: lookup quay.io on 10.0.0.2:53: no such host
expect: host=quay.io server=10.0.0.2:53 reason=no such host

id: t.syntax.braces
category: other
severity: info
match: literal {{braces}} then {_} and {value}
key: "constant"
summary: value {value}
source: example/repo file.go Function
example: a literal {braces} then skipped text and "quoted",
expect: value=quoted

id: t.syntax.leading
category: disk_io
severity: warning
match: {kind} error, dev {dev}, sector {sector}
key: dev
summary: {dev} {kind} {sector}
source: torvalds/linux block/blk-core.c print_req_error
example: kernel: blk_update_request: I/O error, dev sda, sector 2048 op 0x0:(READ)
expect: kind=I/O dev=sda sector=2048
"#;

#[test]
fn the_match_syntax() {
    let c = catalogue_of(SYNTAX);
    assert!(c.errors.is_empty(), "{:?}", c.errors);
    let signal = c
        .classify(r#"Error: Get \"https://quay.io/v2/\": dial tcp: lookup quay.io: i/o timeout"#)
        .expect("the second alternative, `\\\"` unescaped");
    assert_eq!(signal.key, "quay.io");
    assert_eq!(signal.summary, "quay.io did not resolve: i/o timeout");
    assert_eq!(signal.nature, Nature::Fatal);
    let signal = c.classify("a literal {braces} then x y and 'v'.").unwrap();
    assert_eq!(
        (signal.key.as_str(), signal.summary.as_str()),
        ("constant", "value v")
    );
    let signal = c
        .classify("[12.5] blk_update_request: critical medium error, dev nvme0n1, sector 77")
        .unwrap();
    assert_eq!(signal.summary, "nvme0n1 medium 77");
    // A rest capture is cut at 120 characters; a capture over 200 bytes
    // fails the match (so does an empty one).
    let long = "x".repeat(300);
    let s = c.classify(&format!("dial tcp: lookup h: {long}")).unwrap();
    assert_eq!(s.summary, format!("h did not resolve: {}", &long[..120]));
    assert!(c
        .classify(&format!("dial tcp: lookup {long} on s: r"))
        .is_none());
    assert!(c.classify("dial tcp: lookup h:  ").is_none());
    // No match across a wrong literal: each place of the first literal is
    // tried once, left to right; a later one can match.
    let s = c
        .classify("dial tcp: lookup dial tcp: lookup h on s: r")
        .unwrap();
    assert_eq!(s.key, "dial tcp: lookup h");
    // Control characters in captures are escaped.
    let s = c.classify("dial tcp: lookup h\u{1b}[31m: r").unwrap();
    assert_eq!(s.key, "h\\u{1b}[31m");
    assert!(c.classify("nothing here").is_none());
}

#[test]
fn the_most_specific_entry_speaks() {
    let c = catalogue_of(
        r"id: t.a.general
category: other
severity: warning
match: connection refused to {addr}
key: addr
summary: {addr} refused
source: a/b c d
example: connection refused to x

id: t.a.specific
category: api_unreachable
severity: warning
match: dial tcp {addr}: connect: connection refused to {_}
key: addr
summary: the API at {addr} refused
source: a/b c d
example: dial tcp 1.2.3.4:6443: connect: connection refused to x
",
    );
    assert!(c.errors.is_empty(), "{:?}", c.errors);
    let s = c
        .classify("dial tcp 1.2.3.4:6443: connect: connection refused to api")
        .unwrap();
    assert_eq!(s.category, Category::ApiUnreachable);
    assert_eq!(s.key, "1.2.3.4:6443");
}

#[test]
fn malformed_entries_are_refused_not_panicked_on() {
    let base =
        "category: other\nseverity: error\nkey: \"k\"\nsummary: s\nsource: a/b c d\nexample: e\n";
    let cases: &[(&str, &str)] = &[
        ("id: t.x.a\nmatch: short\n", "no literal part of 8"),
        ("id: t.x.b\nmatch: {a}{b} literal text\n", "two captures"),
        (
            "id: t.x.c\nmatch: some literal {a...} more\n",
            "ends the pattern",
        ),
        ("id: t.x.d\nmatch: some literal {Bad}\n", "a capture is"),
        ("id: t.x.e\nmatch: some literal {open\n", "unclosed"),
        ("id: t.x.f\nmatch: some literal } here\n", "lone"),
        (
            "id: T.x\nmatch: some literal text\n",
            "component.family.name",
        ),
        ("id: t.x.g\nmatch: some literal {a} and {a}\n", "twice"),
        (
            "id: t.x.h\nmatch: \"\\\"\\\"\\\"\" {a} \"\\\"\\\"\"\n",
            "no run of 4",
        ),
        (
            "id: t.x.i\nmatch: some literal text\nbogus line\n",
            "known field",
        ),
        ("id: t.x.j\nmatch: some literal text\nid: again\n", "twice"),
    ];
    for (head, want) in cases {
        let text = format!("{head}{base}");
        let (entries, errors) = parse_file("t.sigs", &text);
        assert!(entries.is_empty(), "{head}");
        assert_eq!(errors.len(), 1, "{head}");
        assert!(errors[0].message.contains(want), "{head}: {}", errors[0]);
    }
    let fields: &[(&str, &str)] = &[
        ("category: nope\n", "unknown category"),
        ("severity: fatal\n", "unknown severity"),
        ("key: absent\n", "not captured"),
        ("summary: {absent}\n", "not captured"),
        ("summary: **bold**\n", "markdown"),
        ("source: nowhere\n", "source"),
        ("example: \nexpect: x=1\nexpect: y=2\n", "without its"),
    ];
    for (field, want) in fields {
        let name = field.split(':').next().unwrap();
        let prefix = format!("{name}:");
        let mut kept = String::new();
        for l in base.lines().filter(|l| !l.starts_with(&prefix)) {
            kept.push_str(l);
            kept.push('\n');
        }
        let text = format!("id: t.y.z\nmatch: some literal {{v}}\n{kept}{field}");
        let (entries, errors) = parse_file("t.sigs", &text);
        assert!(entries.is_empty(), "{field}");
        assert!(
            errors.iter().any(|e| e.message.contains(want)),
            "{field}: {errors:?}"
        );
    }
    // Refused entries are skipped; the others stay.
    let c = catalogue_of(
        "id: t.z.bad\nmatch: x\n\nid: t.z.good\ncategory: other\nseverity: info\nmatch: a good literal\nkey: \"k\"\nsummary: s\nsource: a/b c d\nexample: a good literal\n\nid: t.z.good\ncategory: other\nseverity: info\nmatch: another literal\nkey: \"k\"\nsummary: s\nsource: a/b c d\nexample: another literal\n",
    );
    assert_eq!(c.entries.len(), 1);
    assert_eq!(c.errors.len(), 2, "{:?}", c.errors);
    assert!(c.errors[1].message.contains("used before"));
}

#[test]
fn anchors_outside_the_table_take_its_searchers_room_first() {
    use super::super::anchors::AnchorFinder;
    use super::super::needles::NEEDLES;
    // Anchors made of bytes no table needle holds (`Q`, `Z`, `J`, digits
    // that spell no word): each needs a needle of its own.
    let extra: Vec<&'static str> = (0..40)
        .map(|i| &*Box::leak(format!("QZJ{i:02}QZJ{i:02}").into_boxed_str()))
        .collect();
    // Every searcher but the last is full: to 32 needles while it is slim
    // (Teddy turns fat past 32), to 64 when it is fat already.
    let finder = AnchorFinder::built_with_extra(&extra);
    let sizes = finder.searcher_sizes();
    assert!(sizes.len() >= NEEDLES.len(), "{sizes:?}");
    for (i, &n) in sizes.iter().enumerate().take(sizes.len() - 1) {
        let table = NEEDLES.get(i).map_or(0, |l| l.len());
        let full = if table > 32 { 64 } else { 32.max(table) };
        assert!(n == full || n == 64, "searcher {i}: {sizes:?}");
    }
    for anchor in &extra {
        let text = format!("filler text {anchor} more\n");
        let found = finder.find_with(text.as_bytes(), 0).expect(anchor);
        assert_eq!(found.start, 12, "{anchor}");
        assert_eq!(found.dispatch, CATALOGUE_BIT);
    }
}

#[test]
fn an_entry_s_hint_and_recovery_reach_the_finding() {
    use super::super::{whole, Engine, Severity};
    let diagnose = |text: &str| {
        let mut engine = Engine::new();
        let scanner = scan_text("journal/this-boot.log", text.as_bytes()).unwrap();
        let placement = whole(&scanner);
        engine.absorb(scanner, placement);
        engine.finish()
    };
    let failing = "2026-11-22T10:00:00.000000+0000 m haproxy[8]: [WARNING]  (8) : Server masters/master-0 is DOWN, reason: Layer4 connection problem, info: \"Connection refused\", check duration: 0ms. 2 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.\n";
    let d = diagnose(failing);
    let f = &d.findings[0];
    let entry = Catalogue::get()
        .entries
        .iter()
        .find(|e| e.id == "haproxy.server.down")
        .unwrap();
    assert_eq!(f.category, entry.category);
    assert_ne!(f.severity, Severity::Error, "a lone retry");
    assert!(f.summary.contains("masters/master-0"), "{}", f.summary);
    assert_eq!(f.hint, entry.hint());
    assert_ne!(f.hint, entry.category.hint());
    let recovered = format!("{failing}2026-11-22T10:01:00.000000+0000 m haproxy[8]: [WARNING]  (8) : Server masters/master-0 is UP, reason: Layer7 check passed, code: 200, check duration: 4ms. 3 active and 0 backup servers online. 0 sessions requeued, 0 total in queue.\n");
    let d = diagnose(&recovered);
    let f = &d.findings[0];
    assert_eq!((f.category, f.severity), (entry.category, Severity::Info));
}

#[test]
fn every_anchor_holds_a_sequence_rare_in_healthy_journals() {
    // An anchor made only of the commonest 4-byte sequences of a healthy
    // journal (`grams.rs`: `error: `, `failed to `) stops the finder on
    // healthy lines and takes them apart: every line it stops costs a read.
    use super::super::grams::COMMON_4GRAMS;
    let common = |g: &[u8]| {
        COMMON_4GRAMS
            .binary_search(&u32::from_le_bytes([g[0], g[1], g[2], g[3]]))
            .is_ok()
    };
    for entry in &Catalogue::get().entries {
        for pattern in &entry.patterns {
            let anchor = pattern.anchor.as_bytes();
            assert!(
                anchor.windows(4).any(|g| !common(g)),
                "{}:{} {}: anchor `{}` is made of the commonest sequences of a healthy journal: take a longer or rarer literal",
                entry.file,
                entry.line,
                entry.id,
                pattern.anchor
            );
        }
    }
}
