//! systemd's view: every unit, the failed ones each with its status and its
//! journal of this boot, kubelet's status, and what kubelet's health
//! endpoint answers right now. A failed `release-image.service` or a kubelet
//! that never turns healthy is usually the first thing to look at.
//!
//! systemctl and the healthz probe always describe the running machine:
//! neither runs when that is not the host the bundle describes (`collect`
//! from a mounted disk), whose failed units its journal tells.

use std::io::{self, Read as _, Write as _};
use std::net::{TcpStream, ToSocketAddrs as _};
use std::time::{Duration, Instant};

use super::capture::Captured;
use super::members::{Members, Opts};
use super::report::Status;

/// Failed units looked at one by one; more are only listed.
const MAX_FAILED_UNITS: usize = 20;
/// A failed unit's own journal, newest part.
const FAILED_UNIT_LOG_BYTES: u64 = 2 * 1024 * 1024;
const UNIT_SUFFIXES: &[&str] = &[
    ".service",
    ".socket",
    ".mount",
    ".automount",
    ".swap",
    ".target",
    ".timer",
    ".path",
    ".device",
    ".scope",
    ".slice",
];
/// For the whole exchange: a listener that trickles its answer must not
/// hold the collector for a read timeout per byte.
const HEALTHZ_TIMEOUT: Duration = Duration::from_secs(3);
/// An answer bigger than this is not kubelet's `ok`.
const HEALTHZ_MAX_BYTES: u64 = 16 * 1024;

pub(crate) fn collect(m: &mut Members<'_>) -> io::Result<()> {
    if !m.running_machine("systemctl, the kubelet healthz probe") {
        return Ok(());
    }
    m.command(
        "systemd/list-units.txt",
        "systemctl",
        ["list-units", "--all", "--no-pager"],
    )?;
    let mut failed = Vec::new();
    m.command_adjusted(
        "systemd/failed-units.txt",
        "systemctl",
        ["list-units", "--failed", "--all", "--no-pager", "--plain"],
        |captured| failed = failed_units(captured),
    )?;
    if failed.len() > MAX_FAILED_UNITS {
        m.note(format!(
            "{} failed units; status and journal of the first {MAX_FAILED_UNITS} only",
            failed.len()
        ));
    }
    let journal_root = super::journal::root_args(m.ctx());
    for unit in failed.iter().take(MAX_FAILED_UNITS) {
        m.command(
            &format!("systemd/failed/{unit}.status.txt"),
            "systemctl",
            ["status", "--no-pager", "--full", "--lines=0", unit],
        )?;
        let mut args = journal_root.clone();
        args.extend(
            [
                "-b",
                "0",
                "-u",
                unit,
                "--no-pager",
                "--all",
                "-o",
                "short-iso-precise",
            ]
            .map(Into::into),
        );
        m.command_with(
            &format!("systemd/failed/{unit}.log"),
            "journalctl",
            args,
            Opts::max_bytes(FAILED_UNIT_LOG_BYTES),
        )?;
    }
    m.command_adjusted(
        "systemd/kubelet-status.txt",
        "systemctl",
        [
            "status",
            "--no-pager",
            "--full",
            "--lines=20",
            "kubelet.service",
        ],
        // `systemctl status` exits 3 for an inactive unit: still an answer.
        status_exit_is_an_answer,
    )?;
    healthz(m)
}

/// Unit names from `systemctl list-units --plain` (first column).
fn failed_units(captured: &mut Captured) -> Vec<String> {
    captured
        .head_text()
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(|unit| unit.trim_start_matches('●').trim())
        .filter(|unit| {
            UNIT_SUFFIXES.iter().any(|s| unit.ends_with(s))
                && unit
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.@:\\".contains(&b))
        })
        .map(str::to_owned)
        .collect()
}

fn status_exit_is_an_answer(captured: &mut Captured) {
    if captured.status == Status::Failed
        && captured
            .reason
            .as_deref()
            .is_some_and(|r| r.starts_with("exit code 3"))
        && !captured.content.is_empty()
    {
        captured.status = Status::Ok;
        captured.reason = Some("inactive (exit code 3)".into());
    }
}

/// Asks kubelet's healthz once and stores the answer (or why there is none).
fn healthz(m: &mut Members<'_>) -> io::Result<()> {
    const PATH: &str = "systemd/kubelet-healthz.txt";
    let Some(url) = m.ctx().kubelet_healthz_url.clone() else {
        m.skip_live(PATH, "kubelet healthz", "no kubelet healthz URL configured");
        return Ok(());
    };
    let answer = match probe(&url) {
        Ok(answer) => answer,
        Err(err) => format!("GET {url}\nno answer: {err}\n"),
    };
    m.generated_live(PATH, &format!("GET {url}"), answer.into_bytes())
}

/// A plain HTTP/1.0 GET: the endpoint is on loopback and speaks http; a
/// full client (and its proxy settings) would be wrong here.
fn probe(url: &str) -> io::Result<String> {
    let rest = url.strip_prefix("http://").ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::Unsupported,
            "only http:// healthz URLs are probed here",
        )
    })?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let addr = authority
        .to_socket_addrs()
        .or_else(|_| format!("{authority}:80").to_socket_addrs())?
        .next()
        .ok_or_else(|| io::Error::other(format!("{authority} resolves to nothing")))?;
    let deadline = Instant::now() + HEALTHZ_TIMEOUT;
    let mut stream = TcpStream::connect_timeout(&addr, HEALTHZ_TIMEOUT)?;
    stream.set_write_timeout(Some(HEALTHZ_TIMEOUT))?;
    // One write: a server may read the request line from the first segment.
    let request = format!("GET {path} HTTP/1.0\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes())?;
    let mut response = Vec::new();
    let mut chunk = [0u8; 4096];
    while (response.len() as u64) < HEALTHZ_MAX_BYTES {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no complete answer within {HEALTHZ_TIMEOUT:?}"),
            ));
        }
        stream.set_read_timeout(Some(left))?;
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => response.extend_from_slice(&chunk[..n]),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    response.truncate(usize::try_from(HEALTHZ_MAX_BYTES).unwrap_or(usize::MAX));
    let text = String::from_utf8_lossy(&response);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.lines().next().unwrap_or("").trim();
    let verdict = if status.split_whitespace().nth(1) == Some("200") && body.trim() == "ok" {
        "healthy"
    } else {
        "not healthy"
    };
    Ok(format!("GET {url}\n{status}\n{verdict}\n\n{body}\n"))
}

#[cfg(test)]
mod tests {
    use super::super::run_collector;
    use super::super::testing::{context, fixture_path, script, MemorySink};
    use super::*;
    use std::net::TcpListener;
    use std::path::Path;

    #[test]
    fn failed_units_get_status_and_journal_and_kubelet_is_asked() {
        let bin = tempfile::tempdir().unwrap();
        script(
            bin.path(),
            "systemctl",
            r#"case "$*" in
  *--failed*) echo "release-image.service loaded failed failed Download the OpenShift Release Image"
              echo "bad/unit.service loaded failed failed evil name"
              echo ""
              echo "1 loaded units listed." ;;
  "status --no-pager --full --lines=20 kubelet.service") echo "kubelet.service - Kubernetes Kubelet"; echo "   Active: inactive (dead)"; exit 3 ;;
  status*) echo "status of $*"; exit 3 ;;
  *) echo "UNIT LOAD ACTIVE SUB DESCRIPTION" ;;
esac"#,
        );
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut buf = [0u8; 1024];
            let n = conn.read(&mut buf).unwrap();
            assert!(buf[..n].starts_with(b"GET /healthz HTTP/1.0\r\n"));
            conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .unwrap();
        });
        let mut ctx = context(Path::new("/"), Some(fixture_path(Some(bin.path()))));
        ctx.kubelet_healthz_url = Some(format!("http://127.0.0.1:{port}/healthz"));
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        let report = run_collector("systemd", collect, &ctx, &mut sink).unwrap();
        server.join().unwrap();

        let paths: Vec<&str> = report.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "systemd/list-units.txt",
                "systemd/failed-units.txt",
                "systemd/failed/release-image.service.status.txt",
                "systemd/failed/release-image.service.log",
                "systemd/kubelet-status.txt",
                "systemd/kubelet-healthz.txt",
            ]
        );
        let log = String::from_utf8_lossy(
            sink.get("systemd/failed/release-image.service.log")
                .unwrap(),
        )
        .into_owned();
        assert!(log.contains("-b 0 -u release-image.service"), "{log}");
        let kubelet = &report.files[4];
        assert_eq!(kubelet.status, Status::Ok, "{kubelet:?}");
        let healthz =
            String::from_utf8_lossy(sink.get("systemd/kubelet-healthz.txt").unwrap()).into_owned();
        assert!(healthz.contains("HTTP/1.1 200 OK\nhealthy\n"), "{healthz}");
    }

    #[test]
    fn kubelet_not_listening_is_recorded_as_no_answer() {
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let mut ctx = context(Path::new("/"), Some(fixture_path(None)));
        ctx.kubelet_healthz_url = Some(format!("http://127.0.0.1:{port}/healthz"));
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        run_collector("systemd", collect, &ctx, &mut sink).unwrap();
        let healthz =
            String::from_utf8_lossy(sink.get("systemd/kubelet-healthz.txt").unwrap()).into_owned();
        assert!(healthz.contains("no answer:"), "{healthz}");
    }
}
