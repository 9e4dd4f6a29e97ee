//! Redaction's and deflate's own CPU cost on a journal, for bench/run's
//! `bundle` section: builds the redactor from a pull secret file the way
//! `collect` does (`contract::parse_credentials`, every secret it scrubs),
//! pushes the file through it in the 64 KiB pieces the collectors read, then
//! seals the redacted bytes into chunks as a member's are (`chunks::Sealer`:
//! independent gzip members of `CHUNK_BYTES` at the bundle's level, the
//! agent's libdeflate), and prints one JSON line with the process CPU (kernel
//! accounting, /proc/self/stat) of each step.
//!
//!   redact-scan --write-pull-secret FILE     a realistic 4-registry pull secret
//!   redact-scan JOURNAL --pull-secret FILE   the figures

use std::io::Read as _;

use abr_bench::cpu_seconds;
use anyhow::Context as _;
use assisted_boot_reporter::collect::chunks::{Sealer, CHUNK_BYTES, GZIP_LEVEL};
use assisted_boot_reporter::contract;
use assisted_boot_reporter::redact::{Mode, Redactor};
use base64::Engine as _;
use clap::Parser;

#[derive(Parser)]
struct Args {
    /// The journal text to redact.
    file: Option<std::path::PathBuf>,
    /// Pull secret whose secrets the redactor is built with (none: shapes only).
    #[arg(long)]
    pull_secret: Option<std::path::PathBuf>,
    /// Write a pull secret shaped like a real one here and exit.
    #[arg(long)]
    write_pull_secret: Option<std::path::PathBuf>,
}

/// A pull secret shaped like one from console.redhat.com: two short auths
/// (cloud.openshift.com's is the agent's token) and two long ones
/// (registry.redhat.io's and registry.connect.redhat.com's hold a ~1.1 KB
/// JWT), ~3.5 KB in all; the same as `cargo bench --bench redact`.
fn realistic_pull_secret() -> String {
    let auth = |user: &str, password_len: usize, seed: u64| {
        let mut state = seed;
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.";
        let password: String = (0..password_len)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1);
                char::from(alphabet[usize::try_from(state >> 33).unwrap_or(0) % alphabet.len()])
            })
            .collect();
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    };
    let release = "openshift-release-dev+ocm_access_0123456789abcdef0123456789abcdef";
    let pool = "uhc-pool-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
    let auths = [
        ("cloud.openshift.com", auth(release, 32, 1)),
        ("quay.io", auth(release, 32, 2)),
        ("registry.connect.redhat.com", auth(pool, 1100, 3)),
        ("registry.redhat.io", auth(pool, 1100, 4)),
    ];
    format!(
        r#"{{"auths":{{{}}}}}"#,
        auths
            .iter()
            .map(|(registry, auth)| format!(r#""{registry}":{{"auth":"{auth}","email":"a@b.c"}}"#))
            .collect::<Vec<_>>()
            .join(",")
    )
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(path) = &args.write_pull_secret {
        std::fs::write(path, realistic_pull_secret())
            .with_context(|| format!("writing {}", path.display()))?;
        return Ok(());
    }
    let file = args.file.context("a journal file is needed")?;
    let mut data = Vec::new();
    std::fs::File::open(&file)
        .with_context(|| format!("opening {}", file.display()))?
        .read_to_end(&mut data)?;
    let mut secrets: Vec<String> = Vec::new();
    if let Some(path) = &args.pull_secret {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let creds = contract::parse_credentials(&text).map_err(|e| anyhow::anyhow!("{e}"))?;
        secrets.extend(creds.scrub.iter().map(|s| s.expose().to_owned()));
    }

    let before = cpu_seconds()?;
    let redactor = Redactor::new(&secrets);
    let built = cpu_seconds()?;
    // As `collect` does: redacted bytes gather in one reused buffer of about
    // a chunk, so the figure is the redactor's work, not page faults and
    // copies of a growing 60 MiB vector.
    let mut pending: Vec<u8> = Vec::with_capacity(CHUNK_BYTES + 64 * 1024);
    let mut take = |b: &[u8]| {
        pending.extend_from_slice(b);
        if pending.len() >= CHUNK_BYTES {
            pending.clear();
        }
    };
    let mut stream = redactor.stream(Mode::Text);
    for piece in data.chunks(64 * 1024) {
        stream.push(piece, &mut take);
    }
    let redactions = stream.finish(&mut take);
    let redacted = cpu_seconds()?;

    // The same bytes again, kept, for deflate: sealed as the agent seals a
    // member, in independent gzip members of a chunk each at the bundle's level.
    let mut out = Vec::with_capacity(data.len());
    let mut stream = redactor.stream(Mode::Text);
    for piece in data.chunks(64 * 1024) {
        stream.push(piece, &mut |b| out.extend_from_slice(b));
    }
    stream.finish(&mut |b| out.extend_from_slice(b));
    let mut sealer = Sealer::new();
    let before_deflate = cpu_seconds()?;
    let compressed: usize = out
        .chunks(CHUNK_BYTES)
        .map(|piece| sealer.seal(piece).gz.len())
        .sum();
    let deflated = cpu_seconds()?;
    println!(
        "{}",
        serde_json::json!({
            "bytes": data.len(),
            "secrets": secrets.len(),
            "redactor": redactor.describe(),
            "redactions": redactions,
            "build_cpu_s": built - before,
            "redact_cpu_s": redacted - built,
            "deflate_cpu_s": deflated - before_deflate,
            "level": GZIP_LEVEL,
            "gzip_bytes": compressed,
        })
    );
    Ok(())
}
