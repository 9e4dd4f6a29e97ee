//! Redaction throughput: a journal-like file pushed through the streaming
//! redactor in 64 KiB chunks (what `collect` does), with the secrets the
//! agent holds on a real host (the token and a two-registry pull secret).
//! Prints MB/s; bench/redact-cpu runs it beside `collect` vs `gzip -6`.
//!
//!   cargo bench --bench redact -- JOURNAL_FILE [ROUNDS]

use std::time::Instant;

use assisted_boot_reporter::redact::{Mode, Redactor};

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let Some(path) = args.next() else {
        eprintln!("usage: cargo bench --bench redact -- JOURNAL_FILE [ROUNDS]");
        std::process::exit(2);
    };
    let rounds: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(5);
    let data = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    // base64("e2e-bench:S3cr3t-...") like the tests' tokens, and a pull
    // secret holding it and another registry's auth.
    let token = "ZTJlLWJlbmNoOlMzY3IzdC0xMjM0NS0xNzAwMDAwMDAwMDAwMDAwMDAwLTAtenE=";
    let other = "cXVheS1ib3Q6c2VjcmV0LXF1YXktcGFzc3dvcmQtOTg3NjU0MzIxMA==";
    let pull_secret = format!(
        r#"{{"auths":{{"cloud.openshift.com":{{"auth":"{token}","email":"a@b.c"}},"quay.io":{{"auth":"{other}","email":"a@b.c"}}}}}}"#
    );
    for (label, redactor) in [
        ("shapes only", Redactor::default()),
        (
            "token + pull secret",
            Redactor::new([token, other, pull_secret.as_str()]),
        ),
    ] {
        let mut best = f64::MAX;
        let mut count = 0;
        let mut out_bytes = 0usize;
        for _ in 0..rounds {
            let started = Instant::now();
            let mut stream = redactor.stream(Mode::Text);
            let mut out = 0usize;
            for chunk in data.chunks(64 * 1024) {
                stream.push(chunk, &mut |b| out += b.len());
            }
            count = stream.finish(&mut |b| out += b.len());
            out_bytes = out;
            best = best.min(started.elapsed().as_secs_f64());
        }
        #[allow(clippy::cast_precision_loss)]
        let mb = data.len() as f64 / 1e6;
        println!(
            "redact {label}: {:.1} MB in {:.3} s = {:.0} MB/s (best of {rounds}; {count} redactions, {out_bytes} bytes out)",
            mb,
            best,
            mb / best
        );
    }
}
