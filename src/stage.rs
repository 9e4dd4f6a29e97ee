//! Boot and stage decision: which stage this boot should report, and whether
//! reporting it would move the host forward.
//!
//! The service only accepts forward moves within the host role's stage list,
//! and the installer moves hosts on its own (`Configuring` may be set while the
//! host fetches its ignition, before the reporter even starts), so the
//! decision is always relative to the stage the service holds right now.

use crate::api::Host;

pub(crate) const BOOTED_WITH_LOCAL_IGNITION: &str = "Booted with local ignition";
pub(crate) const BOOTED_WITH_CONTROL_PLANE_IGNITION: &str = "Booted with control plane ignition";
pub(crate) const REBOOTING: &str = "Rebooting";
pub(crate) const JOINED: &str = "Joined";
pub(crate) const DONE: &str = "Done";
pub(crate) const FAILED: &str = "Failed";

/// Statuses in which the service accepts a stage change.
const INSTALLING_STATUSES: [&str; 3] = [
    "installing",
    "installing-in-progress",
    "installing-pending-user-action",
];

/// Where each known stage sits relative to the two boot stages. Every role's
/// list (with the new stages inserted as the enhancement says) is ordered
/// consistently with these ranks, so they decide "earlier / later" for any
/// role even when the service does not send its list; stages before the reboot
/// share a rank because their relative order differs per role and never
/// matters here.
fn rank(stage: &str) -> Option<u8> {
    Some(match stage {
        "Starting installation"
        | "Installing"
        | "Waiting for bootkube"
        | "Writing image to disk"
        | "Copying registry data to disk"
        | "Waiting for control plane"
        | "Waiting for controller" => 0,
        REBOOTING => 1,
        BOOTED_WITH_LOCAL_IGNITION => 2,
        "Waiting for ignition" | "Configuring" => 3,
        BOOTED_WITH_CONTROL_PLANE_IGNITION => 4,
        JOINED => 5,
        DONE => 6,
        _ => return None,
    })
}

/// The stage a boot targets: the first boot from disk runs the pointer
/// ignition, every later one the control plane's.
pub(crate) fn target_for_boot(boot_number: u32) -> &'static str {
    if boot_number <= 1 {
        BOOTED_WITH_LOCAL_IGNITION
    } else {
        BOOTED_WITH_CONTROL_PLANE_IGNITION
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The installation is past the point where boot logs help: clean up.
    NothingLeft { why: String },
    /// Move the host forward to `target`.
    Report { target: &'static str },
    /// Keep shipping logs; leave the stage alone.
    Hold { why: String },
}

/// Host statuses that mean the installation of this host is over.
const FINISHED_STATUSES: [&str; 2] = ["installed", "added-to-existing-cluster"];

/// Decides what to do for boot `boot_number` given the host as the service
/// sees it, with the boot count alone picking the target (the agent uses
/// [`decide_target`] with the target the host's signals give).
pub fn decide(boot_number: u32, host: &Host) -> Decision {
    decide_target(target_for_boot(boot_number), host)
}

/// Decides whether moving `host` to `target` is due, forward only.
pub(crate) fn decide_target(target: &'static str, host: &Host) -> Decision {
    let current = host.current_stage();
    if FINISHED_STATUSES.contains(&host.status.as_str()) || matches!(current, Some(JOINED | DONE)) {
        return Decision::NothingLeft {
            why: format!(
                "host is {} at stage {:?}: nothing left to report",
                host.status,
                current.unwrap_or("none")
            ),
        };
    }
    if host.status == "error" || current == Some(FAILED) {
        return Decision::Hold {
            why: format!(
                "host is {} at stage {:?}: leaving the stage alone, shipping logs",
                host.status,
                current.unwrap_or("none")
            ),
        };
    }
    if host.cluster_id.is_none() {
        return Decision::Hold {
            why: "host is not bound to a cluster yet: the service accepts no stage".into(),
        };
    }
    if !INSTALLING_STATUSES.contains(&host.status.as_str()) {
        return Decision::Hold {
            why: format!("host status {:?} accepts no stage change", host.status),
        };
    }
    match current {
        None => Decision::Report { target },
        Some(current) => match is_before(host, current, target) {
            Some(true) => Decision::Report { target },
            Some(false) => Decision::Hold {
                why: format!(
                    "host is already at {current:?}, not before {target:?}: stage left as is"
                ),
            },
            None => Decision::Hold {
                why: format!("unknown current stage {current:?}: not risking a backward move"),
            },
        },
    }
}

/// Is `current` strictly before `target`? The service's own list for the
/// host's role decides when it names both; otherwise the ranks above.
fn is_before(host: &Host, current: &str, target: &str) -> Option<bool> {
    if let Some(list) = &host.progress_stages {
        let pos = |s: &str| list.iter().position(|x| x == s);
        if let (Some(c), Some(t)) = (pos(current), pos(target)) {
            return Some(c < t);
        }
    }
    Some(rank(current)? < rank(target)?)
}

/// The `progress_info` used on services that do not know the new stages: the
/// same stage with new info is always accepted, so the UI still shows it.
pub(crate) fn fallback_progress_info(target: &str, boot_number: u32) -> String {
    format!("{target} (boot {boot_number} from disk, reported by assisted-boot-reporter)")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(status: &str, stage: Option<&str>) -> Host {
        let progress = stage.map_or(String::new(), |s| {
            format!(r#","progress":{{"current_stage":"{s}"}}"#)
        });
        serde_json::from_str(&format!(
            r#"{{"id":"2c7d4e0a-8f9b-4d4e-9a55-0f1e2d3c4b5a","cluster_id":"11111111-2222-3333-4444-555555555555","status":"{status}","role":"master"{progress}}}"#
        ))
        .unwrap()
    }

    const ROLE_LISTS: [&[&str]; 4] = [
        &[
            "Starting installation",
            "Installing",
            "Writing image to disk",
            "Copying registry data to disk",
            "Rebooting",
            BOOTED_WITH_LOCAL_IGNITION,
            "Configuring",
            BOOTED_WITH_CONTROL_PLANE_IGNITION,
            "Joined",
            "Done",
        ],
        &[
            "Starting installation",
            "Installing",
            "Writing image to disk",
            "Copying registry data to disk",
            "Waiting for control plane",
            "Waiting for bootkube",
            "Waiting for controller",
            "Rebooting",
            BOOTED_WITH_LOCAL_IGNITION,
            "Configuring",
            BOOTED_WITH_CONTROL_PLANE_IGNITION,
            "Joined",
            "Done",
        ],
        &[
            "Starting installation",
            "Installing",
            "Writing image to disk",
            "Waiting for control plane",
            "Rebooting",
            BOOTED_WITH_LOCAL_IGNITION,
            "Waiting for ignition",
            "Configuring",
            BOOTED_WITH_CONTROL_PLANE_IGNITION,
            "Joined",
            "Done",
        ],
        &[
            "Starting installation",
            "Installing",
            "Waiting for bootkube",
            "Writing image to disk",
            "Copying registry data to disk",
            "Rebooting",
            BOOTED_WITH_LOCAL_IGNITION,
            BOOTED_WITH_CONTROL_PLANE_IGNITION,
            "Joined",
            "Done",
        ],
    ];

    #[test]
    fn ranks_agree_with_every_role_list_around_the_boot_stages() {
        for list in ROLE_LISTS {
            for (i, a) in list.iter().enumerate() {
                for b in &list[i + 1..] {
                    let (ra, rb) = (rank(a).unwrap(), rank(b).unwrap());
                    let involves_boot_stage = [a, b].iter().any(|s| {
                        [
                            BOOTED_WITH_LOCAL_IGNITION,
                            BOOTED_WITH_CONTROL_PLANE_IGNITION,
                        ]
                        .contains(s)
                    });
                    if involves_boot_stage {
                        assert!(ra < rb, "{a} must rank before {b}");
                    } else {
                        assert!(ra <= rb, "{a} must not rank after {b}");
                    }
                }
            }
        }
    }

    #[test]
    fn first_boot_after_rebooting_reports_local_ignition() {
        let h = host("installing-in-progress", Some(REBOOTING));
        assert_eq!(
            decide(1, &h),
            Decision::Report {
                target: BOOTED_WITH_LOCAL_IGNITION
            }
        );
    }

    #[test]
    fn second_boot_reports_control_plane_ignition_from_configuring_or_earlier() {
        for stage in [
            "Configuring",
            "Waiting for ignition",
            BOOTED_WITH_LOCAL_IGNITION,
            REBOOTING,
        ] {
            let h = host("installing-in-progress", Some(stage));
            assert_eq!(
                decide(2, &h),
                Decision::Report {
                    target: BOOTED_WITH_CONTROL_PLANE_IGNITION
                },
                "{stage}"
            );
            assert_eq!(
                decide(3, &h),
                Decision::Report {
                    target: BOOTED_WITH_CONTROL_PLANE_IGNITION
                },
                "{stage}"
            );
        }
    }

    #[test]
    fn never_moves_backwards() {
        for (boot, stage) in [
            (1, "Configuring"),
            (1, BOOTED_WITH_LOCAL_IGNITION),
            (1, "Waiting for ignition"),
            (2, BOOTED_WITH_CONTROL_PLANE_IGNITION),
        ] {
            let h = host("installing-in-progress", Some(stage));
            assert!(
                matches!(decide(boot, &h), Decision::Hold { .. }),
                "boot {boot} at {stage}"
            );
        }
    }

    #[test]
    fn joined_done_and_installed_end_the_job() {
        for (status, stage) in [
            ("installing-in-progress", JOINED),
            ("installed", DONE),
            ("installed", "Configuring"),
            ("added-to-existing-cluster", DONE),
            ("added-to-existing-cluster", REBOOTING),
        ] {
            assert!(
                matches!(
                    decide(2, &host(status, Some(stage))),
                    Decision::NothingLeft { .. }
                ),
                "{status} {stage}"
            );
        }
    }

    #[test]
    fn a_single_boot_moves_from_local_to_control_plane_ignition_forward_only() {
        let h = host("installing-in-progress", Some("Configuring"));
        assert!(matches!(
            decide_target(BOOTED_WITH_LOCAL_IGNITION, &h),
            Decision::Hold { .. }
        ));
        assert_eq!(
            decide_target(BOOTED_WITH_CONTROL_PLANE_IGNITION, &h),
            Decision::Report {
                target: BOOTED_WITH_CONTROL_PLANE_IGNITION
            }
        );
        let h = host(
            "installing-in-progress",
            Some(BOOTED_WITH_CONTROL_PLANE_IGNITION),
        );
        assert!(matches!(
            decide_target(BOOTED_WITH_LOCAL_IGNITION, &h),
            Decision::Hold { .. }
        ));
    }

    #[test]
    fn failed_and_error_hold_the_stage() {
        assert!(matches!(
            decide(1, &host("error", Some(REBOOTING))),
            Decision::Hold { .. }
        ));
        assert!(matches!(
            decide(1, &host("installing-in-progress", Some(FAILED))),
            Decision::Hold { .. }
        ));
    }

    #[test]
    fn pending_user_action_still_accepts_the_boot_stage() {
        let h = host("installing-pending-user-action", Some(REBOOTING));
        assert_eq!(
            decide(1, &h),
            Decision::Report {
                target: BOOTED_WITH_LOCAL_IGNITION
            }
        );
    }

    #[test]
    fn status_gate_unknown_stage_and_missing_cluster_hold() {
        assert!(matches!(
            decide(1, &host("known", Some(REBOOTING))),
            Decision::Hold { .. }
        ));
        assert!(matches!(
            decide(
                1,
                &host("installing-in-progress", Some("Reticulating splines"))
            ),
            Decision::Hold { .. }
        ));
        let mut h = host("installing-in-progress", Some(REBOOTING));
        h.cluster_id = None;
        assert!(matches!(decide(1, &h), Decision::Hold { .. }));
    }

    #[test]
    fn the_services_own_list_wins_when_it_names_both_stages() {
        let mut h = host("installing-in-progress", Some("Configuring"));
        // A hypothetical service ordering that puts Configuring first.
        h.progress_stages = Some(vec![
            "Configuring".into(),
            BOOTED_WITH_LOCAL_IGNITION.into(),
        ]);
        assert_eq!(
            decide(1, &h),
            Decision::Report {
                target: BOOTED_WITH_LOCAL_IGNITION
            }
        );
        // An upstream list without the new stages falls back to the ranks.
        h.progress_stages = Some(vec![REBOOTING.into(), "Configuring".into()]);
        assert!(matches!(decide(1, &h), Decision::Hold { .. }));
    }
}
