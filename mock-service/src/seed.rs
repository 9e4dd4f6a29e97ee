//! The seed document: the JSON a test, a demo script or `POST /admin/seed`
//! uses to describe the clusters, infra-envs, hosts and tokens the mock
//! starts with, and its validation into a `World`, whose hosts it places
//! (address, peers, names: `facts::place_group`) as it reads them.

use std::collections::HashSet;
use std::path::Path;
use std::time::SystemTime;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::facts;
use crate::model::{AgentToken, Cluster, Host, HostKind, InfraEnv, Mode, Role, Stage, World};

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Seed {
    /// Accepted `X-Secret-Key`; `None` disables agent auth (on-prem no-auth).
    #[serde(default)]
    pub agent_token: Option<String>,
    /// Tokens minted for one infra-env each (local JWT auth). With any of
    /// these or `agent_token` set, agent auth is on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_tokens: Vec<AgentToken>,
    /// Accepted `Authorization: Bearer` / `api_key`; `None` disables user auth.
    #[serde(default)]
    pub user_token: Option<String>,
    #[serde(default)]
    pub clusters: Vec<Cluster>,
    #[serde(default)]
    pub infra_envs: Vec<InfraEnv>,
    #[serde(default)]
    pub hosts: Vec<SeedHost>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SeedHost {
    pub id: Uuid,
    pub infra_env_id: Uuid,
    #[serde(default)]
    pub cluster_id: Option<Uuid>,
    #[serde(default)]
    pub requested_hostname: String,
    pub role: Role,
    #[serde(default)]
    pub bootstrap: bool,
    #[serde(default)]
    pub single_node: bool,
    /// `AddToExistingClusterHost` for a day-2 host.
    #[serde(default)]
    pub kind: HostKind,
    #[serde(default = "default_status")]
    pub status: String,
    /// Empty or absent means the host has not reported a stage yet.
    #[serde(default)]
    pub current_stage: Option<String>,
    #[serde(default)]
    pub progress_info: String,
}

fn default_status() -> String {
    "installing-in-progress".to_owned()
}

/// Statuses of the swagger `host.status` enum; a typo in a seed would
/// otherwise silently make every stage change a 409.
const HOST_STATUSES: [&str; 28] = [
    "discovering",
    "known",
    "disconnected",
    "insufficient",
    "disabled",
    "preparing-for-installation",
    "preparing-failed",
    "preparing-successful",
    "pending-for-input",
    "installing",
    "installing-in-progress",
    "installing-pending-user-action",
    "resetting-pending-user-action",
    "installed",
    "error",
    "resetting",
    "added-to-existing-cluster",
    "cancelled",
    "binding",
    "unbinding",
    "unbinding-pending-user-action",
    "known-unbound",
    "disconnected-unbound",
    "insufficient-unbound",
    "disabled-unbound",
    "discovering-unbound",
    "reclaiming",
    "reclaiming-rebooting",
];

pub fn is_known_status(s: &str) -> bool {
    HOST_STATUSES.contains(&s)
}

/// Fills in `high_availability_mode` and `control_plane_count` as upstream
/// `common.GetDefaultHighAvailabilityAndMasterCountParams` defaults them
/// (neither: `Full` and 3; `None` alone: 1; a count alone: `None` for 1),
/// except that a cluster naming neither but holding a `single_node` host is
/// single node. A host marked `single_node` in a multi-node cluster is a
/// seed error.
fn resolve_topology(c: &mut Cluster, single_node_hosts: bool) -> anyhow::Result<()> {
    let single = match (c.high_availability_mode.as_deref(), c.control_plane_count) {
        (None, None) => single_node_hosts,
        (Some("None") | None, Some(1)) | (Some("None"), None) => true,
        (None, Some(_)) | (Some("Full"), None) => false,
        (Some("Full"), Some(n)) if n != 1 => false,
        (Some(m), n) => bail!(
            "seed: cluster {} has high_availability_mode {m:?} with control_plane_count {n:?}; \
             use \"Full\" (2 to 5 control plane nodes) or \"None\" (1)",
            c.id
        ),
    };
    let (mode, count) = if single {
        ("None", 1)
    } else {
        ("Full", c.control_plane_count.unwrap_or(3))
    };
    if !(1..=5).contains(&count) {
        bail!(
            "seed: cluster {} has control_plane_count {count}, not 1 to 5",
            c.id
        );
    }
    if single_node_hosts && count != 1 {
        bail!(
            "seed: cluster {} is not single node (high_availability_mode {mode}) but has a host with \"single_node\": true",
            c.id
        );
    }
    c.high_availability_mode = Some(mode.to_owned());
    c.control_plane_count = Some(count);
    Ok(())
}

impl Seed {
    pub fn from_file(path: impl AsRef<Path>) -> anyhow::Result<Seed> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading seed {}", path.display()))?;
        Seed::from_json(&text).with_context(|| format!("parsing seed {}", path.display()))
    }

    pub fn from_json(text: &str) -> anyhow::Result<Seed> {
        Ok(serde_json::from_str(text)?)
    }

    /// Checks references and values, and builds the world the server runs on.
    pub fn into_world(self, mode: Mode) -> anyhow::Result<World> {
        let now = SystemTime::now();
        let mut seen = HashSet::new();
        for id in self
            .clusters
            .iter()
            .map(|c| c.id)
            .chain(self.infra_envs.iter().map(|e| e.id))
            .chain(self.hosts.iter().map(|h| h.id))
        {
            if !seen.insert(id) {
                bail!("seed: id {id} is used more than once");
            }
        }
        let cluster_ids: HashSet<Uuid> = self.clusters.iter().map(|c| c.id).collect();
        let mut clusters = self.clusters;
        for c in &mut clusters {
            let single_node_hosts = self
                .hosts
                .iter()
                .any(|h| h.cluster_id == Some(c.id) && h.single_node);
            resolve_topology(c, single_node_hosts)?;
            c.created_at = Some(now);
        }
        for env in &self.infra_envs {
            if let Some(c) = env.cluster_id {
                if !cluster_ids.contains(&c) {
                    bail!(
                        "seed: infra_env {} refers to cluster {c}, which is not in \"clusters\"",
                        env.id
                    );
                }
            }
        }
        let mut hosts = Vec::with_capacity(self.hosts.len());
        for mut h in self.hosts {
            // The cluster decides: upstream's single-node test reads its
            // control plane count (`hostutil.IsSingleNode`).
            if let Some(c) = h
                .cluster_id
                .and_then(|c| clusters.iter().find(|x| x.id == c))
            {
                h.single_node = c.is_single_node();
            }
            let Some(env) = self.infra_envs.iter().find(|e| e.id == h.infra_env_id) else {
                bail!(
                    "seed: host {} refers to infra_env {}, which is not in \"infra_envs\"",
                    h.id,
                    h.infra_env_id
                );
            };
            if let Some(c) = h.cluster_id {
                if !cluster_ids.contains(&c) {
                    bail!(
                        "seed: host {} refers to cluster {c}, which is not in \"clusters\"",
                        h.id
                    );
                }
                if env.cluster_id.is_some_and(|ec| ec != c) {
                    bail!(
                        "seed: host {} is in cluster {c} but its infra_env {} is bound to cluster {}",
                        h.id,
                        env.id,
                        env.cluster_id.unwrap_or_default()
                    );
                }
            }
            if !is_known_status(&h.status) {
                bail!("seed: host {} has unknown status {:?}", h.id, h.status);
            }
            let current_stage = match h.current_stage.as_deref() {
                None | Some("") => None,
                Some(s) => Some(Stage::parse(s, mode).with_context(|| {
                    format!(
                        "seed: host {} has unknown current_stage {s:?} ({})",
                        h.id,
                        Stage::enum_message(mode)
                    )
                })?),
            };
            let status_info = current_stage.map_or_else(String::new, |s| s.as_str().to_owned());
            let mut host = Host {
                id: h.id,
                infra_env_id: h.infra_env_id,
                cluster_id: h.cluster_id,
                requested_hostname: h.requested_hostname,
                role: h.role,
                bootstrap: h.bootstrap,
                single_node: h.single_node,
                kind: h.kind,
                status: h.status,
                status_info,
                current_stage,
                progress_info: h.progress_info,
                stage_started_at: current_stage.map(|_| now),
                stage_updated_at: current_stage.map(|_| now),
                stage_timed_out: false,
                logs_collected_at: None,
                logs_info: "",
                created_at: now,
                updated_at: now,
                registered_at: now,
                checked_in_at: now,
                status_updated_at: now,
                placement: crate::facts::Placement::default(),
                facts: std::sync::OnceLock::new(),
                history: Vec::new(),
            };
            // The seeded stage opens the history so the page shows where the
            // host started from.
            if let Some(stage) = current_stage {
                host.history.push(crate::model::HistoryEntry {
                    stage: stage.as_str(),
                    progress_info: host.progress_info.clone(),
                    at: now,
                });
            }
            hosts.push(host);
        }
        for t in &self.agent_tokens {
            if t.token.is_empty() {
                bail!("seed: an agent_tokens entry has an empty token");
            }
        }
        let infra_env_ids: Vec<Uuid> = self.infra_envs.iter().map(|e| e.id).collect();
        let seeded_at = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(0));
        place(&mut hosts, &clusters, &infra_env_ids, seeded_at);
        Ok(World {
            agent_token: self.agent_token,
            agent_tokens: self.agent_tokens,
            user_token: self.user_token,
            clusters,
            infra_envs: self.infra_envs,
            hosts,
            bundles: std::collections::BTreeMap::new(),
        })
    }
}

/// Places every host. Hosts of one cluster (or of one unbound infra-env)
/// share a /24 and list each other (up to `facts::MAX_PEERS`) in their
/// connectivity report.
fn place(hosts: &mut [Host], clusters: &[Cluster], infra_env_ids: &[Uuid], seeded_at_unix: i64) {
    let mut groups: Vec<(Option<Uuid>, Uuid, Vec<usize>)> = Vec::new();
    for (i, h) in hosts.iter().enumerate() {
        let key = (
            h.cluster_id,
            if h.cluster_id.is_some() {
                Uuid::nil()
            } else {
                h.infra_env_id
            },
        );
        match groups.iter_mut().find(|g| (g.0, g.1) == key) {
            Some(g) => g.2.push(i),
            None => groups.push((key.0, key.1, vec![i])),
        }
    }
    for (cluster_id, infra_env_id, members) in groups {
        let cluster = cluster_id.and_then(|c| clusters.iter().find(|x| x.id == c));
        let subnet = match cluster_id {
            Some(c) => facts::subnet_of(clusters.iter().position(|x| x.id == c).unwrap_or(0), true),
            None => facts::subnet_of(
                infra_env_ids
                    .iter()
                    .position(|e| *e == infra_env_id)
                    .unwrap_or(0),
                false,
            ),
        };
        let domain = cluster.map(|c| facts::cluster_domain(&c.name, c.base_dns_domain.as_deref()));
        let ids: Vec<(Uuid, &str)> = members
            .iter()
            .map(|&i| (hosts[i].id, hosts[i].requested_hostname.as_str()))
            .collect();
        let placements = facts::place_group(&ids, subnet, domain.as_deref(), seeded_at_unix);
        for (&i, placement) in members.iter().zip(placements) {
            hosts[i].placement = placement;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: &str = "11111111-1111-1111-1111-111111111111";
    const E: &str = "22222222-2222-2222-2222-222222222222";
    const H: &str = "33333333-3333-3333-3333-333333333333";

    fn doc(host_extra: &str) -> String {
        format!(
            r#"{{"agent_token":"a","clusters":[{{"id":"{C}","name":"demo","openshift_version":"4.17"}}],
               "infra_envs":[{{"id":"{E}","cluster_id":"{C}","name":"ie"}}],
               "hosts":[{{"id":"{H}","infra_env_id":"{E}","cluster_id":"{C}","role":"master"{host_extra}}}]}}"#
        )
    }

    #[test]
    fn parses_and_validates() {
        let seed = Seed::from_json(&doc(r#","current_stage":"Rebooting""#)).unwrap();
        let world = seed.into_world(Mode::Enhanced).unwrap();
        assert_eq!(world.hosts[0].current_stage, Some(Stage::Rebooting));
        assert_eq!(world.hosts[0].status, "installing-in-progress");
        assert_eq!(world.user_token, None);
    }

    #[test]
    fn rejects_unknown_fields_and_bad_references() {
        let err = Seed::from_json(&doc(r#","colour":"red""#)).unwrap_err();
        assert!(err.to_string().contains("unknown field `colour`"), "{err}");
        let bad = doc("").replace(
            &format!(r#""infra_env_id":"{E}""#),
            &format!(r#""infra_env_id":"{C}""#),
        );
        let err = Seed::from_json(&bad)
            .unwrap()
            .into_world(Mode::Enhanced)
            .unwrap_err();
        assert!(err.to_string().contains("not in \"infra_envs\""), "{err}");
    }

    #[test]
    fn new_stage_in_seed_is_refused_in_upstream_mode() {
        let seed =
            Seed::from_json(&doc(r#","current_stage":"Booted with local ignition""#)).unwrap();
        assert!(seed.clone().into_world(Mode::Enhanced).is_ok());
        assert!(seed.into_world(Mode::Upstream).is_err());
    }
}
