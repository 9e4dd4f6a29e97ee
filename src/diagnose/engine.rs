//! The engine: gathers one bundle's scanners and correlates them
//! (`docs/diagnosis.md`): one finding per category and decisive value across
//! every member, failed services (records, units) attached to the finding
//! that explains them, severity from persistence and recovery, errors first
//! then the earliest cause, bounded output.

use std::collections::BTreeMap;

use super::catalogue;
use super::classify::classify;
use super::files;
use super::finding::{Consequence, Diagnosis, Evidence, Finding, FORMAT_VERSION};
use super::line;
use super::normalise;
use super::scanner::{Kind, Placement, RawEvidence, Scanner, UnitMarks, MAX_EVIDENCE_CHARS};
use super::signal::{Category, Nature, Severity, Signal};
use crate::records::{Outcome, Summary};

/// This boot's whole journal, which repeats every unit member's lines.
const WHOLE_JOURNAL: &str = "journal/this-boot.log";
/// The previous boot's journal: a rebase logged there was followed by a
/// reboot into this boot.
const PREVIOUS_JOURNAL: &str = "journal/previous-boot.log";
/// Evidence lines kept per finding in the output.
pub const MAX_EVIDENCE_PER_FINDING: usize = 8;
/// Findings in the output.
pub const MAX_FINDINGS: usize = 32;

/// One finding being built across members.
#[derive(Debug, Clone)]
struct Acc {
    signal: Signal,
    count: u64,
    first_at: Option<i64>,
    last_at: Option<i64>,
    evidence: Vec<(Option<i64>, usize, Evidence)>,
    /// A recovery came after the last problem.
    recovered: bool,
    /// Some problem came after every recovery (or there was none).
    unrecovered_somewhere: bool,
    consequences: Vec<(Consequence, Option<i64>)>,
    units: Vec<String>,
    /// Lines in `journal/this-boot.log`, which repeats the unit members:
    /// occurrences are the larger of the two counts.
    count_whole_journal: u64,
}

/// Gathers one bundle's scanners and correlates them.
#[derive(Debug, Default)]
pub struct Engine {
    accs: Vec<Acc>,
    /// Recoveries by category, with their latest time.
    recoveries: Vec<(Category, String, Option<i64>)>,
    units: BTreeMap<String, UnitMarks>,
    /// Unit, time, the `Failed with result` line, recovered in its member.
    unit_failures: Vec<(String, Option<i64>, Evidence, bool)>,
    summary: Option<Summary>,
    /// Host files read whole (`files.rs`): path, text, and whether its
    /// line numbers are the archived member's.
    host_files: Vec<(String, String, bool)>,
    members: u64,
    lines: u64,
    /// Lines with an anchor the read budget left unread.
    unread: u64,
    seq: usize,
    /// Time the scanners spent reading lines.
    scan_time: std::time::Duration,
}

impl Engine {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes in a finished scanner.
    pub fn absorb(&mut self, mut scanner: Scanner, placement: Placement) {
        let started = std::time::Instant::now();
        scanner.finish();
        self.scan_time += scanner.busy + started.elapsed();
        self.members += 1;
        self.lines += scanner.total_lines();
        self.unread += scanner.unread_lines();
        if scanner.kind == Kind::RecordsSummary {
            if !scanner.document_overflow {
                self.summary = serde_json::from_slice(&scanner.document).ok();
            }
            return;
        }
        if scanner.kind == Kind::HostFile {
            // A file cut by its cap is not read: half a route table lies.
            if !scanner.document_overflow {
                self.host_files.push((
                    scanner.path.clone(),
                    String::from_utf8_lossy(&scanner.document).into_owned(),
                    placement.archived && placement.dropped_bytes == 0,
                ));
            }
            return;
        }
        let total = scanner.total_lines();
        let place = |raw: &RawEvidence| -> Evidence {
            let line = if !placement.archived || raw.offset < placement.dropped_bytes {
                None
            } else if placement.dropped_bytes == 0 {
                Some(raw.line)
            } else {
                // Lines after this one are all in the kept part.
                placement
                    .member_lines
                    .checked_sub(total.saturating_sub(raw.line))
                    .filter(|&l| l > 0)
            };
            Evidence {
                path: scanner.path.clone(),
                line,
                text: raw.text.clone(),
                at: raw.at.map(format_time),
                unit: raw.unit.clone(),
            }
        };
        for (unit, marks) in &scanner.units {
            let entry = self.units.entry(unit.clone()).or_default();
            if let Some(ok) = marks.ok_at {
                entry.ok_at = Some(entry.ok_at.map_or(ok, |o| o.max(ok)));
            }
            if let Some((at, raw)) = &marks.failed {
                let recovered_here = marks.ok_line > marks.failed_line;
                self.unit_failures.push((
                    unit.clone(),
                    (*at != i64::MAX).then_some(*at),
                    place(raw),
                    recovered_here,
                ));
            }
        }
        for (category, key, line, at) in &scanner.recoveries {
            self.recoveries.push((*category, key.clone(), *at));
            for hits in &scanner.hits {
                if hits.signal.category == *category
                    && (key == "*" || *key == hits.signal.key)
                    && *line > hits.last_problem_line
                {
                    if let Some(acc) = self.find_acc(*category, &hits.signal.key) {
                        acc.recovered = true;
                    }
                }
            }
        }
        for hits in &scanner.hits {
            let recovered_in_member = scanner.recoveries.iter().any(|(c, k, l, _)| {
                *c == hits.signal.category
                    && (k == "*" || *k == hits.signal.key)
                    && *l > hits.last_problem_line
            });
            let seq = self.seq;
            self.seq += 1;
            let whole_journal = scanner.path == WHOLE_JOURNAL;
            let acc = self.acc_for(&hits.signal);
            if whole_journal {
                acc.count_whole_journal += hits.count;
            } else {
                acc.count += hits.count;
            }
            acc.first_at = min_opt(acc.first_at, hits.first_at);
            acc.last_at = max_opt(acc.last_at, hits.last_at);
            if recovered_in_member {
                acc.recovered = true;
            } else {
                acc.unrecovered_somewhere = true;
            }
            for raw in &hits.evidence {
                let ev = place(raw);
                if let Some(unit) = &ev.unit {
                    if !acc.units.contains(unit) {
                        acc.units.push(unit.clone());
                    }
                }
                // journal/this-boot.log repeats every unit's lines: the
                // unit's own member is the better reference.
                if let Some(same) = acc.evidence.iter_mut().find(|(_, _, e)| e.text == ev.text) {
                    if same.2.path == WHOLE_JOURNAL && !whole_journal {
                        *same = (raw.at, seq, ev);
                    }
                    continue;
                }
                acc.evidence.push((raw.at, seq, ev));
            }
        }
    }

    fn find_acc(&mut self, category: Category, key: &str) -> Option<&mut Acc> {
        self.accs
            .iter_mut()
            .find(|a| a.signal.category == category && a.signal.key == key)
    }

    fn acc_for(&mut self, signal: &Signal) -> &mut Acc {
        let found = self
            .accs
            .iter()
            .position(|a| a.signal.category == signal.category && a.signal.key == signal.key);
        let i = if let Some(i) = found {
            i
        } else {
            {
                self.accs.push(Acc {
                    signal: signal.clone(),
                    count: 0,
                    first_at: None,
                    last_at: None,
                    evidence: Vec::new(),
                    recovered: false,
                    unrecovered_somewhere: false,
                    consequences: Vec::new(),
                    units: Vec::new(),
                    count_whole_journal: 0,
                });
                self.accs.len() - 1
            }
        };
        &mut self.accs[i]
    }

    /// Time the scanners spent reading lines (their share of the bundle's
    /// CPU: the scan runs on the collecting thread, which is busy meanwhile).
    pub(crate) fn scan_time(&self) -> std::time::Duration {
        self.scan_time
    }

    /// Correlates and orders everything absorbed.
    pub fn finish(mut self) -> Diagnosis {
        self.judge_observations();
        self.retries_that_worked();
        self.read_host_files();
        self.attach_records();
        self.attach_unit_failures();
        let mut findings: Vec<(Severity, Option<i64>, usize, Finding)> = self
            .accs
            .into_iter()
            .enumerate()
            .map(|(i, acc)| {
                let severity = severity(&acc);
                let first = min_opt(
                    acc.first_at,
                    acc.consequences.iter().filter_map(|(_, t)| *t).min(),
                );
                (severity, first, i, finding(acc, severity))
            })
            .collect();
        // A consequence ranks below its cause: the API, the machine config
        // server or a CSR failing for good is an error, and what makes
        // them fail (a slow etcd disk, a clock or certificate problem, the
        // network) is often only a warning on its own; beside such an
        // error it is one too. At the same severity a consequence comes
        // after any cause, whatever their times.
        if findings
            .iter()
            .any(|f| f.0 == Severity::Error && is_consequence(f.3.category))
        {
            for f in &mut findings {
                if f.0 == Severity::Warning && explains_unreachable(f.3.category) {
                    f.0 = Severity::Error;
                    f.3.severity = Severity::Error;
                }
            }
        }
        findings.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| is_consequence(a.3.category).cmp(&is_consequence(b.3.category)))
                .then_with(|| match (a.1, b.1) {
                    (Some(x), Some(y)) => x.cmp(&y),
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (None, None) => std::cmp::Ordering::Equal,
                })
                .then_with(|| a.2.cmp(&b.2))
        });
        findings.truncate(MAX_FINDINGS);
        Diagnosis {
            format_version: FORMAT_VERSION,
            findings: findings.into_iter().map(|f| f.3).collect(),
            members_scanned: self.members,
            lines_scanned: self.lines,
            lines_unread: self.unread,
        }
    }

    /// Retries that worked: a transient problem logged only by units that
    /// later succeeded (`X.service: Deactivated successfully`, Ignition's
    /// `GET result: OK`) recovered, whatever its category: a release image
    /// pull retried until it came, a config fetch tried before DHCP
    /// answered.
    fn retries_that_worked(&mut self) {
        let ignition_ok = self
            .recoveries
            .iter()
            .filter(|(c, k, _)| *c == Category::McsUnreachable && k == "*")
            .filter_map(|(_, _, at)| *at)
            .max();
        let ok_at = |unit: &str| -> Option<i64> {
            // A daemon (kubelet, crio) that stops cleanly at a reboot did
            // not retry its way to success: only jobs that finish count.
            if !is_job(unit) {
                return None;
            }
            let unit_ok = self.units.get(unit).and_then(|m| m.ok_at);
            if unit == "ignition" {
                max_opt(unit_ok, ignition_ok)
            } else {
                unit_ok
            }
        };
        let recovered: Vec<bool> = self
            .accs
            .iter()
            .map(|acc| {
                acc.signal.nature == Nature::Transient
                    && !acc.units.is_empty()
                    && acc.units.iter().all(|u| match (ok_at(u), acc.last_at) {
                        (Some(ok), Some(last)) => ok >= last,
                        _ => false,
                    })
            })
            .collect();
        for (acc, recovered) in self.accs.iter_mut().zip(recovered) {
            if recovered {
                acc.recovered = true;
                acc.unrecovered_somewhere = false;
            }
        }
    }

    /// A finding from facts or host files: its signal, evidence and times.
    fn add_derived(&mut self, signal: &Signal, evidence: Vec<(Option<i64>, Evidence)>) {
        let first = evidence.iter().filter_map(|(at, _)| *at).min();
        let last = evidence.iter().filter_map(|(at, _)| *at).max();
        let seq = self.seq;
        self.seq += 1;
        let acc = self.acc_for(signal);
        acc.count += 1;
        acc.first_at = min_opt(acc.first_at, first);
        acc.last_at = max_opt(acc.last_at, last);
        acc.unrecovered_somewhere = true;
        for (at, ev) in evidence {
            if !acc.evidence.iter().any(|(_, _, e)| e.text == ev.text) {
                acc.evidence.push((at, seq, ev));
            }
        }
    }

    /// The host files read whole (`files.rs`): resolv.conf against the
    /// cluster network's routes, `ip addr`'s flags, the hostname.
    fn read_host_files(&mut self) {
        let files = std::mem::take(&mut self.host_files);
        let text = |name: &str| {
            files
                .iter()
                .find(|(p, _, _)| p == name)
                .map(|(_, t, _)| t.as_str())
        };
        let numbered = |name: &str| files.iter().any(|(p, _, n)| p == name && *n);
        let routes: Vec<(&'static str, &str)> = [files::ROUTES, files::ROUTES6]
            .into_iter()
            .filter_map(|p| Some((p, text(p)?)))
            .collect();
        let mut found = Vec::new();
        if let Some(resolv) = text(files::RESOLV) {
            found.extend(files::nameserver_in_cluster_network(resolv, &routes));
        }
        if let Some(addrs) = text(files::ADDRS) {
            found.extend(files::dad_failed(addrs));
        }
        if let Some(name) = text(files::HOSTNAME) {
            found.extend(files::hostname_has_etcd(name));
        }
        for f in found {
            let evidence = f
                .lines
                .into_iter()
                .map(|(path, line, text)| {
                    (
                        None,
                        Evidence {
                            path: path.to_owned(),
                            line: numbered(path).then_some(line),
                            text: line::shorten(&text, MAX_EVIDENCE_CHARS),
                            at: None,
                            unit: None,
                        },
                    )
                })
                .collect();
            self.add_derived(&f.signal, evidence);
        }
        self.host_files = files;
    }

    /// Facts compared across lines and members (`Nature::Observed`): an
    /// interface whose DHCP address changed, an OS image that did not boot
    /// after machine-config-daemon rebased to it. The facts themselves are
    /// no findings.
    fn judge_observations(&mut self) {
        let (facts, accs): (Vec<Acc>, Vec<Acc>) = std::mem::take(&mut self.accs)
            .into_iter()
            .partition(|a| a.signal.nature == Nature::Observed);
        self.accs = accs;
        let first_evidence = |a: &Acc| {
            a.evidence
                .iter()
                .min_by_key(|(at, seq, _)| (at.unwrap_or(i64::MAX), *seq))
                .map(|(at, _, e)| (*at, e.clone()))
        };
        // Leases: `dhcp4 ens3 A` then `dhcp4 ens3 B`.
        let mut leases: Vec<&Acc> = facts
            .iter()
            .filter(|a| a.signal.category == Category::IpChanged)
            .collect();
        leases.sort_by_key(|a| a.first_at.unwrap_or(i64::MAX));
        let mut done: Vec<&str> = Vec::new();
        for (i, first) in leases.iter().enumerate() {
            let Some((iface_key, address)) = first.signal.key.rsplit_once(' ') else {
                continue;
            };
            if done.contains(&iface_key) {
                continue;
            }
            let Some(later) = leases[i + 1..].iter().find(|a| {
                a.signal
                    .key
                    .rsplit_once(' ')
                    .is_some_and(|(k, addr)| k == iface_key && addr != address)
            }) else {
                continue;
            };
            done.push(iface_key);
            let new_address = later.signal.key.rsplit_once(' ').map_or("", |(_, a)| a);
            let iface = iface_key.split_once(' ').map_or(iface_key, |(_, i)| i);
            let signal = Signal::new(
                Category::IpChanged,
                iface,
                format!("{iface}'s DHCP address changed from {address} to {new_address} (NetworkManager new lease): the cluster knows the host by the first"),
                Nature::Transient,
            );
            let evidence = [first_evidence(first), first_evidence(later)]
                .into_iter()
                .flatten()
                .collect();
            self.add_derived(&signal, evidence);
        }
        self.judge_os_image(&facts);
    }

    /// The OS image machine-config-daemon last rebased to, against what
    /// booted after it: its own `Booted osImageURL` in a later run, or
    /// rpm-ostree's status when the rebase was in the previous boot.
    fn judge_os_image(&mut self, facts: &[Acc]) {
        let of_role = |role: &str| -> Vec<&Acc> {
            facts
                .iter()
                .filter(|a| {
                    a.signal.category == Category::OsImageMismatch && a.signal.key.starts_with(role)
                })
                .collect()
        };
        let Some(target) = of_role("target ")
            .into_iter()
            .max_by_key(|a| a.last_at.unwrap_or(i64::MIN))
        else {
            return;
        };
        let want = &target.signal.key["target ".len()..];
        let target_line = target
            .evidence
            .iter()
            .max_by_key(|(at, seq, _)| (at.unwrap_or(i64::MIN), *seq))
            .map(|(at, _, e)| (*at, e.clone()));
        // The daemon's own word after a reboot.
        let booted_after = of_role("booted ")
            .into_iter()
            .filter(|a| matches!((a.last_at, target.last_at), (Some(b), Some(t)) if b > t))
            .max_by_key(|a| a.last_at);
        let status = self
            .host_files
            .iter()
            .find(|(p, _, _)| p == files::RPM_OSTREE)
            .and_then(|(_, t, _)| files::deployments(t));
        let staged_is = status
            .as_ref()
            .and_then(|d| d.staged.as_deref())
            .is_some_and(|s| files::same_image(s, want));
        let mut mismatch: Option<(String, (Option<i64>, Evidence))> = None;
        if staged_is {
            // Its reboot is still to come: a daemon that restarted before
            // it says, rightly, that the old image booted.
        } else if let Some(booted) = booted_after {
            let have = &booted.signal.key["booted ".len()..];
            if have == "-" || !files::same_image(have, want) {
                let line = booted
                    .evidence
                    .iter()
                    .max_by_key(|(at, seq, _)| (at.unwrap_or(i64::MIN), *seq))
                    .map(|(at, _, e)| (*at, e.clone()));
                mismatch = line.map(|l| (have.to_owned(), l));
            }
        } else if target
            .evidence
            .iter()
            .all(|(_, _, e)| e.path == PREVIOUS_JOURNAL)
        {
            // Rebased in the previous boot: this boot runs what booted.
            if let Some(d) = status {
                let booted_is = d
                    .booted
                    .as_deref()
                    .is_some_and(|b| files::same_image(b, want));
                if !booted_is {
                    let have = d.booted.clone().unwrap_or_else(|| "-".into());
                    let ev = Evidence {
                        path: files::RPM_OSTREE.into(),
                        line: None,
                        text: line::shorten(&d.booted_text, MAX_EVIDENCE_CHARS),
                        at: None,
                        unit: None,
                    };
                    mismatch = Some((have, (None, ev)));
                }
            }
        }
        let Some((have, booted_line)) = mismatch else {
            return;
        };
        let have = if have == "-" {
            "the boot image's own OS (never pivoted)".to_owned()
        } else {
            have
        };
        let signal = Signal::new(
            Category::OsImageMismatch,
            want,
            format!("the host booted {have}, not {want}, the OS image machine-config-daemon rebased to: the pivot did not take (OCPBUGS-5379)"),
            Nature::Fatal,
        );
        let evidence = target_line
            .into_iter()
            .chain(std::iter::once(booted_line))
            .collect();
        self.add_derived(&signal, evidence);
    }

    /// Failed bootstrap services (records) become consequences of the
    /// finding their error message names, or of the earliest finding seen
    /// in that unit before the failure, or `other` findings.
    fn attach_records(&mut self) {
        let Some(summary) = self.summary.take() else {
            return;
        };
        for service in &summary.services {
            let runs = service.run_count();
            for failure in &service.failures {
                let recovered = failure.run < runs || service.status == Outcome::Success;
                let at_text = failure.at.clone();
                let at = at_text.as_deref().and_then(normalise::parse_rfc3339);
                let consequence = Consequence {
                    unit: service.service.clone(),
                    what: failure.what.clone(),
                    at: at_text,
                    recovered,
                };
                let message = failure.error_message.as_deref().unwrap_or_default();
                let signal = message
                    .lines()
                    .filter_map(|l| classify(normalise::parse(l).message))
                    .find(|s| matches!(s.nature, Nature::Fatal | Nature::Transient));
                if let Some(signal) = signal {
                    let acc = self.acc_for(&signal);
                    acc.first_at = min_opt(acc.first_at, at);
                    push_consequence(acc, consequence, at);
                    continue;
                }
                if let Some(acc) = self.cause_in_unit(&service.service, at) {
                    push_consequence(acc, consequence, at);
                    continue;
                }
                let signal = Signal::new(
                    Category::Other,
                    format!("{} {}", service.service, failure.what),
                    format!(
                        "{} {} failed: {}",
                        service.service,
                        failure.what,
                        last_error_line(message)
                    ),
                    Nature::Transient,
                );
                let acc = self.acc_for(&signal);
                acc.first_at = min_opt(acc.first_at, at);
                push_consequence(acc, consequence, at);
            }
        }
    }

    /// Earliest non-`other` finding with evidence from `unit` no later than `at`.
    fn cause_in_unit(&mut self, unit: &str, at: Option<i64>) -> Option<&mut Acc> {
        self.accs
            .iter_mut()
            .filter(|a| {
                a.signal.category != Category::Other
                    && a.signal.nature != Nature::Note
                    && a.units.iter().any(|u| u == unit)
            })
            .filter(|a| match (a.first_at, at) {
                (Some(first), Some(at)) => first <= at,
                _ => true,
            })
            .min_by_key(|a| a.first_at.unwrap_or(i64::MAX))
    }

    /// `X.service: Failed with result` with no later success of X.
    fn attach_unit_failures(&mut self) {
        let failures = std::mem::take(&mut self.unit_failures);
        let mut seen: Vec<String> = Vec::new();
        for (unit, at, evidence, recovered_here) in failures {
            if seen.contains(&unit) {
                continue;
            }
            seen.push(unit.clone());
            let recovered = recovered_here
                || match (at, self.units.get(&unit).and_then(|m| m.ok_at)) {
                    (Some(at), Some(ok)) => ok > at,
                    _ => false,
                };
            // Already explained by the records.
            let explained = self
                .accs
                .iter()
                .any(|a| a.consequences.iter().any(|(c, _)| c.unit == unit));
            if explained {
                continue;
            }
            let result = unit_result(normalise::parse(&evidence.text).message);
            // A unit stopped by a signal is what an ordinary stop (a
            // reboot, `systemctl stop` of a unit that ignores SIGTERM)
            // looks like: a note, never the consequence of a cause.
            if result == Some("signal") {
                let signal = Signal::new(
                    Category::Other,
                    unit.clone(),
                    format!("{unit}.service was stopped by a signal"),
                    Nature::Note,
                );
                let acc = self.acc_for(&signal);
                acc.first_at = min_opt(acc.first_at, at);
                acc.count += 1;
                acc.evidence.push((at, usize::MAX, evidence));
                continue;
            }
            let consequence = Consequence {
                unit: unit.clone(),
                what: "unit".into(),
                at: at.map(format_time),
                recovered,
            };
            if let Some(acc) = self.cause_in_unit(&unit, at) {
                push_consequence(acc, consequence, at);
                continue;
            }
            let category = category_of_unit(&unit);
            let signal = Signal::new(
                category,
                unit.clone(),
                format!("{unit}.service failed: {}", result_in_words(result)),
                Nature::Transient,
            );
            let acc = self.acc_for(&signal);
            acc.first_at = min_opt(acc.first_at, at);
            acc.count += 1;
            acc.unrecovered_somewhere = true;
            acc.evidence.push((at, usize::MAX, evidence));
            push_consequence(acc, consequence, at);
        }
    }
}

/// The category of a failed unit that no line explains, when the unit's
/// job says it (the units of RHCOS, MCO and the installer).
fn category_of_unit(unit: &str) -> Category {
    match unit {
        "NetworkManager-wait-online" | "NetworkManager" => Category::NetworkLink,
        "node-valid-hostname" => Category::Hostname,
        "ovs-configuration" | "openvswitch" | "ovsdb-server" | "ovs-vswitchd" => {
            Category::OvsConfig
        }
        "machine-config-daemon-firstboot" | "machine-config-daemon-pull" => Category::MachineConfig,
        "ostree-prepare-root" | "rpm-ostreed" | "ostree-finalize-staged" => {
            Category::OsImageMismatch
        }
        "release-image" | "release-image-pivot" => Category::ImagePull,
        "crio-wipe" => Category::CrioStorage,
        "chronyd" | "chrony-wait" => Category::ClockSkew,
        "nodeip-configuration" => Category::RouteConfig,
        _ => Category::Other,
    }
}

/// systemd's result of a failed unit: `Failed with result 'exit-code'.`
/// or a status block's `Active: failed (Result: timeout) since …`.
fn unit_result(message: &str) -> Option<&str> {
    let rest = line::after(message, "Failed with result '")
        .or_else(|| line::after(message, "(Result: "))?;
    Some(line::token_until(rest, &['\'', ')']))
}

/// A unit's result as a person says it (systemd's `service_result_table`,
/// src/core/service.c).
fn result_in_words(result: Option<&str>) -> String {
    match result {
        Some("exit-code") => "its process exited with an error".into(),
        Some("timeout") => "it timed out".into(),
        Some("core-dump") => "its process crashed (core dump)".into(),
        Some("watchdog") => "its watchdog expired".into(),
        Some("start-limit-hit") => "it was restarted too often (start limit hit)".into(),
        Some("oom-kill") => "the kernel's OOM killer killed it".into(),
        Some("resources") => "systemd could not set up its resources".into(),
        Some("protocol") => "it did not follow the service protocol".into(),
        Some("exec-condition") => "its start condition failed".into(),
        Some(other) => format!("result {other}"),
        None => "no result recorded".into(),
    }
}

/// The last line of a bootstrap record's error message that says what
/// went wrong: systemd's own lines (`Main process exited`, `Failed with
/// result`) say only that it did; among the others the last that reads as
/// an error, else the last. The message was redacted on its way in;
/// [`fit_to_show`](super::finding::fit_to_show) escapes it when it is shown.
fn last_error_line(message: &str) -> String {
    let own: Vec<&str> = message
        .lines()
        .map(normalise::parse)
        .filter(|p| p.ident != Some("systemd") && !p.message.trim().is_empty())
        .map(|p| p.message.trim())
        .collect();
    let erring = |m: &&&str| {
        let lower = m.to_ascii_lowercase();
        [
            "error",
            "fail",
            "fatal",
            "refused",
            "denied",
            "timeout",
            "timed out",
        ]
        .iter()
        .any(|w| lower.contains(w))
    };
    own.iter()
        .rev()
        .find(erring)
        .or_else(|| own.last())
        .map_or_else(
            || "no error message recorded".to_owned(),
            |m| line::shorten(m, 160),
        )
}

fn push_consequence(acc: &mut Acc, consequence: Consequence, at: Option<i64>) {
    if !acc
        .consequences
        .iter()
        .any(|(c, _)| c.unit == consequence.unit && c.what == consequence.what)
    {
        acc.consequences.push((consequence, at));
    }
}

/// Categories that are usually what another problem looks like from a
/// client: the API or the machine config server not answering, a CSR not
/// approved (the approver needs the API).
fn is_consequence(category: Category) -> bool {
    matches!(
        category,
        Category::ApiUnreachable | Category::McsUnreachable | Category::CsrPending
    )
}

/// Causes that make the API, the machine config server or CSRs fail as
/// seen from this host: etcd too slow to answer the API, TLS refused
/// (clock, expired or untrusted certificates), the way there broken.
fn explains_unreachable(category: Category) -> bool {
    matches!(
        category,
        Category::EtcdSlowDisk
            | Category::ClockSkew
            | Category::ExpiredCertificate
            | Category::UntrustedCa
            | Category::DnsResolution
            | Category::DnsConfig
            | Category::NetworkLink
            | Category::RouteConfig
            | Category::MtuMismatch
            | Category::DuplicateIp
            | Category::IpChanged
            | Category::OvsConfig
            | Category::Proxy
    )
}

/// How long a transient signal must keep coming, unrecovered, to be an
/// error on its own (seconds), and how many lines it takes.
fn persistence(category: Category) -> Option<(i64, u64)> {
    match category {
        Category::ApiUnreachable | Category::CsrPending => Some((20 * 60, 3)),
        // ovnkube writes the CNI configuration minutes after kubelet starts.
        Category::PodNetwork => Some((30 * 60, 3)),
        Category::DnsResolution
        | Category::Proxy
        | Category::McsUnreachable
        | Category::NetworkLink
        | Category::ClockSkew
        | Category::EgressBlocked
        | Category::ImagePull
        | Category::MtuMismatch
        | Category::DiskIo
        | Category::Hostname => Some((5 * 60, 3)),
        Category::EtcdSlowDisk => Some((10 * 60, 20)),
        _ => None,
    }
}

fn severity(acc: &Acc) -> Severity {
    // A note is never a cause, whatever followed it.
    if acc.signal.nature == Nature::Note {
        return Severity::Info;
    }
    let count = acc.count.max(acc.count_whole_journal);
    if acc.consequences.iter().any(|(c, _)| !c.recovered) {
        return Severity::Error;
    }
    if !acc.consequences.is_empty() {
        // A failure nothing explains that later recovered: the retry
        // worked, as on many healthy installs.
        if acc.signal.category == Category::Other {
            return Severity::Info;
        }
        return Severity::Warning;
    }
    // A pod's virtual interface goes down whenever its pod stops.
    if acc.signal.category == Category::NetworkLink && is_virtual_interface(&acc.signal.key) {
        return Severity::Info;
    }
    // Ignition fetches its config in the initramfs as soon as it starts,
    // often before DHCP has answered: a try or two that found no network
    // is how a good first boot begins (it retries until it gets one).
    let early_ignition = acc.units.iter().all(|u| u == "ignition")
        && !acc.units.is_empty()
        && matches!(
            acc.signal.category,
            Category::NetworkLink | Category::DnsResolution | Category::RouteConfig
        )
        && count < 3;
    if early_ignition && acc.signal.nature == Nature::Transient {
        return Severity::Info;
    }
    let recovered = acc.recovered && !acc.unrecovered_somewhere;
    // The API refusing while it starts and the pod network not there yet
    // are what every install goes through. A CSR left pending is not: the
    // rules read only the approver's refusals and kubelet giving up.
    let benign = matches!(
        acc.signal.category,
        Category::ApiUnreachable | Category::PodNetwork
    );
    if recovered {
        // A link that keeps going down and up is not a retry that worked.
        if acc.signal.category == Category::NetworkLink && count >= 3 {
            return Severity::Warning;
        }
        // A retry that succeeded and failed nothing: every install has some.
        return Severity::Info;
    }
    match acc.signal.nature {
        Nature::Fatal if !acc.recovered => Severity::Error,
        Nature::Fatal | Nature::Recovery | Nature::Observed => Severity::Warning,
        Nature::Note => Severity::Info,
        Nature::Transient => {
            let lasting = persistence(acc.signal.category).is_some_and(|(secs, min_count)| {
                let span = match (acc.first_at, acc.last_at) {
                    (Some(a), Some(b)) => b - a,
                    _ => 0,
                };
                span >= secs && count >= min_count && !acc.recovered
            });
            if lasting {
                Severity::Error
            } else if benign {
                Severity::Info
            } else {
                Severity::Warning
            }
        }
    }
}

/// Units of the installation that run a job to its end (oneshot
/// services), whose `Deactivated successfully` says the job worked: the
/// installer's and the machine config operator's first-boot units,
/// Ignition's and CoreOS's initramfs units.
fn is_job(unit: &str) -> bool {
    matches!(
        unit,
        "release-image"
            | "release-image-pivot"
            | "bootkube"
            | "bootstrap-pivot"
            | "approve-csr"
            | "machine-config-daemon-firstboot"
            | "machine-config-daemon-pull"
            | "node-valid-hostname"
            | "nodeip-configuration"
            | "ovs-configuration"
            | "resolv-prepender"
            | "rpm-ostree-rebase"
    ) || unit.starts_with("ignition")
        || unit.starts_with("coreos-")
}

/// The virtual interfaces of pods, containers and overlays, whose links
/// come and go with them: veth pairs (`veth…`, Calico's `cali…`,
/// ovn-kubernetes' 15 hex characters of the container ID), bridges and
/// tunnels the runtime or the CNI makes.
fn is_virtual_interface(name: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "veth",
        "cali",
        "tap",
        "tun",
        "vnet",
        "vxlan",
        "genev_sys",
        "flannel",
        "cni",
        "docker",
        "virbr",
        "br-int",
        "ovn-k8s",
        "ovs-system",
        "weave",
        "lxc",
        "kube-ipvs",
        "cilium",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p))
        || (name.len() == 15 && name.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn finding(mut acc: Acc, severity: Severity) -> Finding {
    acc.count = acc.count.max(acc.count_whole_journal);
    let mut summary = acc.signal.summary.clone();
    // One phrase per unit, in time order, naming the failed step if any.
    let mut ordered: Vec<&(Consequence, Option<i64>)> = acc.consequences.iter().collect();
    ordered.sort_by_key(|(_, at)| at.unwrap_or(i64::MAX));
    let mut phrases: Vec<(String, String)> = Vec::new();
    for (c, _) in ordered {
        if phrases.iter().any(|(unit, _)| *unit == c.unit) {
            continue;
        }
        let step = acc
            .consequences
            .iter()
            .map(|(c2, _)| c2)
            .find(|c2| c2.unit == c.unit && c2.what != "service" && c2.what != "unit")
            .map(|c2| format!(" ({})", c2.what))
            .unwrap_or_default();
        let how = if c.recovered {
            "failed, then recovered"
        } else {
            "failed"
        };
        phrases.push((c.unit.clone(), format!("{}{step} {how}", c.unit)));
    }
    // The unit a finding is about is named by its summary already.
    phrases.retain(|(unit, _)| *unit != acc.signal.key);
    if !phrases.is_empty() && acc.signal.category != Category::Other {
        let list: Vec<String> = phrases.into_iter().map(|(_, p)| p).collect();
        summary = format!("{summary}; {}", list.join("; "));
    }
    let mut evidence = acc.evidence;
    evidence.sort_by(|a, b| {
        a.0.unwrap_or(i64::MAX)
            .cmp(&b.0.unwrap_or(i64::MAX))
            .then(a.1.cmp(&b.1))
    });
    // Spread the kept evidence over members: one per member first.
    let mut kept: Vec<Evidence> = Vec::new();
    let mut rest: Vec<Evidence> = Vec::new();
    for (_, _, e) in evidence {
        if kept.iter().any(|k| k.path == e.path) {
            rest.push(e);
        } else {
            kept.push(e);
        }
    }
    kept.extend(rest);
    kept.truncate(MAX_EVIDENCE_PER_FINDING);
    Finding {
        category: acc.signal.category,
        severity,
        summary: line::shorten(&summary, 300),
        hint: catalogue::hint_of(&acc.signal).to_owned(),
        key: acc.signal.key,
        occurrences: acc.count,
        first_seen: acc.first_at.map(format_time),
        last_seen: acc.last_at.map(format_time),
        consequences: acc.consequences.into_iter().map(|(c, _)| c).collect(),
        evidence: kept,
    }
}

fn min_opt(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn max_opt(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn format_time(secs: i64) -> String {
    let t = u64::try_from(secs)
        .ok()
        .map(|s| std::time::UNIX_EPOCH + std::time::Duration::from_secs(s));
    t.map_or_else(
        || secs.to_string(),
        |t| humantime::format_rfc3339_seconds(t).to_string(),
    )
}
