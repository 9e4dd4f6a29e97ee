//! Redaction throughput: a journal-like file pushed through the streaming
//! redactor in 64 KiB chunks (what `collect` does), with the secrets the
//! agent holds on a real host (the token and a two-registry pull secret).
//! Prints MB/s; bench/redact-cpu runs it beside `collect` vs `gzip -6`.
//! With AUTHS, also a pull secret of that many registries (issue 25: a
//! mirror list of thousands): the redactor's build time, its size, this
//! process's peak RSS once it is built, and its throughput.
//!
//!   cargo bench --bench redact -- JOURNAL_FILE [ROUNDS [AUTHS]]

use std::time::Instant;

use assisted_boot_reporter::redact::{Mode, Redactor};
use base64::Engine as _;

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let Some(path) = args.next() else {
        eprintln!("usage: cargo bench --bench redact -- JOURNAL_FILE [ROUNDS]");
        std::process::exit(2);
    };
    let rounds: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(5);
    let many: Option<usize> = args.next().and_then(|n| n.parse().ok());
    let data = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    // A pull secret shaped like a real one: two short auths and two long
    // ones (registry.redhat.io's hold a ~1.1 KB JWT), the first the token.
    let auth = |user: &str, password_len: usize, seed: u64| {
        let mut state = seed;
        let password: String = (0..password_len)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1);
                let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.";
                char::from(alphabet[usize::try_from(state >> 33).unwrap_or(0) % alphabet.len()])
            })
            .collect();
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    };
    let token = auth(
        "openshift-release-dev+ocm_access_0123456789abcdef0123456789abcdef",
        32,
        1,
    );
    let auths = [
        ("cloud.openshift.com", token.clone()),
        (
            "quay.io",
            auth(
                "openshift-release-dev+ocm_access_0123456789abcdef0123456789abcdef",
                32,
                2,
            ),
        ),
        (
            "registry.connect.redhat.com",
            auth("uhc-pool-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", 1100, 3),
        ),
        (
            "registry.redhat.io",
            auth("uhc-pool-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", 1100, 4),
        ),
    ];
    let pull_secret = format!(
        r#"{{"auths":{{{}}}}}"#,
        auths
            .iter()
            .map(|(registry, auth)| format!(r#""{registry}":{{"auth":"{auth}","email":"a@b.c"}}"#))
            .collect::<Vec<_>>()
            .join(",")
    );
    let mut secrets: Vec<String> = auths.iter().map(|(_, a)| a.clone()).collect();
    secrets.push(pull_secret);
    let started = Instant::now();
    let with_secrets = Redactor::new(&secrets);
    println!(
        "redactor for a 4-registry pull secret ({} bytes): built in {:.1} ms, {}",
        secrets.last().map_or(0, String::len),
        started.elapsed().as_secs_f64() * 1e3,
        with_secrets.describe()
    );
    if std::env::var_os("REDACT_BENCH_SHOW").is_some() {
        let mut sample = data[..data.len().min(4 << 20)].to_vec();
        with_secrets.redact(&mut sample);
        for line in sample
            .split(|&b| b == b'\n')
            .filter(|l| memchr::memmem::find(l, b"[REDACTED]").is_some())
            .take(5)
        {
            println!("redacted: {}", String::from_utf8_lossy(line));
        }
    }
    let mut redactors = vec![
        ("shapes only".to_owned(), Redactor::default()),
        ("token + pull secret".to_owned(), with_secrets.clone()),
    ];
    if let Some(n) = many {
        // Robots of one organisation on mirror registries: their auths
        // share the user's prefix, each has a password of its own.
        let auths: Vec<String> = (0..n)
            .map(|i| auth(&format!("mirror+robot{i:05}"), 32, 100 + i as u64))
            .collect();
        let pull_secret = format!(
            r#"{{"auths":{{{}}}}}"#,
            auths
                .iter()
                .enumerate()
                .map(|(i, a)| format!(
                    r#""mirror-{i:05}.registry.example.com:5000":{{"auth":"{a}","email":"a@b.c"}}"#
                ))
                .collect::<Vec<_>>()
                .join(",")
        );
        let before = peak_rss_kib();
        let started = Instant::now();
        let mut secrets: Vec<&str> = auths.iter().map(String::as_str).collect();
        secrets.push(&pull_secret);
        let redactor = Redactor::new(secrets);
        println!(
            "redactor for a pull secret of {n} auths ({} bytes): built in {:.1} ms, {}; peak RSS {} KiB before, {} KiB after",
            pull_secret.len(),
            started.elapsed().as_secs_f64() * 1e3,
            redactor.describe(),
            before,
            peak_rss_kib()
        );
        redactors.push((format!("pull secret of {n} auths"), redactor));
    }
    for (label, redactor) in redactors {
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

/// This process's peak resident memory (`VmHWM`), in KiB.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}
