//! The boot ledger: which boots from disk this host has had, kept in the state
//! directory. It tells the first boot (pointer ignition) from later ones even
//! when the service's stage cannot (the installer may have moved it already).
//!
//! Writes are atomic (temp file in the same directory, fsync, rename, fsync of
//! the directory) so a power cut or SIGKILL leaves either the old or the new
//! ledger, never a torn one.

use std::fs::{self, File};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

pub const LEDGER_FILE: &str = "ledger.json";
const FORMAT_VERSION: u32 = 1;
/// Boot numbers past 2 behave like 2, so old entries are dropped beyond this
/// (the first is always kept: it is what makes later boots "later").
const MAX_BOOTS: usize = 16;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    pub version: u32,
    pub boots: Vec<BootRecord>,
    /// How many boots were dropped to keep the ledger bounded.
    #[serde(default)]
    pub dropped: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BootRecord {
    pub boot_id: String,
    /// Wall-clock time the reporter first ran in this boot (RFC 3339), for people.
    pub first_seen: String,
    /// Seconds since boot at that moment: the timeout is measured from it, so a
    /// restarted reporter does not get a fresh hour, and clock steps by NTP
    /// during boot do not matter.
    pub first_seen_uptime_secs: f64,
    /// The stage this boot reported, once it did.
    #[serde(default)]
    pub reported_stage: Option<String>,
}

impl Default for Ledger {
    fn default() -> Self {
        Self {
            version: FORMAT_VERSION,
            boots: Vec::new(),
            dropped: 0,
        }
    }
}

impl Ledger {
    /// Loads the ledger; a missing file is an empty ledger. A corrupt one is
    /// moved aside (kept for support) and replaced by an empty ledger: the
    /// stage decision never moves backwards, so the worst outcome is a skipped
    /// stage, never a failed install.
    pub fn load(state_dir: &Path) -> anyhow::Result<(Ledger, Option<String>)> {
        let path = state_dir.join(LEDGER_FILE);
        let text = match fs::read(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == ErrorKind::NotFound => return Ok((Ledger::default(), None)),
            Err(err) => return Err(err).with_context(|| format!("reading {}", path.display())),
        };
        match serde_json::from_slice::<Ledger>(&text) {
            Ok(ledger) if ledger.version == FORMAT_VERSION => Ok((ledger, None)),
            Ok(ledger) => Ok((
                Ledger::default(),
                Some(format!(
                    "ledger {} has unknown version {}; starting afresh",
                    path.display(),
                    ledger.version
                )),
            )),
            Err(err) => {
                let aside = state_dir.join(format!("{LEDGER_FILE}.corrupt"));
                let moved = fs::rename(&path, &aside).is_ok();
                Ok((
                    Ledger::default(),
                    Some(format!(
                        "ledger {} is corrupt ({err}); {}starting afresh",
                        path.display(),
                        if moved {
                            format!("kept it as {}, ", aside.display())
                        } else {
                            String::new()
                        }
                    )),
                ))
            }
        }
    }

    /// Records `boot_id` if new and returns its boot number (1 = first boot
    /// from disk seen by the reporter) and its record.
    pub fn observe(
        &mut self,
        boot_id: &str,
        now_rfc3339: String,
        uptime_secs: f64,
    ) -> (u32, &BootRecord) {
        let index = if let Some(index) = self.boots.iter().position(|b| b.boot_id == boot_id) {
            index
        } else {
            self.boots.push(BootRecord {
                boot_id: boot_id.to_owned(),
                first_seen: now_rfc3339,
                first_seen_uptime_secs: uptime_secs,
                reported_stage: None,
            });
            if self.boots.len() > MAX_BOOTS {
                self.boots.remove(1);
                self.dropped += 1;
            }
            self.boots.len() - 1
        };
        let number = u32::try_from(index).unwrap_or(u32::MAX - 1) + 1 + self.dropped;
        (number, &self.boots[index])
    }

    pub fn record_stage(&mut self, boot_id: &str, stage: &str) {
        if let Some(boot) = self.boots.iter_mut().find(|b| b.boot_id == boot_id) {
            boot.reported_stage = Some(stage.to_owned());
        }
    }

    /// Atomically replaces the ledger file.
    pub fn save(&self, state_dir: &Path) -> anyhow::Result<()> {
        fs::create_dir_all(state_dir)
            .with_context(|| format!("creating {}", state_dir.display()))?;
        let data = serde_json::to_vec_pretty(self).context("serializing the ledger")?;
        write_atomic(&state_dir.join(LEDGER_FILE), &data)
    }
}

/// Temp file in the same directory, fsync, rename, fsync the directory.
pub fn write_atomic(path: &Path, data: &[u8]) -> anyhow::Result<()> {
    let dir = path.parent().context("path has no parent directory")?;
    let tmp: PathBuf = dir.join(format!(
        ".{}.tmp",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    let result = (|| {
        let mut file = File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        file.write_all(data)
            .with_context(|| format!("writing {}", tmp.display()))?;
        file.sync_all()
            .with_context(|| format!("syncing {}", tmp.display()))?;
        fs::rename(&tmp, path)
            .with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))?;
        File::open(dir)
            .and_then(|d| d.sync_all())
            .with_context(|| format!("syncing directory {}", dir.display()))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// The kernel's ID of the running boot, under the sysroot.
pub fn read_boot_id(path: &Path) -> anyhow::Result<String> {
    let text =
        fs::read_to_string(path).with_context(|| format!("reading boot ID {}", path.display()))?;
    let id = text.trim();
    anyhow::ensure!(
        !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-'),
        "boot ID in {} is not a UUID",
        path.display()
    );
    Ok(id.to_owned())
}

/// Seconds since boot (CLOCK_BOOTTIME as the kernel reports it).
pub fn read_uptime(path: &Path) -> anyhow::Result<f64> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.split_whitespace()
        .next()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
        .with_context(|| format!("parsing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boots_are_numbered_in_order_and_survive_a_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let (mut ledger, warning) = Ledger::load(dir.path()).unwrap();
        assert!(warning.is_none());
        assert_eq!(ledger.observe("aaaa", "t1".into(), 10.0).0, 1);
        assert_eq!(ledger.observe("aaaa", "t1b".into(), 99.0).0, 1);
        assert_eq!(ledger.observe("bbbb", "t2".into(), 5.0).0, 2);
        ledger.record_stage("bbbb", "Booted with control plane ignition");
        ledger.save(dir.path()).unwrap();
        let (loaded, _) = Ledger::load(dir.path()).unwrap();
        assert_eq!(loaded, ledger);
        assert!(
            (loaded.boots[0].first_seen_uptime_secs - 10.0).abs() < f64::EPSILON,
            "first sighting is kept"
        );
        let leftovers: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            leftovers,
            vec![std::ffi::OsString::from(LEDGER_FILE)],
            "no temp file left"
        );
    }

    #[test]
    fn ledger_stays_bounded_and_numbers_keep_growing() {
        let mut ledger = Ledger::default();
        for i in 0..40 {
            let (n, _) = ledger.observe(&format!("{i:04x}"), String::new(), 0.0);
            assert_eq!(n, i + 1);
        }
        assert_eq!(ledger.boots.len(), MAX_BOOTS);
        assert_eq!(ledger.boots[0].boot_id, "0000");
        assert_eq!(ledger.observe("0027", String::new(), 0.0).0, 40);
    }

    #[test]
    fn corrupt_ledger_is_kept_aside_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(LEDGER_FILE), b"{\"version\":1,\"boots\":[{").unwrap();
        let (ledger, warning) = Ledger::load(dir.path()).unwrap();
        assert!(ledger.boots.is_empty());
        assert!(warning.unwrap().contains("corrupt"));
        assert!(dir.path().join("ledger.json.corrupt").exists());
    }

    #[test]
    fn boot_id_and_uptime_are_validated() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("boot_id");
        fs::write(&p, "3f0c9a4e-4b8e-4d5c-9a0b-1c2d3e4f5a6b\n").unwrap();
        assert_eq!(
            read_boot_id(&p).unwrap(),
            "3f0c9a4e-4b8e-4d5c-9a0b-1c2d3e4f5a6b"
        );
        fs::write(&p, "../../etc/passwd").unwrap();
        assert!(read_boot_id(&p).is_err());
        fs::write(&p, "1234.56 789.00\n").unwrap();
        assert!((read_uptime(&p).unwrap() - 1234.56).abs() < 1e-9);
        fs::write(&p, "NaN 1\n").unwrap();
        assert!(read_uptime(&p).is_err());
    }
}
