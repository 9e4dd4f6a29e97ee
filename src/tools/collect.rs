//! `collect -o FILE`: the very bundle the agent ships, written to a file
//! or stdout with no service involved, and a one-line report of it.
//!
//! With `--root /` it collects what the agent would on this host. With any
//! other root (a disk mounted from a live ISO or a rescue boot) it reads
//! that root's files and journal only: a command such as `ip`, `df` or
//! `crictl` would describe the rescue machine, so none runs, and the
//! manifest names the origin of every member and how the root was laid out
//! (`collect::layout`: a plain root or an ostree disk's root partition).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Args;

use crate::assemble::write_bundle;
use crate::bundle::{BundleLimits, BundleMeta, Manifest};
use crate::collect::{layout, CollectContext};
use crate::config::DEFAULT_KUBELET_HEALTHZ_URL;
use crate::contract;
use crate::redact::Redactor;

use super::args::{parse_duration, parse_size};

/// Flags of `collect`.
#[derive(Debug, Clone, Args)]
pub(crate) struct CollectArgs {
    /// Where to write the tar.gz (`-` for stdout).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub(crate) output: PathBuf,

    /// Sysroot prefix for every host file read: `/` for this host, or a
    /// disk mounted from a rescue system (a plain root, or RHCOS's `root`
    /// partition with its ostree deployments); then only that root's files
    /// and journal are read, no command about this machine runs.
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub(crate) root: PathBuf,

    /// The root is this machine's own `/` seen from elsewhere (a container
    /// with the host's `/` mounted at DIR): run the commands that describe
    /// this machine too, as with `--root /`.
    #[arg(long)]
    pub(crate) same_machine: bool,

    /// Discovery contract directory, read only for the host's IDs and the
    /// secrets to scrub [default: <root>/etc/assisted-boot-reporter].
    #[arg(long, value_name = "DIR")]
    pub(crate) config_dir: Option<PathBuf>,

    /// Longest a single collector command may run before it is killed.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "60s")]
    pub(crate) command_timeout: Duration,

    /// Cap of the bundle's content, e.g. 200MiB.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "200MiB")]
    pub(crate) max_bytes: u64,

    /// Cap of one member, e.g. 64MiB (bigger sources keep their newest part).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "64MiB")]
    pub(crate) member_max_bytes: u64,

    /// kubelet's health endpoint, asked once.
    #[arg(long, value_name = "URL", default_value = DEFAULT_KUBELET_HEALTHZ_URL)]
    pub(crate) kubelet_healthz_url: String,
}

/// `collect`: a bundle written, its report on stderr.
pub(crate) fn collect_command(args: &CollectArgs) -> anyhow::Result<()> {
    stop_children_on_signal();
    // Its report quotes the records digest and paths: redacted like the
    // bundle (the rules are installed once the secrets are read).
    collect(args, &mut crate::redact::log_writer()).map(drop)
}

/// Ctrl-C or SIGTERM ends `collect` together with the commands it runs:
/// each leads a process group of its own (`crate::child`), out of reach of
/// the terminal's signal to the foreground group.
fn stop_children_on_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let watcher = std::thread::Builder::new()
        .name("collect-signals".into())
        .spawn(|| {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            runtime.block_on(async {
                let (Ok(mut int), Ok(mut term)) = (
                    signal(SignalKind::interrupt()),
                    signal(SignalKind::terminate()),
                ) else {
                    return;
                };
                // The shell's convention: 128 + the signal's number.
                let code = tokio::select! {
                    _ = int.recv() => 130,
                    _ = term.recv() => 143,
                };
                crate::child::stop_all();
                std::process::exit(code);
            });
        });
    // Without the watcher the signals keep their default: the tool dies,
    // its commands end on their own.
    drop(watcher);
}

/// Counts what passes through to the output.
struct Counting<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Writes one bundle as `args` say and a one-paragraph account to `log`.
pub(crate) fn collect(args: &CollectArgs, log: &mut dyn Write) -> anyhow::Result<Manifest> {
    anyhow::ensure!(
        args.member_max_bytes > 0 && args.max_bytes > 0,
        "size caps must be above zero"
    );
    let started = Instant::now();
    let running_machine = args.same_machine || crate::collect::context::is_live_root(&args.root);
    let layout = layout::find(&args.root, running_machine);
    let contract = contract::Dir::at(&layout.files, args.config_dir.as_deref());
    // Unreadable or missing parts of the contract leave a field empty: this
    // tool must work on a host whose contract is already gone.
    let contract_value = |name: &str| contract.read(name).ok().flatten();
    let mut secrets: Vec<String> = Vec::new();
    let token_sources = [
        std::env::var(contract::env::TOKEN).ok(),
        contract_value(contract::files::PULL_SECRET),
    ];
    for text in token_sources.into_iter().flatten() {
        if let Ok(creds) = contract::parse_credentials(&text) {
            secrets.extend(creds.scrub.iter().map(|s| s.expose().to_owned()));
        }
    }
    let redactor = Redactor::new(secrets);
    crate::redact::install_for_logs(&redactor);
    let mut ctx = CollectContext::new(layout.files.clone(), args.command_timeout, redactor);
    ctx.kubelet_healthz_url = Some(args.kubelet_healthz_url.clone());
    ctx.var.clone_from(&layout.var);
    ctx.running_machine = running_machine;
    ctx.layout = Some(layout);
    let boot_id = ctx
        .read_host_file("/proc/sys/kernel/random/boot_id", 64, args.command_timeout)
        .map(|s| String::from_utf8_lossy(&s).trim().to_owned())
        .unwrap_or_default();
    let meta = BundleMeta {
        agent_version: env!("CARGO_PKG_VERSION").to_owned(),
        host_id: contract_value(contract::files::HOST_ID).unwrap_or_default(),
        infra_env_id: contract_value(contract::files::INFRA_ENV_ID).unwrap_or_default(),
        cluster_id: contract_value(contract::files::CLUSTER_ID),
        boot_id,
        // Not known without the agent's ledger; 0 says so.
        boot_number: 0,
        service_stage: None,
        reason: "offline".into(),
    };
    let limits = BundleLimits {
        total_bytes: args.max_bytes,
        member_bytes: args.member_max_bytes,
    };

    let to_stdout = args.output.as_os_str() == "-";
    let (manifest, compressed) = if to_stdout {
        let out = Counting {
            inner: BufWriter::new(io::stdout().lock()),
            bytes: 0,
        };
        let (manifest, mut out) = write_bundle(out, &ctx, &meta, &limits)?;
        out.flush().context("writing to stdout")?;
        (manifest, out.bytes)
    } else {
        // Written beside the target and renamed at the end, so a failed run
        // never leaves something that looks like a bundle.
        let partial = partial_path(&args.output);
        let file =
            File::create(&partial).with_context(|| format!("creating {}", partial.display()))?;
        let out = Counting {
            inner: BufWriter::new(file),
            bytes: 0,
        };
        let result = write_bundle(out, &ctx, &meta, &limits).and_then(|(manifest, out)| {
            let file = out
                .inner
                .into_inner()
                .map_err(io::IntoInnerError::into_error)
                .with_context(|| format!("writing {}", partial.display()))?;
            file.sync_all()
                .with_context(|| format!("writing {}", partial.display()))?;
            std::fs::rename(&partial, &args.output).with_context(|| {
                format!(
                    "renaming {} to {}",
                    partial.display(),
                    args.output.display()
                )
            })?;
            Ok((manifest, out.bytes))
        });
        if result.is_err() {
            let _ = std::fs::remove_file(&partial);
        }
        result?
    };

    let members: usize = manifest
        .collectors
        .iter()
        .flat_map(|c| &c.files)
        .filter(|f| f.archived)
        .count();
    let _ = writeln!(
        log,
        "wrote {}: {compressed} bytes compressed, {members} members, {} content bytes, \
         {} redactions, {} truncated, peak RSS {} KiB, {:.1}s",
        if to_stdout {
            "stdout".into()
        } else {
            args.output.display().to_string()
        },
        manifest.total_bytes,
        manifest.redactions,
        manifest.truncated.len(),
        peak_rss_kib().map_or_else(|| "?".into(), |k| k.to_string()),
        started.elapsed().as_secs_f64(),
    );
    if let Some(root) = manifest.root.as_ref().filter(|r| !r.running_machine) {
        let layout = match (&root.deployment, &root.chosen_by) {
            (Some(deployment), Some(why)) => format!("ostree deployment {deployment} ({why})"),
            _ => format!("{} root", root.layout),
        };
        let _ = writeln!(
            log,
            "root {}: {layout}; its files and journal only, no command about this machine run",
            root.path
        );
    }
    if let Some(digest) = manifest.digest() {
        let _ = writeln!(log, "records: {digest}");
    }
    Ok(manifest)
}

fn partial_path(output: &Path) -> PathBuf {
    let mut name = output.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".partial-{}", std::process::id()));
    output.with_file_name(name)
}

/// The kernel's high-water mark of this process's resident memory.
pub(crate) fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}
