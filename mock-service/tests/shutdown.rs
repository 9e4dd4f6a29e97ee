//! The mock binary on SIGTERM: it exits cleanly, with a request still in
//! flight, and removes the temporary data directory it made for itself.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long the test waits for the exit before it fails (a bound on a
/// hang, not a measure of speed: the mock's own grace period is 300 ms).
const EXIT_BOUND: Duration = Duration::from_secs(20);

#[test]
fn sigterm_stops_the_mock_and_removes_its_temporary_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let mut mock = Command::new(env!("CARGO_BIN_EXE_mock-assisted-service"))
        .args(["--listen", "127.0.0.1:0"])
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(mock.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();

    // The data directory it made in the (test's own) temporary directory.
    let made: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(made.len(), 1, "{made:?}");
    assert!(made[0].starts_with("mock-assisted-service-"), "{made:?}");

    // A connection with half a request: the mock must not wait for it.
    let mut open = TcpStream::connect(&addr).unwrap();
    open.write_all(format!("GET /admin/state HTTP/1.1\r\nHost: {addr}\r\n").as_bytes())
        .unwrap();
    // One complete exchange first, so the half request is surely accepted.
    let mut probe = TcpStream::connect(&addr).unwrap();
    probe
        .write_all(
            format!("GET /admin/state HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .unwrap();
    let mut answer = String::new();
    probe.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    let signalled = Instant::now();
    let status = Command::new("kill")
        .args(["-TERM", &mock.id().to_string()])
        .status()
        .expect("run kill (procps)");
    assert!(status.success());
    let exit = loop {
        if let Some(exit) = mock.try_wait().unwrap() {
            break exit;
        }
        if signalled.elapsed() > EXIT_BOUND {
            let _ = mock.kill();
            panic!("the mock did not exit within {EXIT_BOUND:?} of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    eprintln!("exited {:?} after SIGTERM", signalled.elapsed());
    let mut stderr = String::new();
    mock.stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(exit.success(), "{exit:?}\n{stderr}");
    assert!(stderr.contains("shutting down"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}\n{stderr}");
    drop(open);
}
