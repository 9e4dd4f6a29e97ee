// What the mock is seeded with, and what the test expects back, written
// down independently of the mock: the role stage lists are upstream's
// (assisted-service internal/host/common.go BootstrapStages, MasterStages,
// WorkerStages, SnoStages) with this project's two boot stages inserted as
// docs/upstream-integration.md says; compat mode drops the two.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { repo } from "./harness.mjs";

export const LOCAL_IGN = "Booted with local ignition";
export const CP_IGN = "Booted with control plane ignition";
export const NEW_STAGES = [LOCAL_IGN, CP_IGN];

const LISTS = {
  bootstrap: [
    "Starting installation", "Installing", "Writing image to disk", "Copying registry data to disk",
    "Waiting for control plane", "Waiting for bootkube", "Waiting for controller", "Rebooting",
    LOCAL_IGN, "Configuring", CP_IGN, "Joined", "Done",
  ],
  master: [
    "Starting installation", "Installing", "Writing image to disk", "Copying registry data to disk",
    "Rebooting", LOCAL_IGN, "Configuring", CP_IGN, "Joined", "Done",
  ],
  worker: [
    "Starting installation", "Installing", "Writing image to disk", "Waiting for control plane",
    "Rebooting", LOCAL_IGN, "Waiting for ignition", "Configuring", CP_IGN, "Joined", "Done",
  ],
  sno: [
    "Starting installation", "Installing", "Waiting for bootkube", "Writing image to disk",
    "Copying registry data to disk", "Rebooting", LOCAL_IGN, CP_IGN, "Joined", "Done",
  ],
};

export const MODES = {
  enhanced: { args: [], title: "Enhanced assisted-service (mock): the real assisted UI" },
  compat: { args: ["--upstream-compat"], title: "Today's upstream assisted-service (mock --upstream-compat): the real assisted UI" },
};

/** A role's stage list as the mode's service defines it. */
export function stageList(kind, mode) {
  const list = LISTS[kind];
  return mode === "enhanced" ? [...list] : list.filter((s) => !NEW_STAGES.includes(s));
}

export const GROUPS = [
  { key: "bootstrap", title: "Bootstrap master: every stage", role: "master", bootstrap: true, single_node: false },
  { key: "master", title: "Master: every stage", role: "master", bootstrap: false, single_node: false },
  { key: "worker", title: "Worker: every stage", role: "worker", bootstrap: false, single_node: false },
  { key: "sno", title: "Single node (bootstrap, single_node): every stage", role: "master", bootstrap: true, single_node: true },
];

/** The list a host's progress is measured against (upstream GetStagesByRole). */
export function ownKind(h) {
  if (h.bootstrap) return h.single_node ? "sno" : "bootstrap";
  return h.role === "worker" ? "worker" : "master";
}

/**
 * The list the infra-env host list sends as progress_stages. Upstream's
 * V2ListHosts calls customizeHost(nil, host), so a single-node host is
 * listed with the multi-node bootstrap list; the enhanced service passes
 * the cluster (docs/upstream-integration.md).
 */
export function listedKind(h, mode) {
  const k = ownKind(h);
  return k === "sno" && mode === "compat" ? "bootstrap" : k;
}

/**
 * Step N of M as the real UI should print it, from the service's rules
 * alone: installation_percentage = position * 100 / len (integer; Done is
 * 100) on the host's own list, then ui-lib rounds pct/100 * listed length.
 */
export function expectedStep(h, stage, mode) {
  const own = stageList(ownKind(h), mode);
  const listed = stageList(listedKind(h, mode), mode);
  const pct = stage === "Done" ? 100 : Math.floor(((own.indexOf(stage) + 1) * 100) / own.length);
  return { n: Math.round((pct / 100) * listed.length), m: listed.length, pct, listed };
}

/**
 * The reporter's fallback progress_info, built from the format string in
 * src/stage.rs (fallback_progress_info) so the test follows the agent.
 */
export function fallbackText(target, bootNumber) {
  const src = readFileSync(join(repo, "src/stage.rs"), "utf8");
  const m = src.match(/pub(?:\(crate\))? fn fallback_progress_info\([^)]*\) -> String \{\s*format!\("([^"]+)"\)/);
  if (!m) throw new Error("src/stage.rs: fallback_progress_info's format! string not found");
  return m[1].replace("{target}", target).replace("{boot_number}", String(bootNumber));
}

/** A diagnosis headline as the agent puts it into progress_info. */
export const HEADLINE = "quay.io did not resolve (lookup quay.io on 192.168.122.1:53: server misbehaving)";

const uuid = (space, n) => `5eed${space.toString(16).padStart(4, "0")}-0000-4000-8000-${n.toString(16).padStart(12, "0")}`;

/**
 * The seed of the main mock and of the timeout mock for a mode, and the
 * page's sections (one infra-env each).
 */
export function buildSeeds(mode) {
  const clusters = [];
  const infraEnvs = [];
  const hosts = [];
  const sections = [];
  let n = 0;
  const addEnv = (key, title) => {
    const cluster = { id: uuid(1, ++n), name: key, openshift_version: "4.18" };
    const env = { id: uuid(2, n), cluster_id: cluster.id, name: `${key}_infra-env` };
    clusters.push(cluster);
    infraEnvs.push(env);
    sections.push({ key, title, infraEnvId: env.id });
    return env;
  };
  const addHost = (env, g, name, stage, progressInfo = "", status = undefined) => {
    const h = {
      id: uuid(3, ++n),
      infra_env_id: env.id,
      cluster_id: env.cluster_id,
      requested_hostname: name,
      role: g.role,
      bootstrap: g.bootstrap,
      single_node: g.single_node,
      status: status ?? (stage === "Done" ? "installed" : "installing-in-progress"),
      current_stage: stage,
      progress_info: progressInfo,
    };
    hosts.push(h);
    return h;
  };

  for (const g of GROUPS) {
    const env = addEnv(g.key, g.title);
    stageList(g.key, mode).forEach((stage, i) => {
      addHost(env, g, `${g.key}-${String(i + 1).padStart(2, "0")}`, stage);
    });
  }

  const master = GROUPS[1];
  const worker = GROUPS[2];
  const infoEnv = addEnv("progress-info", "progress_info from assisted-boot-reporter");
  if (mode === "enhanced") {
    // The agent sets the new stage itself and puts the diagnosis headline in.
    addHost(infoEnv, master, "diag-local-ignition", LOCAL_IGN, HEADLINE);
  }
  // On a service that refuses the new stages the agent keeps the stage and
  // says so in progress_info, with the headline after it.
  addHost(infoEnv, master, "fallback-rebooting", "Rebooting", `${fallbackText(LOCAL_IGN, 1)}; ${HEADLINE}`);
  addHost(infoEnv, worker, "fallback-configuring", "Configuring", fallbackText(CP_IGN, 2));

  const main = { clusters, infra_envs: infraEnvs, hosts };

  // A second mock, run with a huge --time-scale: its hosts' stages time out
  // at once (upstream's monitor: Rebooting -> installing-pending-user-action,
  // any other stage -> error), which sets progress.stage_timed_out.
  const t = { clusters: [], infra_envs: [], hosts: [] };
  const tEnv = (() => {
    const before = { c: clusters.length, e: infraEnvs.length };
    const env = addEnv("timed-out", "Stage timed out (a second mock, --time-scale 1000000)");
    t.clusters.push(...clusters.splice(before.c));
    t.infra_envs.push(...infraEnvs.splice(before.e));
    return env;
  })();
  const before = hosts.length;
  addHost(tEnv, master, "timeout-rebooting", "Rebooting");
  addHost(tEnv, worker, "timeout-error", mode === "enhanced" ? CP_IGN : "Configuring");
  t.hosts.push(...hosts.splice(before));

  return { main, timeout: t, sections, timeoutEnvId: tEnv.id };
}
