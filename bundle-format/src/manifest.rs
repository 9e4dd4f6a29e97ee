//! `manifest.json`: what each member of a `host_boot` bundle is, where it
//! came from, and what was cut, skipped, redacted or failed; with the
//! names and caps of the format.

use serde::{Deserialize, Serialize};

/// Name of the records collector, whose digest the manifest repeats.
pub const RECORDS_COLLECTOR: &str = "records";

/// Top directory of every member.
pub const TOP_DIR: &str = "host_boot";
/// Name of the manifest member, relative to [`TOP_DIR`].
pub const MANIFEST_NAME: &str = "manifest.json";
/// Name of the diagnosis member (`docs/diagnosis.md`), relative to [`TOP_DIR`].
pub const DIAGNOSIS_NAME: &str = "diagnosis.json";
pub const FORMAT_VERSION: u32 = 1;

const MIB: u64 = 1024 * 1024;

/// Members the manifest lists per collector, and entries of `truncated`:
/// the agent makes a few hundred; a host with thousands of record files or
/// pod logs must not grow the manifest past what `inspect` and the mock
/// read (8 MiB). The rest are counted (`unlisted`, `truncated_unlisted`).
pub const MANIFEST_FILES_PER_LIST: usize = 1000;
/// Bytes of compact JSON one such list may take: with pretty printing,
/// eight lists stay under 4 MiB.
pub const MANIFEST_LIST_BYTES: usize = 384 * 1024;
/// Characters of one reason in the manifest (they quote stderr and name
/// host files).
pub const MANIFEST_REASON_CHARS: usize = 2048;

fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

/// Who and why, copied into the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleMeta {
    pub agent_version: String,
    pub host_id: String,
    pub infra_env_id: String,
    pub cluster_id: Option<String>,
    pub boot_id: String,
    pub boot_number: u32,
    /// The stage the service reported.
    pub service_stage: Option<String>,
    /// Why this bundle: "first", "interval", "final".
    pub reason: String,
}

/// Size caps on member content (uncompressed). Tar headers and the manifest
/// add a few KiB on top, far inside the margin to the service's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleLimits {
    pub total_bytes: u64,
    pub member_bytes: u64,
}

impl Default for BundleLimits {
    /// 200 MiB in all, below assisted-service's 250 MiB upload limit even
    /// before compression; 64 MiB per member, so one journal cannot take it all.
    fn default() -> Self {
        Self {
            total_bytes: 200 * MIB,
            member_bytes: 64 * MIB,
        }
    }
}

/// The `manifest.json` member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub format_version: u32,
    /// RFC 3339, UTC.
    pub generated_at: String,
    pub meta: BundleMeta,
    pub limits: BundleLimits,
    /// In collection order.
    pub collectors: Vec<CollectorReport>,
    /// Content bytes of every member except the manifest.
    pub total_bytes: u64,
    /// Members cut or left out by a size cap.
    pub truncated: Vec<TruncatedMember>,
    /// Such members past what `truncated` lists (its size is bounded).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub truncated_unlisted: usize,
    /// Secrets replaced in all members.
    #[serde(default)]
    pub redactions: usize,
    /// Bytes written to temporary files while building the bundle: always 0
    /// since members wait compressed in memory (older agents spilled big
    /// members to an unlinked file); kept for the readers of both.
    #[serde(default)]
    pub spill_bytes: u64,
    /// One line naming the worst finding of the bootstrap service records
    /// (see `records::Summary::digest`), for the service's `progress_info`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records_digest: Option<String>,
    /// The `diagnosis.json` member (`docs/diagnosis.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<DiagnosisEntry>,
    /// The root the files and the journal were read from; `None` in
    /// bundles made before the manifest said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<RootReport>,
}

/// Where a bundle's root was and how it was laid out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootReport {
    /// The directory given (`--root`), `/` on a running host.
    pub path: String,
    /// Whether that root is the running machine's own `/`: then the
    /// members of both origins describe one host.
    pub running_machine: bool,
    /// `plain` (`/etc`, `/var` directly under the root) or `ostree` (a
    /// disk's root partition: a deployment and its stateroot's `/var`).
    pub layout: String,
    /// The directory `/etc`, `/usr` and `/opt` were read under.
    pub files: String,
    /// The directory `/var` was read under.
    pub var: String,
    /// The ostree deployment read, `STATEROOT/CHECKSUM.SERIAL`, and why
    /// that one (booted by default, or the newest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen_by: Option<String>,
    /// Every deployment found, in the order they were weighed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deployments: Vec<String>,
}

/// The manifest's entry for `diagnosis.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiagnosisEntry {
    /// Member path, relative to the top directory.
    pub path: String,
    pub bytes: u64,
    /// Findings by severity.
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
    /// The worst finding in one line (also sent as `progress_info`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headline: Option<String>,
    /// Time the engine took (line scan, absorbing, correlation), in
    /// milliseconds: its cost figure (docs/diagnosis.md, bench/run).
    pub cpu_ms: u64,
    /// Lines the engine read.
    #[serde(default)]
    pub lines_scanned: u64,
    /// Lines with an anchor the engine's read budget left unread.
    #[serde(default)]
    pub lines_unread: u64,
}

impl Manifest {
    pub fn collector(&self, name: &str) -> Option<&CollectorReport> {
        self.collectors.iter().find(|c| c.name == name)
    }

    /// The records digest: one line (at most 200 characters) naming the
    /// worst finding of the bootstrap services, `None` when all is well or
    /// there are no records.
    pub fn digest(&self) -> Option<&str> {
        self.records_digest.as_deref()
    }

    /// The bundle's worst finding in one line, for `progress_info`.
    pub fn diagnosis_headline(&self) -> Option<&str> {
        self.diagnosis.as_ref()?.headline.as_deref()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TruncatedMember {
    pub path: String,
    pub reason: String,
}

/// Outcome of one member or one collector, as written in the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Failed,
    Skipped,
    TimedOut,
    Partial,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failed => "failed",
            Status::Skipped => "skipped",
            Status::TimedOut => "timed_out",
            Status::Partial => "partial",
        }
    }
}

/// Where a member's content came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The root's own files and journal (the manifest's `root`).
    Root,
    /// The machine the collector ran on: a command such as `ip`, `df` or
    /// `crictl`, its `/proc`, statvfs, a probe on its loopback. Only
    /// collected when the root is that machine's own `/`, or by the agent.
    RunningMachine,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Root => "root",
            Origin::RunningMachine => "running_machine",
        }
    }
}

/// One member a collector tried to produce.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileReport {
    /// Path inside the bundle's top directory, e.g. `journal/this-boot.log`.
    pub path: String,
    /// The command line or the host path the content came from.
    pub source: String,
    pub status: Status,
    pub reason: Option<String>,
    /// Whether the member is in the archive (skipped ones and failures with
    /// no output are only listed here).
    pub archived: bool,
    /// Bytes in the archive.
    pub bytes: u64,
    /// Only the newest part was kept.
    pub truncated: bool,
    /// Size the source produced before capping, when truncated.
    pub original_bytes: Option<u64>,
    /// Secrets replaced in this member.
    pub redactions: usize,
    pub duration_ms: u64,
    /// Bytes of the member carried over from earlier bundles of the same
    /// run without reading them again (the journal cache).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reused_bytes: u64,
    /// The root or the running machine; `None` in bundles made before
    /// the manifest said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
}

/// One collector's entry in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectorReport {
    pub name: String,
    pub status: Status,
    pub reason: Option<String>,
    /// Bytes this collector put in the archive.
    pub bytes: u64,
    pub duration_ms: u64,
    pub files: Vec<FileReport>,
    /// This collector's own size cap, if it has one below the bundle's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    /// This collector's own time limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit_ms: Option<u64>,
    /// One line naming the worst finding (the records collector's summary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// Members past what the manifest lists for one collector (its size is
    /// bounded), counted rather than listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unlisted: Option<Unlisted>,
}

/// The members of a collector the manifest does not list, in total.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unlisted {
    pub files: usize,
    /// Those in the archive.
    pub archived: usize,
    /// Their bytes in the archive.
    pub bytes: u64,
    pub redactions: usize,
    /// Those whose status is not ok (skipped ones included).
    pub not_ok: usize,
}

impl CollectorReport {
    /// Secrets replaced in its members, listed or not.
    pub fn redactions(&self) -> usize {
        self.files.iter().map(|f| f.redactions).sum::<usize>()
            + self.unlisted.as_ref().map_or(0, |u| u.redactions)
    }

    /// Lists at most `max_files` members, and no more than `max_bytes` of
    /// their JSON; the rest are counted in [`CollectorReport::unlisted`] and
    /// the reason says so. Reasons are cut to `max_reason` characters.
    pub fn bound_listing(&mut self, max_files: usize, max_bytes: usize, max_reason: usize) {
        if let Some(reason) = &mut self.reason {
            cut_chars(reason, max_reason);
        }
        let mut listed_bytes = 0usize;
        let mut keep = self.files.len();
        for (i, file) in self.files.iter_mut().enumerate() {
            if let Some(reason) = &mut file.reason {
                cut_chars(reason, max_reason);
            }
            listed_bytes += serde_json::to_vec(file).map_or(0, |json| json.len());
            if i == max_files || listed_bytes > max_bytes {
                keep = i;
                break;
            }
        }
        if keep == self.files.len() {
            return;
        }
        let mut unlisted = self.unlisted.take().unwrap_or_default();
        for file in self.files.drain(keep..) {
            unlisted.files += 1;
            unlisted.archived += usize::from(file.archived);
            unlisted.bytes += file.bytes;
            unlisted.redactions += file.redactions;
            unlisted.not_ok += usize::from(file.status != Status::Ok);
        }
        let note = format!(
            "{} more member(s) not listed (the manifest lists at most {max_files} per collector): {} archived, {} bytes, {} redaction(s)",
            unlisted.files, unlisted.archived, unlisted.bytes, unlisted.redactions
        );
        self.reason = Some(match self.reason.take() {
            Some(reason) => format!("{reason}; {note}"),
            None => note,
        });
        self.unlisted = Some(unlisted);
    }
}

/// Cuts `text` to `max` characters, marking the cut.
pub fn cut_chars(text: &mut String, max: usize) {
    if let Some((at, _)) = text.char_indices().nth(max) {
        text.truncate(at);
        text.push('…');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A member as bundles wrote it before `origin` existed still reads,
    /// and a member with an origin names it in snake case.
    #[test]
    fn origin_is_optional_and_snake_case() {
        let old = r#"{"path":"network/hosts","source":"/etc/hosts","status":"ok","reason":null,
            "archived":true,"bytes":3,"truncated":false,"original_bytes":null,"redactions":0,
            "duration_ms":1}"#;
        let mut file: FileReport = serde_json::from_str(old).unwrap();
        assert_eq!(file.origin, None);
        assert!(!serde_json::to_string(&file)
            .unwrap()
            .contains(r#""origin""#));
        file.origin = Some(Origin::RunningMachine);
        let json = serde_json::to_string(&file).unwrap();
        assert!(json.contains(r#""origin":"running_machine""#), "{json}");
        let back: FileReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back.origin, Some(Origin::RunningMachine));
    }
}
