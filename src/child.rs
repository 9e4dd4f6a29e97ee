//! The children the agent runs (the collectors' commands, `systemctl
//! disable`): each leads a process group of its own, so a timeout kills the
//! command together with whatever it started; a register of the live
//! groups, all killed at once when the agent stops, after which no child is
//! started; and a bounded run for commands whose answer is their exit
//! status.
//!
//! A command that moves itself to another group or session (a daemon)
//! escapes this; under the unit, systemd's `KillMode=control-group` still
//! ends it with the agent.

use std::io::{self, Read as _};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rustix::process::{kill_process_group, Pid, Signal};

/// How long a killed child may take to be reaped before it is left to init.
const KILL_GRACE: Duration = Duration::from_secs(2);
const POLL: Duration = Duration::from_millis(10);
/// A bounded run keeps this much of stderr, for the log.
const STDERR_KEEP: usize = 4096;

/// The live process groups of one agent, and whether it is stopping.
pub(crate) struct Register {
    state: Mutex<State>,
}

struct State {
    stopping: bool,
    groups: Vec<Pid>,
}

/// The agent's register: every child the process runs is in it.
static AGENT: Register = Register::new();

impl Default for Register {
    fn default() -> Self {
        Self::new()
    }
}

impl Register {
    pub(crate) const fn new() -> Self {
        Self {
            state: Mutex::new(State {
                stopping: false,
                groups: Vec::new(),
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Spawns `command` as the leader of a new process group, registered
    /// until the returned handle is dropped. Refused once the agent is
    /// stopping: a child started after [`Register::stop_all`] would outlive
    /// it.
    pub(crate) fn spawn(&'static self, command: &mut Command) -> io::Result<GroupChild> {
        use std::os::unix::process::CommandExt as _;
        // ETXTBSY: an executable still open for writing in a process between
        // fork and exec (a package update, a test writing a script while
        // another thread forks) cannot be executed for a moment.
        const ATTEMPTS: u32 = 5;
        command.process_group(0);
        let mut attempt = 1;
        loop {
            let spawned = {
                // Held across the spawn so that stop_all sees every group
                // started before it and none starts after it.
                let mut state = self.state();
                if state.stopping {
                    return Err(io::Error::other("not started: the agent is stopping"));
                }
                let spawned = command.spawn();
                if let Ok(child) = &spawned {
                    state.groups.push(Pid::from_child(child));
                }
                spawned
            };
            match spawned {
                Err(err)
                    if err.kind() == io::ErrorKind::ExecutableFileBusy && attempt < ATTEMPTS =>
                {
                    std::thread::sleep(Duration::from_millis(20) * attempt);
                    attempt += 1;
                }
                Err(err) => return Err(err),
                Ok(child) => {
                    return Ok(GroupChild {
                        pgid: Pid::from_child(&child),
                        child,
                        reaped: false,
                        register: self,
                    })
                }
            }
        }
    }

    /// Kills every live group and refuses new children from now on; returns
    /// how many groups were live.
    pub(crate) fn stop_all(&self) -> usize {
        let mut state = self.state();
        state.stopping = true;
        for pgid in &state.groups {
            let _ = kill_process_group(*pgid, Signal::KILL);
        }
        state.groups.len()
    }

    pub(crate) fn stopping(&self) -> bool {
        self.state().stopping
    }

    fn forget(&self, pgid: Pid) {
        self.state().groups.retain(|g| *g != pgid);
    }
}

/// [`Register::spawn`] in the agent's register.
pub(crate) fn spawn(command: &mut Command) -> io::Result<GroupChild> {
    AGENT.spawn(command)
}

/// Kills every child the agent still runs and starts no other: the agent is
/// leaving. Returns how many process groups were live.
pub(crate) fn stop_all() -> usize {
    AGENT.stop_all()
}

/// Whether [`stop_all`] has run: work that can be resumed by the next start
/// should stop rather than carry on without its children.
pub(crate) fn stopping() -> bool {
    AGENT.stopping()
}

/// A running child that leads its own process group. Dropping it kills the
/// group, so nothing the command left in the background outlives it, and
/// reaps the leader.
pub(crate) struct GroupChild {
    child: Child,
    pgid: Pid,
    reaped: bool,
    register: &'static Register,
}

impl GroupChild {
    /// The child, for its pipes.
    pub(crate) fn child(&mut self) -> &mut Child {
        &mut self.child
    }

    pub(crate) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        let status = self.child.try_wait()?;
        self.reaped |= status.is_some();
        Ok(status)
    }

    /// Kills the whole group and reaps the leader (waiting at most
    /// [`KILL_GRACE`]).
    pub(crate) fn kill(&mut self) {
        let _ = kill_process_group(self.pgid, Signal::KILL);
        let until = Instant::now() + KILL_GRACE;
        while !self.reaped && Instant::now() < until {
            match self.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) => std::thread::sleep(POLL),
            }
        }
    }
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        self.kill();
        self.register.forget(self.pgid);
    }
}

/// How a [`run_bounded`] command ended.
#[derive(Debug)]
pub(crate) struct Bounded {
    /// `None`: killed, with its group, at the time limit.
    pub(crate) status: Option<ExitStatus>,
    /// The start of its stderr.
    pub(crate) stderr: String,
}

/// Runs `command` with no stdin and no stdout for at most `timeout`, then
/// kills its group. For commands whose answer is their exit status.
pub(crate) fn run_bounded(command: &mut Command, timeout: Duration) -> io::Result<Bounded> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = spawn(command)?;
    let stderr = child.child().stderr.take();
    let (tx, rx) = mpsc::channel();
    if let Some(mut stderr) = stderr {
        // Kept to a head and drained to its end: a chatty command must not
        // block on a full pipe, nor fill memory.
        std::thread::Builder::new()
            .name("child-stderr".into())
            .spawn(move || {
                let mut head = Vec::new();
                let mut chunk = [0u8; 4096];
                while let Ok(n) = stderr.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    let room = STDERR_KEEP.saturating_sub(head.len()).min(n);
                    head.extend_from_slice(&chunk[..room]);
                }
                let _ = tx.send(head);
            })?;
    }
    let deadline = started + timeout;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        let now = Instant::now();
        if now >= deadline {
            break None;
        }
        std::thread::sleep(POLL.min(deadline - now));
    };
    // Kills what the command left running, which closes the pipe.
    drop(child);
    let stderr = rx
        .recv_timeout(Duration::from_millis(200))
        .unwrap_or_default();
    Ok(Bounded {
        status,
        stderr: String::from_utf8_lossy(&stderr).trim().to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alive(pid: i32) -> bool {
        // A zombie has exited; only its parent's wait is missing.
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
        })
    }

    fn wait_gone(pid: i32) -> bool {
        let until = Instant::now() + Duration::from_secs(3);
        while alive(pid) && Instant::now() < until {
            std::thread::sleep(POLL);
        }
        !alive(pid)
    }

    #[test]
    fn a_hung_command_is_killed_with_its_group_at_the_time_limit() {
        let tmp = tempfile::tempdir().unwrap();
        let pids = tmp.path().join("pids");
        let mut command = Command::new("sh");
        command.args([
            "-c",
            &format!(
                "sleep 60 & echo $! > {0}; echo hanging >&2; sleep 60",
                pids.display()
            ),
        ]);
        let started = Instant::now();
        let ended = run_bounded(&mut command, Duration::from_millis(500)).unwrap();
        assert!(ended.status.is_none(), "{ended:?}");
        assert_eq!(ended.stderr, "hanging");
        assert!(started.elapsed() < Duration::from_secs(3));
        let background: i32 = std::fs::read_to_string(&pids)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(wait_gone(background), "the background sleep survived");
    }

    #[test]
    fn a_finished_command_reports_its_status_and_leaves_nothing_behind() {
        let tmp = tempfile::tempdir().unwrap();
        let pids = tmp.path().join("pids");
        let mut command = Command::new("sh");
        command.args([
            "-c",
            &format!(
                "sleep 60 & echo $! > {0}; echo no >&2; exit 3",
                pids.display()
            ),
        ]);
        let ended = run_bounded(&mut command, Duration::from_secs(20)).unwrap();
        assert_eq!(ended.status.and_then(|s| s.code()), Some(3));
        assert_eq!(ended.stderr, "no");
        let background: i32 = std::fs::read_to_string(&pids)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(wait_gone(background), "the background sleep survived");
    }

    #[test]
    fn stopping_kills_every_live_group_and_refuses_new_children() {
        // A register of its own: the agent's is shared by every test here.
        let register: &'static Register = Box::leak(Box::new(Register::new()));
        let mut first = register.spawn(Command::new("sleep").arg("60")).unwrap();
        let pid = i32::try_from(first.child().id()).unwrap();
        assert_eq!(register.stop_all(), 1);
        assert!(register.stopping());
        let until = Instant::now() + Duration::from_secs(3);
        while first.try_wait().unwrap().is_none() && Instant::now() < until {
            std::thread::sleep(POLL);
        }
        assert!(first.reaped, "still running after stop_all");
        drop(first);
        assert!(!alive(pid));
        let refused = register.spawn(Command::new("true").arg("x")).err().unwrap();
        assert!(refused.to_string().contains("stopping"), "{refused}");
        assert!(register.state().groups.is_empty());
    }
}
