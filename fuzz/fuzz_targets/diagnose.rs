#![no_main]
//! The diagnosis engine's line reader (`diagnose::Scanner`, the normaliser
//! of every log shape and the rules) on arbitrary bytes, fed in arbitrary
//! chunks. Never panics; memory and output stay within the documented
//! bounds; evidence points at lines that exist; dispatching a line to the
//! rules by its anchors gives what asking every rule gives; and for inputs
//! whose lines all fit the line cap, how the bytes are chunked changes
//! nothing.

use assisted_boot_reporter::diagnose::{
    self, classify, classify_every_rule, parse_line, Engine, Scanner, MAX_EVIDENCE_CHARS, MAX_EVIDENCE_PER_FINDING,
    MAX_FINDINGS, MAX_LINE,
};
use libfuzzer_sys::fuzz_target;

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
