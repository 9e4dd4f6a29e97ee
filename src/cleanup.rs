//! Self-removal: once the reporter is no longer needed it deletes the
//! credentials the discovery agent left, its own state, and disables its unit
//! so it never runs again.
//!
//! Only files of the documented contract are removed, never whole trees: a
//! misconfigured `--config-dir /etc` must not become `rm -rf /etc`.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::config::files;
use crate::ledger::LEDGER_FILE;

pub const UNIT_NAME: &str = "assisted-boot-reporter.service";

#[derive(Debug, Clone)]
pub struct CleanupPlan {
    pub config_dir: PathBuf,
    pub state_dir: PathBuf,
    /// Sysroot given to `systemctl --root` when not `/`.
    pub root: PathBuf,
}

#[derive(Debug, Default)]
pub struct CleanupReport {
    pub removed: Vec<PathBuf>,
    pub failures: Vec<String>,
    pub unit_disabled: bool,
}

impl CleanupPlan {
    /// Removes everything it can and reports what it did; one failure does not
    /// stop the rest (the secret goes first, the unit is disabled last).
    pub fn execute(&self) -> CleanupReport {
        let mut report = CleanupReport::default();
        for name in files::ALL {
            remove_file(&self.config_dir.join(name), &mut report);
        }
        remove_dir_if_empty(&self.config_dir, &mut report);
        for name in [
            LEDGER_FILE.to_owned(),
            format!("{LEDGER_FILE}.corrupt"),
            format!(".{LEDGER_FILE}.tmp"),
        ] {
            remove_file(&self.state_dir.join(name), &mut report);
        }
        remove_dir_if_empty(&self.state_dir, &mut report);
        self.disable_unit(&mut report);
        report
    }

    fn disable_unit(&self, report: &mut CleanupReport) {
        let mut command = Command::new("systemctl");
        if self.root != Path::new("/") {
            command.arg(format!("--root={}", self.root.display()));
        }
        command.args(["disable", UNIT_NAME]);
        match command.output() {
            Ok(output) if output.status.success() => {
                tracing::info!("disabled {UNIT_NAME}");
                report.unit_disabled = true;
            }
            Ok(output) => report.failures.push(format!(
                "systemctl disable {UNIT_NAME} failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            )),
            Err(err) => report
                .failures
                .push(format!("running systemctl disable {UNIT_NAME}: {err}")),
        }
    }
}

fn remove_file(path: &Path, report: &mut CleanupReport) {
    match fs::remove_file(path) {
        Ok(()) => {
            tracing::info!("removed {}", path.display());
            report.removed.push(path.to_owned());
        }
        Err(err) if err.kind() == ErrorKind::NotFound => {}
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

#[cfg(test)]
mod tests {
    use super::*;

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
        };
        let report = plan.execute();
        assert!(!config_dir.exists());
        assert!(!state_dir.join(LEDGER_FILE).exists());
        assert!(
            state_dir.join("someone-elses-file").exists(),
            "foreign files are never removed"
        );
        assert_eq!(report.removed.len(), 6, "{:?}", report.removed);
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
