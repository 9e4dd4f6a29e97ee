//! Self-removal: once the reporter is no longer needed it deletes the
//! credentials the discovery agent left, its own state, and disables its unit
//! so it never runs again.
//!
//! Only files of the documented contract are removed, never whole trees: a
//! misconfigured `--config-dir /etc` must not become `rm -rf /etc`.
//!
//! Cleanup can be cut short (SIGKILL, power loss) anywhere. It starts by
//! leaving a marker in the state directory and removes it at the very end,
//! so a start that finds it finishes the job instead of running
//! half-configured. The secret goes first and `host-id`, the unit's
//! `ConditionPathExists=`, goes after the unit is disabled: while a cleanup
//! can still be resumed, systemd still starts the reporter (it restarts a
//! killed one), and once nothing can resume it only the marker and empty
//! directories can be left.
//!
//! `systemctl disable` runs with a time limit and is killed with its process
//! group at it ([`crate::child`]); a hung one costs the unit's disabling, not
//! the agent's exit (without `host-id` the unit does not start again anyway).
//! When the agent is stopped meanwhile, the cleanup stops there and leaves
//! `host-id` and its marker: the next start finishes it, `disable` included.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::contract::files;
use crate::ledger::{write_atomic, LEDGER_FILE};

pub(crate) const UNIT_NAME: &str = "assisted-boot-reporter.service";
/// In the state directory while a cleanup is under way.
pub const CLEANUP_MARKER: &str = "cleanup-started";

#[derive(Debug, Clone)]
pub(crate) struct CleanupPlan {
    pub(crate) config_dir: PathBuf,
    pub(crate) state_dir: PathBuf,
    /// Sysroot given to `systemctl --root` when not `/`.
    pub(crate) root: PathBuf,
    /// Longest `systemctl disable` may run before it is killed.
    pub(crate) systemctl_timeout: Duration,
}

#[derive(Debug, Default)]
pub(crate) struct CleanupReport {
    pub(crate) removed: Vec<PathBuf>,
    pub(crate) failures: Vec<String>,
    pub(crate) unit_disabled: bool,
    /// The agent was stopped before the unit was disabled: the rest is left
    /// to the next start.
    pub(crate) stopped: bool,
}

impl CleanupPlan {
    /// Removes everything it can and reports what it did; one failure does not
    /// stop the rest (the secret goes first, the unit is disabled last).
    pub(crate) fn execute(&self) -> CleanupReport {
        let mut report = CleanupReport::default();
        if !cleanup_interrupted(&self.state_dir) {
            let marker = self.state_dir.join(CLEANUP_MARKER);
            let text = format!(
                "cleanup started at {}\n",
                humantime::format_rfc3339_seconds(std::time::SystemTime::now())
            );
            if let Err(err) = write_atomic(&marker, text.as_bytes()) {
                // Without it an interrupted cleanup is finished on the next
                // boot instead (the ledger says "second boot"): worth a line.
                report.failures.push(format!("{err:#}"));
            }
        }
        // The secret first; `host-id` (the unit's start condition) after
        // everything else, below.
        let (last, first) = files::REMOVAL_ORDER
            .split_last()
            .expect("the contract has files");
        for name in first {
            remove_file(&self.config_dir.join(name), &mut report);
        }
        for name in [
            LEDGER_FILE.to_owned(),
            format!("{LEDGER_FILE}.corrupt"),
            format!(".{LEDGER_FILE}.tmp"),
            format!(".{CLEANUP_MARKER}.tmp"),
        ] {
            remove_file(&self.state_dir.join(name), &mut report);
        }
        self.disable_unit(&mut report);
        if crate::child::stopping() && !report.unit_disabled {
            report.stopped = true;
            return report;
        }
        // Until here a cut-short cleanup is resumed by the next start (the
        // unit restarts a killed reporter while `host-id` exists). After
        // `host-id` goes nothing starts the reporter again: what can remain
        // is the marker and two empty directories, never a secret.
        remove_file(&self.config_dir.join(last), &mut report);
        remove_dir_if_empty(&self.config_dir, &mut report);
        remove_file(&self.state_dir.join(CLEANUP_MARKER), &mut report);
        remove_dir_if_empty(&self.state_dir, &mut report);
        report
    }

    fn disable_unit(&self, report: &mut CleanupReport) {
        let mut command = Command::new("systemctl");
        if self.root != Path::new("/") {
            command.arg(format!("--root={}", self.root.display()));
        }
        command.args(["disable", UNIT_NAME]);
        match crate::child::run_bounded(&mut command, self.systemctl_timeout) {
            Ok(ended) => match ended.status {
                Some(status) if status.success() => {
                    tracing::info!("disabled {UNIT_NAME}");
                    report.unit_disabled = true;
                }
                Some(_) if crate::child::stopping() => report.failures.push(format!(
                    "systemctl disable {UNIT_NAME} killed: the agent is stopping"
                )),
                Some(status) if ended.stderr.is_empty() => report
                    .failures
                    .push(format!("systemctl disable {UNIT_NAME} failed ({status})")),
                Some(status) => report.failures.push(format!(
                    "systemctl disable {UNIT_NAME} failed ({status}): {}",
                    ended.stderr
                )),
                None => report.failures.push(format!(
                    "systemctl disable {UNIT_NAME} did not finish within {}: killed with its process group",
                    humantime::format_duration(self.systemctl_timeout)
                )),
            },
            Err(err) => report
                .failures
                .push(format!("running systemctl disable {UNIT_NAME}: {err}")),
        }
    }
}

/// Whether an earlier cleanup was cut short: the next start finishes it.
pub(crate) fn cleanup_interrupted(state_dir: &Path) -> bool {
    state_dir.join(CLEANUP_MARKER).is_file()
}

fn remove_file(path: &Path, report: &mut CleanupReport) {
    match fs::remove_file(path) {
        Ok(()) => {
            tracing::info!("removed {}", path.display());
            report.removed.push(path.to_owned());
        }
        Err(err) if err.kind() == ErrorKind::NotFound => {}
        // A read-only filesystem refuses the unlink (EROFS) before it looks
        // the name up: a file that is not there is no failure to report.
        Err(_)
            if path
                .symlink_metadata()
                .is_err_and(|e| e.kind() == ErrorKind::NotFound) => {}
        Err(err) => report
            .failures
            .push(format!("removing {}: {err}", path.display())),
    }
}

fn remove_dir_if_empty(path: &Path, report: &mut CleanupReport) {
    match fs::remove_dir(path) {
        Ok(()) => {
            tracing::info!("removed {}", path.display());
            report.removed.push(path.to_owned());
        }
        Err(err) if err.kind() == ErrorKind::NotFound => {}
        // Under the unit's sandbox the directory is a mount point on a
        // read-only parent: emptied is all the agent can do, and the unit's
        // ExecStopPost removes it from PID 1's namespace once empty.
        Err(err)
            if is_empty_dir(path)
                && matches!(
                    err.kind(),
                    ErrorKind::ReadOnlyFilesystem | ErrorKind::ResourceBusy
                ) =>
        {
            tracing::info!(
                "emptied {} ({err}); the unit removes the directory when it stops",
                path.display()
            );
        }
        Err(err) => {
            let left: Vec<String> = fs::read_dir(path)
                .map(|entries| {
                    entries
                        .filter_map(Result::ok)
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            report.failures.push(format!(
                "leaving {} in place ({err}); it still holds {left:?}",
                path.display()
            ));
        }
    }
}

fn is_empty_dir(path: &Path) -> bool {
    fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interrupted_cleanup_is_seen_and_finished() {
        let tmp = tempfile::tempdir().unwrap();
        let config_dir = tmp.path().join("etc/assisted-boot-reporter");
        let state_dir = tmp.path().join("var/lib/assisted-boot-reporter");
        fs::create_dir_all(&config_dir).unwrap();
        fs::create_dir_all(&state_dir).unwrap();
        // Cut short after the secret: the marker and the rest remain.
        fs::write(state_dir.join(CLEANUP_MARKER), "cleanup started\n").unwrap();
        fs::write(config_dir.join(files::HOST_ID), "x").unwrap();
        fs::write(state_dir.join(LEDGER_FILE), "{}").unwrap();
        assert!(cleanup_interrupted(&state_dir));

        let plan = CleanupPlan {
            config_dir: config_dir.clone(),
            state_dir: state_dir.clone(),
            root: tmp.path().to_owned(),
            systemctl_timeout: Duration::from_secs(10),
        };
        let report = plan.execute();
        assert!(!config_dir.exists(), "{report:?}");
        assert!(!state_dir.exists(), "{report:?}");
        assert!(!cleanup_interrupted(&state_dir));
    }

    #[test]
    fn removes_contract_files_and_state_but_nothing_else() {
        let tmp = tempfile::tempdir().unwrap();
        let config_dir = tmp.path().join("etc/assisted-boot-reporter");
        let state_dir = tmp.path().join("var/lib/assisted-boot-reporter");
        fs::create_dir_all(&config_dir).unwrap();
        fs::create_dir_all(&state_dir).unwrap();
        for name in [
            files::PULL_SECRET,
            files::SERVICE_URL,
            files::HOST_ID,
            files::INFRA_ENV_ID,
        ] {
            fs::write(config_dir.join(name), "x").unwrap();
        }
        fs::write(state_dir.join(LEDGER_FILE), "{}").unwrap();
        fs::write(state_dir.join("someone-elses-file"), "keep me").unwrap();
        let plan = CleanupPlan {
            config_dir: config_dir.clone(),
            state_dir: state_dir.clone(),
            // A root that is not "/" so no real systemctl touches this machine.
            root: tmp.path().to_owned(),
            systemctl_timeout: Duration::from_secs(10),
        };
        let report = plan.execute();
        assert!(!config_dir.exists());
        assert!(!state_dir.join(LEDGER_FILE).exists());
        assert!(
            state_dir.join("someone-elses-file").exists(),
            "foreign files are never removed"
        );
        assert_eq!(report.removed.len(), 7, "{:?}", report.removed);
        assert!(
            report
                .failures
                .iter()
                .any(|f| f.contains("someone-elses-file")),
            "{:?}",
            report.failures
        );
    }
}
