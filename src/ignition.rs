//! `assisted-boot-reporter ignition`: the Ignition 3.x fragment that installs
//! the reporter on one host, as assisted-service would merge it into the
//! host's pointer ignition.
//!
//! The fragment holds everything the host needs and nothing else: the static
//! binary for the host's architecture (a gzip-compressed data URL, so the
//! host downloads nothing), the systemd unit enabled, and the discovery
//! contract directory (`docs/discovery-contract.md`) with the pull secret at
//! mode 0600. It lives in the agent binary rather than in a script so that it
//! always ships the unit this build was tested with, reuses the gzip and JSON
//! code the agent already carries (a few KiB), and runs wherever the binary
//! does, with no interpreter on the service side.
//!
//! The pull secret is never a flag value (process arguments are readable by
//! every user) and never passes through a terminal: it comes from a file or a
//! pipe, and the fragment, which carries it, is never written to a terminal.

use std::fmt::Write as _;
use std::fs::{self, OpenOptions};
use std::io::{IsTerminal, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context};
use clap::{Args, ValueEnum};
use serde_json::{json, Value};
use uuid::Uuid;

use base64::Engine as _;

use crate::contract;
use crate::secret::Secret;

/// Where the binary lands on the host; the unit's `ExecStart=` runs it.
pub(crate) const BINARY_PATH: &str = "/usr/local/bin/assisted-boot-reporter";
pub(crate) const UNIT_NAME: &str = "assisted-boot-reporter.service";
/// The unit this build ships, byte for byte.
pub(crate) const UNIT_CONTENTS: &str = include_str!("../systemd/assisted-boot-reporter.service");

const MODE_BINARY: u32 = 0o755;
/// Refuses absurd inputs before reading them whole (the agent is ~4 MiB).
const MAX_BINARY_BYTES: u64 = 64 * 1024 * 1024;
const MAX_TEXT_BYTES: u64 = 1024 * 1024;
/// ELF program header type naming the dynamic loader.
const PT_INTERP: u32 = 3;

/// Flags of `ignition`.
#[derive(Debug, Clone, Args)]
pub(crate) struct IgnitionArgs {
    /// Architecture of the host; the binary's ELF header must say the same.
    #[arg(long, value_enum)]
    pub(crate) arch: Arch,

    /// The static reporter binary built for --arch [default: this executable].
    #[arg(long, value_name = "PATH")]
    pub(crate) binary: Option<PathBuf>,

    /// Ignition spec version of the fragment: 3.2, the version of the
    /// pointer ignition assisted-service renders and merges into (its
    /// Ignition types are spec 3.2), read by the Ignition of every RHCOS it
    /// installs. 3.4 is not offered: assisted-service cannot parse it, and
    /// the RHCOS of OpenShift 4.10 to 4.12 predates Ignition 2.15, the first
    /// to read it.
    #[arg(long, value_enum, default_value = "3.2")]
    pub(crate) spec: Spec,

    /// assisted-service base URL the host reports to, e.g. https://api.openshift.com.
    #[arg(long, value_name = "URL")]
    pub(crate) service_url: String,

    /// Infra-env of the host.
    #[arg(long, value_name = "UUID")]
    pub(crate) infra_env_id: Uuid,

    /// The host's ID.
    #[arg(long, value_name = "UUID")]
    pub(crate) host_id: Uuid,

    /// The cluster's ID, when known (the reporter learns it from the service otherwise).
    #[arg(long, value_name = "UUID")]
    pub(crate) cluster_id: Option<Uuid>,

    /// File holding the pull secret JSON or a bare agent token; `-` reads it
    /// from standard input, which must then be a pipe or a file, never a
    /// terminal. Omit only for a service running without authentication.
    #[arg(long, value_name = "PATH")]
    pub(crate) pull_secret_file: Option<PathBuf>,

    /// PEM bundle of the CA that signed the service's certificate (private deployments).
    #[arg(long, value_name = "PATH")]
    pub(crate) ca_cert: Option<PathBuf>,

    /// Where to write the fragment (created mode 0600: it holds the pull
    /// secret) [default: standard output, which must not be a terminal].
    #[arg(long, short, value_name = "PATH")]
    pub(crate) output: Option<PathBuf>,

    /// The infra-env's `http_proxy`: http://[user:password@]host:port, for an
    /// http:// service URL. Written with the other two to the contract's
    /// proxy.env (mode 0600).
    #[arg(long, value_name = "URL")]
    pub(crate) http_proxy: Option<String>,

    /// The infra-env's `https_proxy`: http:// or https:// proxy URL, for an
    /// https:// service URL (CONNECT).
    #[arg(long, value_name = "URL")]
    pub(crate) https_proxy: Option<String>,

    /// The infra-env's `no_proxy`: `*`, or comma-separated host names,
    /// domains (`.example.com`: subdomains only), IP addresses and CIDRs.
    #[arg(long, value_name = "LIST")]
    pub(crate) no_proxy: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Arch {
    #[value(name = "x86_64")]
    X86_64,
    #[value(name = "aarch64")]
    Aarch64,
    #[value(name = "ppc64le")]
    Ppc64le,
    #[value(name = "s390x")]
    S390x,
}

impl Arch {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
            Arch::Ppc64le => "ppc64le",
            Arch::S390x => "s390x",
        }
    }

    /// ELF `e_machine` and whether the architecture is big-endian.
    fn elf_machine(self) -> (u16, bool) {
        match self {
            Arch::X86_64 => (62, false),
            Arch::Aarch64 => (183, false),
            Arch::Ppc64le => (21, false),
            Arch::S390x => (22, true),
        }
    }

    /// The architecture this executable was built for.
    pub(crate) fn current() -> Option<Arch> {
        match std::env::consts::ARCH {
            "x86_64" => Some(Arch::X86_64),
            "aarch64" => Some(Arch::Aarch64),
            "powerpc64" if cfg!(target_endian = "little") => Some(Arch::Ppc64le),
            "s390x" => Some(Arch::S390x),
            _ => None,
        }
    }
}

/// Ignition config spec versions the fragment can be written in; see
/// docs/install.md for why 3.2 is the only one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Spec {
    #[value(name = "3.2")]
    V3_2,
}

impl Spec {
    pub(crate) fn version(self) -> &'static str {
        match self {
            Spec::V3_2 => "3.2.0",
        }
    }
}

/// The subcommand. Unlike `run`, a failure here is the caller's to see
/// (`main` exits 1 with the reason on stderr), and nothing is written.
pub(crate) fn run(args: &IgnitionArgs) -> anyhow::Result<()> {
    // Checked before any input is read: a secret must never be read only
    // to be printed on a terminal.
    if args.output.is_none() && std::io::stdout().is_terminal() {
        bail!(
            "standard output is a terminal and the fragment carries the pull secret: \
             use --output FILE or redirect it"
        );
    }
    let inputs = Inputs::read(args)?;
    let fragment = fragment(&inputs, args.spec);
    let mut text = serde_json::to_string_pretty(&fragment).context("serializing the fragment")?;
    text.push('\n');
    if let Some(path) = &args.output {
        write_private(path, text.as_bytes())
    } else {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .context("writing the fragment to standard output")
    }
}

/// Checks the proxy flags as assisted-service checks an infra-env's proxy
/// (`pkg/validations`: http_proxy http only, https_proxy http or https, the
/// scheme spelled out) and renders `proxy.env`. Errors never quote a URL.
fn proxy_env(args: &IgnitionArgs) -> anyhow::Result<Option<Secret>> {
    let mut text = String::new();
    for (flag, key, value, allow_https) in [
        ("--http-proxy", "HTTP_PROXY", &args.http_proxy, false),
        ("--https-proxy", "HTTPS_PROXY", &args.https_proxy, true),
    ] {
        let Some(value) = value.as_deref().map(str::trim).filter(|v| !v.is_empty()) else {
            continue;
        };
        // The URL parser drops newlines; proxy.env must stay one line per key.
        ensure!(
            !value.chars().any(char::is_control),
            "{flag}: the URL holds control characters"
        );
        ensure!(
            value.contains("://"),
            "{flag}: the URL must start with its scheme (http://)"
        );
        crate::proxy::ProxyUrl::parse(value, allow_https)
            .map_err(|reason| anyhow::anyhow!("{flag}: {reason}"))?;
        let _ = writeln!(text, "{key}={value}");
    }
    if let Some(value) = args
        .no_proxy
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
    {
        ensure!(
            !text.is_empty(),
            "--no-proxy without --http-proxy or --https-proxy has nothing to bypass"
        );
        crate::proxy::NoProxy::validate(value)
            .map_err(|reason| anyhow::anyhow!("--no-proxy: {reason}"))?;
        let _ = writeln!(text, "NO_PROXY={value}");
    }
    Ok((!text.is_empty()).then(|| Secret::from(text)))
}

/// Everything the fragment is made of, read and checked.
#[derive(Debug)]
pub(crate) struct Inputs {
    pub(crate) binary: Vec<u8>,
    pub(crate) service_url: String,
    pub(crate) infra_env_id: Uuid,
    pub(crate) host_id: Uuid,
    pub(crate) cluster_id: Option<Uuid>,
    pub(crate) pull_secret: Option<Secret>,
    pub(crate) ca_cert: Option<String>,
    pub(crate) proxy: Option<Secret>,
}

impl Inputs {
    fn read(args: &IgnitionArgs) -> anyhow::Result<Inputs> {
        let binary_path = if let Some(path) = &args.binary {
            path.clone()
        } else {
            ensure!(
                Arch::current() == Some(args.arch),
                "--binary is required: this executable is built for {}, not {}",
                std::env::consts::ARCH,
                args.arch.name()
            );
            std::env::current_exe().context("finding this executable")?
        };
        let binary = read_binary(&binary_path, args.arch)?;

        let service_url = check_service_url(&args.service_url)?;
        let proxy = proxy_env(args)?;
        let pull_secret = match &args.pull_secret_file {
            Some(path) => Some(read_pull_secret(path)?),
            None => None,
        };
        let ca_cert = match &args.ca_cert {
            Some(path) => {
                let pem = String::from_utf8(read_limited(path, MAX_TEXT_BYTES)?)
                    .with_context(|| format!("{} is not UTF-8 PEM", path.display()))?;
                ensure!(
                    pem.contains("-----BEGIN CERTIFICATE-----"),
                    "{} holds no PEM certificate",
                    path.display()
                );
                Some(pem)
            }
            None => None,
        };
        Ok(Inputs {
            binary,
            service_url,
            infra_env_id: args.infra_env_id,
            host_id: args.host_id,
            cluster_id: args.cluster_id,
            pull_secret,
            ca_cert,
            proxy,
        })
    }
}

/// Reads the binary to ship; the ELF check comes before the size limit
/// because "built for aarch64" or "dynamically linked" says more than "too large".
fn read_binary(path: &Path, arch: Arch) -> anyhow::Result<Vec<u8>> {
    let file = fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut data = Vec::new();
    file.take(MAX_BINARY_BYTES + 1)
        .read_to_end(&mut data)
        .with_context(|| format!("reading {}", path.display()))?;
    check_elf(&data, arch).with_context(|| format!("{} cannot be shipped", path.display()))?;
    ensure!(
        data.len() as u64 <= MAX_BINARY_BYTES,
        "{} is larger than {MAX_BINARY_BYTES} bytes: not a release build",
        path.display()
    );
    Ok(data)
}

fn read_limited(path: &Path, limit: u64) -> anyhow::Result<Vec<u8>> {
    let file = fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut data = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut data)
        .with_context(|| format!("reading {}", path.display()))?;
    ensure!(
        data.len() as u64 <= limit,
        "{} is larger than {limit} bytes",
        path.display()
    );
    Ok(data)
}

/// Reads the secret from a file or a pipe and checks it is what the reporter
/// accepts; the reason of a rejection never quotes the input.
fn read_pull_secret(path: &Path) -> anyhow::Result<Secret> {
    let raw = if path == Path::new("-") {
        let stdin = std::io::stdin();
        if stdin.is_terminal() {
            bail!(
                "--pull-secret-file -: standard input is a terminal, where the secret would \
                 be echoed; pipe it in (< pull-secret.json) or give the file's path"
            );
        }
        let mut data = Vec::new();
        stdin
            .lock()
            .take(MAX_TEXT_BYTES + 1)
            .read_to_end(&mut data)
            .context("reading the pull secret from standard input")?;
        ensure!(
            data.len() as u64 <= MAX_TEXT_BYTES,
            "the pull secret on standard input is larger than {MAX_TEXT_BYTES} bytes"
        );
        data
    } else {
        read_limited(path, MAX_TEXT_BYTES)?
    };
    let text = String::from_utf8(raw)
        .map_err(|_| anyhow::anyhow!("the pull secret from {} is not UTF-8", path.display()))?;
    contract::parse_credentials(&text).map_err(|reason| {
        anyhow::anyhow!(
            "the pull secret from {} is unusable: {reason}",
            path.display()
        )
    })?;
    // Stored as given (trimmed): the reporter extracts the token itself, and
    // the whole pull secret lets it scrub every registry's auth from bundles.
    Ok(Secret::from(text.trim().to_owned()))
}

/// The URL as given (the agent normalises it when it reads the contract),
/// checked as the agent will check it. The error never quotes the URL: it
/// may carry credentials.
fn check_service_url(value: &str) -> anyhow::Result<String> {
    let value = value.trim();
    crate::config::service_url(value)
        .map_err(|reason| anyhow::anyhow!("--service-url: {reason}"))?;
    Ok(value.to_owned())
}

/// Checks the bytes are a 64-bit ELF executable for `arch` with no program
/// interpreter: a dynamically linked binary would depend on the host's
/// libraries, which the reporter must not.
pub(crate) fn check_elf(data: &[u8], arch: Arch) -> anyhow::Result<()> {
    ensure!(
        data.len() >= 64 && data[..4] == *b"\x7fELF",
        "not an ELF file"
    );
    ensure!(data[4] == 2, "not a 64-bit ELF file");
    let big_endian = match data[5] {
        1 => false,
        2 => true,
        other => bail!("unknown ELF byte order {other}"),
    };
    let u16_at = |off: usize| {
        let b = [data[off], data[off + 1]];
        if big_endian {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        }
    };
    let u32_at = |off: usize| {
        let b = [data[off], data[off + 1], data[off + 2], data[off + 3]];
        if big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }
    };
    let u64_at = |off: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&data[off..off + 8]);
        if big_endian {
            u64::from_be_bytes(b)
        } else {
            u64::from_le_bytes(b)
        }
    };
    let (machine, arch_big_endian) = arch.elf_machine();
    let found = u16_at(18);
    ensure!(
        found == machine && big_endian == arch_big_endian,
        "built for {} (ELF machine {found}, {}), not {}",
        elf_machine_name(found),
        if big_endian {
            "big-endian"
        } else {
            "little-endian"
        },
        arch.name()
    );
    // ET_EXEC, or ET_DYN for a static-pie executable.
    ensure!(
        matches!(u16_at(16), 2 | 3),
        "not an executable (ELF type {})",
        u16_at(16)
    );
    let phoff = usize::try_from(u64_at(32)).context("program header offset")?;
    let phentsize = usize::from(u16_at(54));
    let phnum = usize::from(u16_at(56));
    ensure!(phentsize >= 4, "malformed program headers");
    for i in 0..phnum {
        let off = phentsize
            .checked_mul(i)
            .and_then(|o| o.checked_add(phoff))
            .filter(|o| {
                o.checked_add(phentsize)
                    .is_some_and(|end| end <= data.len())
            })
            .context("program headers run past the end of the file")?;
        ensure!(
            u32_at(off) != PT_INTERP,
            "dynamically linked (it has a program interpreter); build it static \
             with packaging/build-all"
        );
    }
    Ok(())
}

fn elf_machine_name(machine: u16) -> &'static str {
    match machine {
        62 => "x86_64",
        183 => "aarch64",
        21 => "ppc64",
        22 => "s390x",
        3 => "i386",
        40 => "arm",
        243 => "riscv",
        _ => "another architecture",
    }
}

/// Builds the fragment. Pure: the same inputs give the same bytes.
pub(crate) fn fragment(inputs: &Inputs, spec: Spec) -> Value {
    let mut files = vec![json!({
        "path": BINARY_PATH,
        "mode": MODE_BINARY,
        "overwrite": true,
        "contents": {
            "compression": "gzip",
            "source": format!("data:;base64,{}", base64(&gzip(&inputs.binary))),
        },
    })];
    let dir = contract::DEFAULT_DIR;
    let values = contract::Values {
        pull_secret: inputs.pull_secret.as_ref().map(Secret::expose),
        proxy_env: inputs.proxy.as_ref().map(Secret::expose),
        service_url: &inputs.service_url,
        infra_env_id: inputs.infra_env_id,
        host_id: inputs.host_id,
        cluster_id: inputs.cluster_id,
        ca_cert: inputs.ca_cert.as_deref(),
    };
    for entry in contract::entries(&values) {
        files.push(json!({
            "path": format!("{dir}/{}", entry.name),
            "mode": entry.mode,
            "overwrite": true,
            "contents": {"source": data_url(entry.text.as_bytes())},
        }));
    }
    json!({
        "ignition": {"version": spec.version()},
        "storage": {
            "directories": [{
                "path": dir,
                "mode": contract::MODE_DIR,
                "overwrite": true,
            }],
            "files": files,
        },
        "systemd": {
            "units": [{
                "name": UNIT_NAME,
                "enabled": true,
                "contents": UNIT_CONTENTS,
            }],
        },
    })
}

fn gzip(data: &[u8]) -> Vec<u8> {
    crate::gzip::gzip(data, crate::gzip::BEST_LEVEL)
}

/// A data URL for a small file: percent-encoded text when that is shorter
/// (and readable in the fragment), base64 otherwise, as Butane chooses.
fn data_url(data: &[u8]) -> String {
    let mut percent = String::from("data:,");
    for &b in data {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            percent.push(char::from(b));
        } else {
            let _ = write!(percent, "%{b:02X}");
        }
    }
    let b64 = format!("data:;base64,{}", base64(data));
    if b64.len() < percent.len() {
        b64
    } else {
        percent
    }
}

/// Standard base64 with padding (RFC 4648 §4), as data URLs want.
fn base64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// Writes `data` to a new or truncated file readable by its owner only.
fn write_private(path: &Path, data: &[u8]) -> anyhow::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(contract::MODE_SECRET)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    // `mode` only applies on creation: tighten a file that already existed.
    file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(
        contract::MODE_SECRET,
    ))
    .with_context(|| format!("setting the mode of {}", path.display()))?;
    file.write_all(data)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal 64-bit ELF header with one program header of type `ptype`.
    pub(crate) fn elf(machine: u16, big_endian: bool, ptype: u32) -> Vec<u8> {
        let mut d = vec![0u8; 64 + 56];
        d[..4].copy_from_slice(b"\x7fELF");
        d[4] = 2;
        d[5] = if big_endian { 2 } else { 1 };
        d[6] = 1;
        let put16 = |d: &mut Vec<u8>, off: usize, v: u16| {
            let b = if big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            };
            d[off..off + 2].copy_from_slice(&b);
        };
        put16(&mut d, 16, 3);
        put16(&mut d, 18, machine);
        let phoff: u64 = 64;
        let b = if big_endian {
            phoff.to_be_bytes()
        } else {
            phoff.to_le_bytes()
        };
        d[32..40].copy_from_slice(&b);
        put16(&mut d, 54, 56);
        put16(&mut d, 56, 1);
        let t = if big_endian {
            ptype.to_be_bytes()
        } else {
            ptype.to_le_bytes()
        };
        d[64..68].copy_from_slice(&t);
        d
    }

    const PT_LOAD: u32 = 1;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (input, want) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(input.as_bytes()), want, "input {input:?}");
        }
    }

    #[test]
    fn small_text_is_percent_encoded_and_binary_base64() {
        assert_eq!(
            data_url(b"https://svc.example.com\n"),
            "data:,https%3A%2F%2Fsvc.example.com%0A"
        );
        let binary: Vec<u8> = (0u8..=255).collect();
        assert!(data_url(&binary).starts_with("data:;base64,"));
    }

    #[test]
    fn elf_check_accepts_each_static_arch_and_rejects_the_rest() {
        for arch in [Arch::X86_64, Arch::Aarch64, Arch::Ppc64le, Arch::S390x] {
            let (machine, be) = arch.elf_machine();
            check_elf(&elf(machine, be, PT_LOAD), arch)
                .unwrap_or_else(|e| panic!("{}: {e:#}", arch.name()));
            let wrong = if arch == Arch::X86_64 {
                Arch::Aarch64
            } else {
                Arch::X86_64
            };
            let err = check_elf(&elf(machine, be, PT_LOAD), wrong).unwrap_err();
            assert!(
                format!("{err:#}").contains(&format!("not {}", wrong.name())),
                "{err:#}"
            );
        }
        // Big-endian ppc64 is not ppc64le.
        let err = check_elf(&elf(21, true, PT_LOAD), Arch::Ppc64le).unwrap_err();
        assert!(format!("{err:#}").contains("big-endian"), "{err:#}");
        let err = check_elf(&elf(62, false, 3), Arch::X86_64).unwrap_err();
        assert!(format!("{err:#}").contains("dynamically linked"), "{err:#}");
        assert!(check_elf(b"#!/bin/sh\necho hi\n", Arch::X86_64).is_err());
        let mut truncated = elf(62, false, PT_LOAD);
        truncated.truncate(80);
        assert!(check_elf(&truncated, Arch::X86_64).is_err());
    }

    fn inputs() -> Inputs {
        Inputs {
            binary: elf(183, false, PT_LOAD),
            service_url: "https://api.example.com".into(),
            infra_env_id: Uuid::from_u128(1),
            host_id: Uuid::from_u128(2),
            cluster_id: None,
            pull_secret: Some(Secret::from("bare-token".to_owned())),
            ca_cert: None,
            proxy: None,
        }
    }

    #[test]
    fn fragment_holds_binary_unit_and_contract_with_their_modes() {
        let f = fragment(&inputs(), Spec::V3_2);
        assert_eq!(f["ignition"]["version"], "3.2.0");
        let files = f["storage"]["files"].as_array().unwrap();
        let by_path = |p: &str| {
            files
                .iter()
                .find(|f| f["path"] == p)
                .unwrap_or_else(|| panic!("no {p}"))
        };
        let bin = by_path(BINARY_PATH);
        assert_eq!(bin["mode"], 0o755);
        assert_eq!(bin["contents"]["compression"], "gzip");
        assert_eq!(
            by_path("/etc/assisted-boot-reporter/pull-secret")["mode"],
            0o600
        );
        assert_eq!(
            by_path("/etc/assisted-boot-reporter/host-id")["mode"],
            0o644
        );
        assert!(files
            .iter()
            .all(|f| f["path"] != "/etc/assisted-boot-reporter/cluster-id"));
        assert_eq!(f["storage"]["directories"][0]["mode"], 0o700);
        let unit = &f["systemd"]["units"][0];
        assert_eq!(unit["name"], UNIT_NAME);
        assert_eq!(unit["enabled"], true);
        assert_eq!(unit["contents"], UNIT_CONTENTS);
        assert!(UNIT_CONTENTS.contains(&format!("ExecStart={BINARY_PATH} run")));
    }

    #[test]
    fn proxy_flags_become_a_private_proxy_env() {
        let args = |http: Option<&str>, https: Option<&str>, no: Option<&str>| IgnitionArgs {
            arch: Arch::X86_64,
            binary: None,
            spec: Spec::V3_2,
            service_url: "https://api.example.com".into(),
            infra_env_id: Uuid::from_u128(1),
            host_id: Uuid::from_u128(2),
            cluster_id: None,
            pull_secret_file: None,
            ca_cert: None,
            output: None,
            http_proxy: http.map(Into::into),
            https_proxy: https.map(Into::into),
            no_proxy: no.map(Into::into),
        };
        assert!(proxy_env(&args(None, None, None)).unwrap().is_none());
        let env = proxy_env(&args(
            Some("http://proxy.example:3128"),
            Some("http://user:pa55word@proxy.example:3128"),
            Some(".cluster.example,10.0.0.0/8,fd00::/8"),
        ))
        .unwrap()
        .unwrap();
        assert_eq!(
            env.expose(),
            "HTTP_PROXY=http://proxy.example:3128\n\
             HTTPS_PROXY=http://user:pa55word@proxy.example:3128\n\
             NO_PROXY=.cluster.example,10.0.0.0/8,fd00::/8\n"
        );
        assert!(!format!("{env:?}").contains("pa55word"));
        let mut with_proxy = inputs();
        with_proxy.proxy = Some(env);
        let f = fragment(&with_proxy, Spec::V3_2);
        let file = f["storage"]["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == "/etc/assisted-boot-reporter/proxy.env")
            .expect("proxy.env in the fragment");
        assert_eq!(file["mode"], 0o600);

        for (bad, want) in [
            (
                args(Some("https://p:1"), None, None),
                "--http-proxy: scheme",
            ),
            (
                args(Some("p:3128"), None, None),
                "must start with its scheme",
            ),
            (
                args(None, Some("socks5://u:hunter22@p:1"), None),
                "--https-proxy",
            ),
            (args(None, None, Some("*")), "nothing to bypass"),
            (
                args(None, Some("http://p:1"), Some("a.example,*")),
                "whole value",
            ),
            (args(None, Some("http://p:1"), Some("a b")), "--no-proxy"),
            (
                args(Some("http://p:1\nNO_PROXY=*"), None, None),
                "control characters",
            ),
        ] {
            let err = format!("{:#}", proxy_env(&bad).unwrap_err());
            assert!(err.contains(want), "{err}");
            assert!(!err.contains("hunter22"), "{err}");
        }
    }

    #[test]
    fn service_url_is_checked() {
        assert!(check_service_url("https://api.openshift.com").is_ok());
        assert!(check_service_url("ftp://x").is_err());
        let with_password = check_service_url("https://user:hunter2@x").unwrap_err();
        assert!(
            !with_password.to_string().contains("hunter2"),
            "{with_password}"
        );
        assert!(check_service_url("not a url").is_err());
    }
}
