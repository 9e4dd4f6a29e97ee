#![no_main]
//! The diagnosis engine's line reader (`diagnose::Scanner`, the normaliser
//! of every log shape and the rules) on arbitrary bytes, fed in arbitrary
//! chunks. Never panics; memory and output stay within the documented
//! bounds; evidence points at lines that exist; dispatching a line to the
//! rules by its anchors gives what asking every rule gives; and for inputs
//! whose lines all fit the line cap, how the bytes are chunked changes
//! nothing. One input in sixteen starts with a hostile line
//! (`redact::hostile`: a diagnosis anchor, a redactor anchor or shape
//! repeated, nested encodings) before the fuzzer's bytes.

use assisted_boot_reporter::diagnose::{
    self, classify, classify_every_rule, parse_line, Engine, Scanner, MAX_EVIDENCE_CHARS, MAX_EVIDENCE_PER_FINDING,
    MAX_FINDINGS, MAX_LINE,
};
use assisted_boot_reporter::redact::hostile::hostile_lines;
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

/// The hostile lines at a size a fuzzer runs quickly, made once.
fn hostile() -> &'static [(String, Vec<u8>)] {
    static LINES: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    LINES.get_or_init(|| hostile_lines(4096))
}

const PATH: &str = "journal/units/bootkube.log";

fn run(data: &[u8], chunk: usize) -> (diagnose::Diagnosis, u64) {
    let mut scanner = Scanner::for_member(PATH).expect("journal members are read");
    for piece in data.chunks(chunk.max(1)) {
        scanner.feed(piece);
    }
    let placement = diagnose::whole(&scanner);
    let lines = placement.member_lines;
    let mut engine = Engine::new();
    engine.absorb(scanner, placement);
    (engine.finish(), lines)
}

fuzz_target!(|input: &[u8]| {
    let Some((&first, data)) = input.split_first() else {
        return;
    };
    let with_hostile;
    let data = if first >> 4 == 0xF && !data.is_empty() {
        let lines = hostile();
        let (_, line) = &lines[usize::from(data[0]) * 7 % lines.len()];
        with_hostile = [line.as_slice(), &data[1..]].concat();
        with_hostile.as_slice()
    } else {
        data
    };
    let text = String::from_utf8_lossy(data);
    for line in text.lines() {
        let parts = parse_line(line);
        assert!(parts.message.len() <= line.len());
        let signal = classify(parts.message);
        // Rules are asked only when one of their anchors is in the line:
        // that must never lose a signal.
        assert_eq!(signal, classify_every_rule(parts.message), "{line:?}");
        if let Some(signal) = signal {
            assert!(!signal.summary.is_empty());
        }
    }

    let (whole, lines) = run(data, data.len());
    let (chunked, _) = run(data, usize::from(first) + 1);
    assert!(whole.findings.len() <= MAX_FINDINGS);
    for f in &whole.findings {
        assert!(f.evidence.len() <= MAX_EVIDENCE_PER_FINDING);
        for e in &f.evidence {
            assert!(e.text.chars().count() <= MAX_EVIDENCE_CHARS);
            let line = e.line.expect("nothing was cut");
            assert!(line >= 1 && line <= lines, "line {line} of {lines}");
        }
    }
    let fits = data.split(|&b| b == b'\n').all(|l| l.len() < MAX_LINE);
    if fits {
        assert_eq!(whole, chunked, "chunking changed the diagnosis");
    }
});
