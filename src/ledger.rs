//! The boot ledger: which boots from disk this host has had, kept in the state
//! directory. It tells the first boot (pointer ignition) from later ones even
//! when the service's stage cannot (the installer may have moved it already),
//! holds the reporter's first start so its one time budget spans every boot
//! and restart, and counts the progress updates each boot sent.
//!
//! Writes are atomic (temp file in the same directory, fsync, rename, fsync of
//! the directory) so a power cut or SIGKILL leaves either the old or the new
//! ledger, never a torn one.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::bounded_read::{self, Kind};

pub const LEDGER_FILE: &str = "ledger.json";
const FORMAT_VERSION: u32 = 1;
/// Boot numbers past 2 behave like 2, so old entries are dropped beyond this
/// (the first is always kept: it is what makes later boots "later"). Boot
/// numbers saturate at `u32::MAX`: the count of dropped boots and the
/// number never wrap back to a "first" boot.
pub const MAX_BOOTS: usize = 16;
/// The range of every number of seconds in a ledger (times since the epoch,
/// uptimes, spent budget): 0 to about 3,000 years. A value outside it (or
/// not finite) was written by no reporter; the ledger is distrusted as
/// corrupt rather than turned into a `Duration`, which would panic.
pub const MAX_SECS: f64 = 1e11;
/// Wall-clock distances beyond this between the first start and a later boot
/// are taken for a clock step (an RTC far off before NTP, a host powered off
/// for weeks), not for time the budget spent: the time the reporter itself
/// saw pass counts instead. A week is longer than any installation waits.
pub(crate) const MAX_PLAUSIBLE_WALL_GAP: Duration = Duration::from_secs(7 * 24 * 3600);

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    pub(crate) version: u32,
    pub boots: Vec<BootRecord>,
    /// How many boots were dropped to keep the ledger bounded.
    #[serde(default)]
    pub dropped: u32,
    /// Wall clock (seconds since the epoch) of the reporter's first start on
    /// this host: the time budget runs from here, across boots.
    #[serde(default)]
    pub first_start_unix: Option<f64>,
    /// The most budget any run is known to have spent (a floor that survives
    /// a wall clock stepping backwards).
    #[serde(default)]
    pub spent_checkpoint_secs: f64,
    /// The service answered 400 to the new boot stages: later boots and
    /// restarts go straight to the `progress_info` fallback.
    #[serde(default)]
    pub(crate) new_stages_refused: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BootRecord {
    pub boot_id: String,
    /// Wall-clock time the reporter first ran in this boot (RFC 3339), for people.
    pub(crate) first_seen: String,
    /// Seconds since boot at that moment: the timeout is measured from it, so a
    /// restarted reporter does not get a fresh hour, and clock steps by NTP
    /// during boot do not matter.
    pub first_seen_uptime_secs: f64,
    /// The stage this boot reported, once it did.
    #[serde(default)]
    pub reported_stage: Option<String>,
    /// Budget already spent when the reporter first ran in this boot.
    #[serde(default)]
    pub spent_at_first_seen_secs: Option<f64>,
    /// Progress updates sent in this boot, by every run of the reporter.
    #[serde(default)]
    pub(crate) progress_puts: u32,
}

impl Default for Ledger {
    fn default() -> Self {
        Self {
            version: FORMAT_VERSION,
            boots: Vec::new(),
            dropped: 0,
            first_start_unix: None,
            spent_checkpoint_secs: 0.0,
            new_stages_refused: false,
        }
    }
}

impl Ledger {
    /// Loads the ledger; a missing file is an empty ledger. A corrupt one
    /// (not JSON of the ledger's shape, an impossible value, or no ledger at
    /// all: a FIFO, a device, over its size cap) is moved aside (kept for
    /// support) and replaced by an empty ledger: the stage decision never
    /// moves backwards, so the worst outcome is a skipped stage, never a
    /// failed install. Only a disk that fails to answer is an error.
    pub fn load(state_dir: &Path) -> anyhow::Result<(Ledger, Option<String>)> {
        let path = state_dir.join(LEDGER_FILE);
        let corrupt = |why: String| {
            let aside = state_dir.join(format!("{LEDGER_FILE}.corrupt"));
            let moved = fs::rename(&path, &aside).is_ok();
            (
                Ledger::default(),
                Some(format!(
                    "ledger {} is corrupt ({why}); {}starting afresh",
                    path.display(),
                    if moved {
                        format!("kept it as {}, ", aside.display())
                    } else {
                        String::new()
                    }
                )),
            )
        };
        let bytes = match bounded_read::read(&path, Kind::Ledger) {
            Ok(Some(contents)) => contents.bytes,
            Ok(None) => return Ok((Ledger::default(), None)),
            Err(err) if err.is_bad_content() => return Ok(corrupt(err.to_string())),
            Err(err) => return Err(err.into()),
        };
        match Ledger::parse(&bytes) {
            Ok(ledger) => Ok((ledger, None)),
            Err(LedgerError::Version(version)) => Ok((
                Ledger::default(),
                Some(format!(
                    "ledger {} has unknown version {version}; starting afresh",
                    path.display(),
                )),
            )),
            Err(err) => Ok(corrupt(err.to_string())),
        }
    }

    /// A ledger from its bytes, every value range-checked (the fuzz
    /// target's way in).
    pub fn parse(bytes: &[u8]) -> Result<Ledger, LedgerError> {
        let ledger: Ledger = serde_json::from_slice(bytes).map_err(LedgerError::Json)?;
        if ledger.version != FORMAT_VERSION {
            return Err(LedgerError::Version(ledger.version));
        }
        ledger.check().map_err(LedgerError::Impossible)?;
        Ok(ledger)
    }

    /// Every value a run computes with is one a reporter could have
    /// written; the first that is not, named.
    pub fn check(&self) -> Result<(), String> {
        fn secs(name: &str, value: f64) -> Result<(), String> {
            if value.is_finite() && (0.0..=MAX_SECS).contains(&value) {
                Ok(())
            } else {
                Err(format!("{name} = {value:e}"))
            }
        }
        if let Some(first) = self.first_start_unix {
            secs("first_start_unix", first)?;
        }
        secs("spent_checkpoint_secs", self.spent_checkpoint_secs)?;
        if self.boots.len() > MAX_BOOTS {
            return Err(format!(
                "{} boots, more than the {MAX_BOOTS} a ledger keeps",
                self.boots.len()
            ));
        }
        for boot in &self.boots {
            if !is_boot_id(&boot.boot_id) {
                return Err("a boot_id that is not a boot ID".into());
            }
            secs("first_seen_uptime_secs", boot.first_seen_uptime_secs)?;
            if let Some(spent) = boot.spent_at_first_seen_secs {
                secs("spent_at_first_seen_secs", spent)?;
            }
        }
        Ok(())
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
                spent_at_first_seen_secs: None,
                progress_puts: 0,
            });
            if self.boots.len() > MAX_BOOTS {
                self.boots.remove(1);
                self.dropped = self.dropped.saturating_add(1);
            }
            self.boots.len() - 1
        };
        // Saturates: a wrapped number would make a later boot look like the
        // first and report a stage backwards.
        let number = u32::try_from(index)
            .unwrap_or(u32::MAX)
            .saturating_add(1)
            .saturating_add(self.dropped);
        (number, &self.boots[index])
    }

    /// How much of the time budget is spent as this run starts, for boot
    /// `boot_id` (already observed). `now` is the wall clock, `uptime` the
    /// live kernel's seconds since boot. Within a boot the kernel's clock
    /// counts (immune to clock steps); across boots the wall clock since the
    /// first start, unless it moved absurdly (backwards, or more than
    /// [`MAX_PLAUSIBLE_WALL_GAP`]), where only the time the reporter saw pass
    /// counts. A reboot never gives time back. Returns a warning for the log
    /// when the wall clock was distrusted.
    pub fn budget_spent(
        &mut self,
        boot_id: &str,
        now: SystemTime,
        uptime: Option<f64>,
    ) -> (Duration, Option<String>) {
        let now_unix = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let first = *self.first_start_unix.get_or_insert_with(|| {
            // Ledgers written before the budget spanned boots: their first
            // boot's sighting is the first start.
            self.boots
                .first()
                .and_then(|b| humantime::parse_rfc3339(&b.first_seen).ok())
                .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
                .map(|d| d.as_secs_f64())
                // `first_seen` is stored to the second: a boot seen in this
                // very run would lose up to a second of the budget to it.
                .filter(|seen| now_unix - seen >= 1.0)
                .unwrap_or(now_unix)
        });
        let floor = clamp_secs(self.spent_checkpoint_secs);
        let mut warning = None;
        let Some(boot) = self.boots.iter_mut().find(|b| b.boot_id == boot_id) else {
            return (Duration::from_secs_f64(floor), None);
        };
        let spent = if let Some(at_first_seen) = boot.spent_at_first_seen_secs {
            // A restart within the boot: the kernel's clock since then.
            let since = uptime.map_or(0.0, |u| (u - boot.first_seen_uptime_secs).max(0.0));
            (at_first_seen + since).max(floor)
        } else {
            let wall = now_unix - first;
            let spent = if (0.0..=MAX_PLAUSIBLE_WALL_GAP.as_secs_f64()).contains(&wall) {
                wall.max(floor)
            } else {
                warning = Some(format!(
                    "the wall clock says {} since the reporter first started on this host; \
                     not trusting it, counting the {} the reporter saw pass",
                    describe_secs(wall),
                    describe_secs(floor)
                ));
                floor
            };
            boot.spent_at_first_seen_secs = Some(spent);
            spent
        };
        (Duration::from_secs_f64(clamp_secs(spent)), warning)
    }

    /// Raises the floor of spent budget (never lowers it).
    pub fn checkpoint_spent(&mut self, spent: Duration) {
        self.spent_checkpoint_secs = self.spent_checkpoint_secs.max(spent.as_secs_f64());
    }

    /// Progress updates boot `boot_id` has sent so far.
    pub(crate) fn progress_puts(&self, boot_id: &str) -> u32 {
        self.boots
            .iter()
            .find(|b| b.boot_id == boot_id)
            .map_or(0, |b| b.progress_puts)
    }

    /// Counts one progress update of boot `boot_id`.
    pub(crate) fn count_progress_put(&mut self, boot_id: &str) {
        if let Some(boot) = self.boots.iter_mut().find(|b| b.boot_id == boot_id) {
            boot.progress_puts = boot.progress_puts.saturating_add(1);
        }
    }

    /// The stage boot `boot_id` reported, if it did.
    pub(crate) fn reported_stage(&self, boot_id: &str) -> Option<&str> {
        self.boots
            .iter()
            .find(|b| b.boot_id == boot_id)
            .and_then(|b| b.reported_stage.as_deref())
    }

    pub(crate) fn record_stage(&mut self, boot_id: &str, stage: &str) {
        if let Some(boot) = self.boots.iter_mut().find(|b| b.boot_id == boot_id) {
            boot.reported_stage = Some(stage.to_owned());
        }
    }

    /// Atomically replaces the ledger file.
    pub(crate) fn save(&self, state_dir: &Path) -> anyhow::Result<()> {
        fs::create_dir_all(state_dir)
            .with_context(|| format!("creating {}", state_dir.display()))?;
        let data = serde_json::to_vec_pretty(self).context("serializing the ledger")?;
        write_atomic(&state_dir.join(LEDGER_FILE), &data)
    }
}

/// `secs` inside the range a `Duration` is made from. [`Ledger::check`]
/// refuses ledgers outside it; this keeps a ledger built in memory (or a
/// sum of checked values) from ever panicking either.
fn clamp_secs(secs: f64) -> f64 {
    if secs.is_nan() {
        0.0
    } else {
        secs.clamp(0.0, MAX_SECS)
    }
}

/// Why a ledger's bytes are not a ledger this reporter can use.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("{0}")]
    Json(serde_json::Error),
    #[error("unknown version {0}")]
    Version(u32),
    #[error("an impossible value: {0}")]
    Impossible(String),
}

fn describe_secs(secs: f64) -> String {
    let sign = if secs < 0.0 { "-" } else { "" };
    format!(
        "{sign}{}",
        humantime::format_duration(Duration::from_secs_f64(secs.abs().min(1e12).floor()))
    )
}

/// Temp file in the same directory, fsync, rename, fsync the directory.
/// By hand rather than `tempfile`'s `persist`: a fixed temp name (safe under
/// the instance lock) means a crash leaves at most one leftover, overwritten
/// next time, and the directory is synced too.
pub(crate) fn write_atomic(path: &Path, data: &[u8]) -> anyhow::Result<()> {
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
pub(crate) fn read_boot_id(path: &Path) -> anyhow::Result<String> {
    let text = bounded_read::read_text(path, Kind::Value)?
        .with_context(|| format!("boot ID {} does not exist", path.display()))?;
    let id = text.text.trim();
    anyhow::ensure!(
        is_boot_id(id),
        "boot ID in {} is not a UUID",
        path.display()
    );
    Ok(id.to_owned())
}

/// The shape of a kernel boot ID (a UUID; any hex and dashes up to 64).
fn is_boot_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

/// Seconds since boot (CLOCK_BOOTTIME as the kernel reports it).
pub(crate) fn read_uptime(path: &Path) -> anyhow::Result<f64> {
    let text = bounded_read::read_text(path, Kind::Value)?
        .with_context(|| format!("{} does not exist", path.display()))?;
    text.text
        .split_whitespace()
        .next()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|v| v.is_finite() && (0.0..=MAX_SECS).contains(v))
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

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + secs)
    }

    #[test]
    fn the_budget_runs_from_the_first_start_across_boots_and_restarts() {
        let mut ledger = Ledger::default();
        ledger.observe("boot1", String::new(), 100.0);
        let (spent, w) = ledger.budget_spent("boot1", at(0), Some(100.0));
        assert_eq!((spent, w), (Duration::ZERO, None));
        // A restart 600 s later in the same boot (kernel clock).
        let (spent, _) = ledger.budget_spent("boot1", at(9999), Some(700.0));
        assert_eq!(spent.as_secs(), 600);
        ledger.checkpoint_spent(spent);
        // The next boot, 1200 s after the first start (wall clock).
        ledger.observe("boot2", String::new(), 20.0);
        let (spent, w) = ledger.budget_spent("boot2", at(1200), Some(20.0));
        assert_eq!((spent.as_secs(), w), (1200, None));
        // Restarted later in boot 2: measured from boot 2's first sighting.
        let (spent, _) = ledger.budget_spent("boot2", at(0), Some(320.0));
        assert_eq!(spent.as_secs(), 1500);
    }

    #[test]
    fn an_absurd_clock_step_falls_back_to_the_time_seen_and_never_gives_time_back() {
        let mut ledger = Ledger::default();
        ledger.observe("boot1", String::new(), 0.0);
        ledger.budget_spent("boot1", at(0), Some(0.0));
        ledger.checkpoint_spent(Duration::from_secs(900));
        // Clock went backwards across the reboot.
        ledger.observe("boot2", String::new(), 0.0);
        let (spent, w) = ledger.budget_spent("boot2", at(0) - Duration::from_secs(3600), Some(0.0));
        assert_eq!(spent.as_secs(), 900);
        assert!(w.unwrap().contains("not trusting"));
        // Clock jumped a year ahead.
        ledger.observe("boot3", String::new(), 0.0);
        let (spent, w) = ledger.budget_spent("boot3", at(365 * 24 * 3600), Some(0.0));
        assert_eq!(spent.as_secs(), 900);
        assert!(w.is_some());
    }

    #[test]
    fn impossible_values_are_distrusted_and_boot_numbers_saturate() {
        let boot = r#""boot_id":"3f0c9a4e-4b8e-4d5c-9a0b-1c2d3e4f5a6b","first_seen":"t""#;
        let many = vec![format!(r#"{{{boot},"first_seen_uptime_secs":1}}"#); MAX_BOOTS + 1];
        for bad in [
            r#"{"version":1,"boots":[],"spent_checkpoint_secs":1e300}"#.to_owned(),
            r#"{"version":1,"boots":[],"first_start_unix":-1}"#.to_owned(),
            format!(r#"{{"version":1,"boots":[{{{boot},"first_seen_uptime_secs":-1e300}}]}}"#),
            format!(
                r#"{{"version":1,"boots":[{{{boot},"first_seen_uptime_secs":1,"spent_at_first_seen_secs":1e12}}]}}"#
            ),
            r#"{"version":1,"boots":[{"boot_id":"../x","first_seen":"t","first_seen_uptime_secs":1}]}"#
                .to_owned(),
            format!(r#"{{"version":1,"boots":[{}]}}"#, many.join(",")),
        ] {
            assert!(
                matches!(Ledger::parse(bad.as_bytes()), Err(LedgerError::Impossible(_))),
                "{bad}"
            );
        }
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join(LEDGER_FILE),
            r#"{"version":1,"boots":[],"spent_checkpoint_secs":1e300}"#,
        )
        .unwrap();
        let (ledger, warning) = Ledger::load(dir.path()).unwrap();
        assert_eq!(ledger, Ledger::default());
        assert!(warning.unwrap().contains("spent_checkpoint_secs = 1e300"));

        let mut ledger = Ledger {
            dropped: u32::MAX - 1,
            ..Ledger::default()
        };
        for i in 0..=MAX_BOOTS + 2 {
            let (n, _) = ledger.observe(&format!("{i:04x}"), String::new(), 0.0);
            assert!(n >= 2, "boot {i} numbered {n}");
        }
        assert_eq!(ledger.dropped, u32::MAX);
        assert_eq!(ledger.observe("ffff", String::new(), 0.0).0, u32::MAX);
        // Built in memory, out of range: still no panic.
        let mut ledger = Ledger {
            spent_checkpoint_secs: f64::INFINITY,
            ..Ledger::default()
        };
        ledger.observe("a", String::new(), -1e300);
        let (spent, _) = ledger.budget_spent("a", at(0), Some(1e300));
        assert!(spent.as_secs_f64() <= MAX_SECS);
    }

    #[test]
    fn progress_puts_are_counted_per_boot() {
        let mut ledger = Ledger::default();
        ledger.observe("a", String::new(), 0.0);
        ledger.count_progress_put("a");
        ledger.count_progress_put("a");
        ledger.observe("b", String::new(), 0.0);
        assert_eq!(ledger.progress_puts("a"), 2);
        assert_eq!(ledger.progress_puts("b"), 0);
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
