// The mock assisted-service page: clusters, hosts and their stages, stage
// history, host_boot bundles and a browser for their contents. Polls
// /admin/state; the host cards are redrawn when the state changes while an
// opened bundle browser is kept, so reading a log is not interrupted.
"use strict";

const POLL_MS = 2000;

// ---------- small DOM helpers (no innerHTML with data: everything is text) ----------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "style") node.setAttribute("style", v);
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function parseTime(s) {
  if (!s) return null;
  const t = Date.parse(s);
  return Number.isNaN(t) ? null : t;
}

// Times are shown in UTC: the records, journals and the service all use it.
function clock(s) {
  const t = parseTime(s);
  return t === null ? "—" : new Date(t).toISOString().slice(11, 19);
}

function duration(seconds) {
  if (seconds === null || seconds === undefined || Number.isNaN(seconds)) return "—";
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, "0")}m`;
}

function size(bytes) {
  if (bytes === null || bytes === undefined) return "—";
  const units = ["B", "KiB", "MiB", "GiB"];
  let v = bytes;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

function hostName(h) {
  return h.requested_hostname || h.id;
}

function statusLabel(s) {
  return (s || "unknown").replace(/-/g, " ");
}

function statusClass(s) {
  if (s === "error" || s === "cancelled") return "danger";
  if (s === "installed") return "success";
  if ((s || "").includes("pending-user-action")) return "warning";
  if ((s || "").startsWith("installing")) return "info";
  return "neutral";
}

function resultClass(r) {
  return { success: "success", failure: "danger", running: "info", killed: "warning" }[r] || "neutral";
}

function resultLabel(r) {
  return { success: "succeeded", failure: "failed", running: "no end yet", killed: "killed by a restart" }[r] || r || "unknown";
}

async function getJSON(url) {
  const resp = await fetch(url, { cache: "no-store" });
  const body = await resp.json().catch(() => null);
  if (!resp.ok) {
    const why = body && (body.reason || body.message);
    throw new Error(why || `${resp.status} ${resp.statusText}`);
  }
  return body;
}

// ---------- tooltip for chart bars ----------

const tooltip = {
  node: null,
  show(target, lines) {
    const t = this.node || (this.node = document.getElementById("tooltip"));
    t.replaceChildren(...lines);
    t.hidden = false;
    const r = target.getBoundingClientRect();
    const top = window.scrollY + r.bottom + 6;
    const left = Math.min(window.scrollX + r.left, window.scrollX + document.documentElement.clientWidth - t.offsetWidth - 12);
    t.style.top = `${top}px`;
    t.style.left = `${Math.max(8, left)}px`;
  },
  hide() {
    if (this.node) this.node.hidden = true;
  },
};

// ---------- page state ----------

const ui = {
  state: null,
  lastJSON: "",
  // The open bundle browser: one at a time.
  browser: null,
  errors: 0,
  // Per cluster: the roll-up and the signature it was fetched for.
  rollups: {},
};

function bundleBase(clusterId, hostId, logsType) {
  return `/admin/bundles/${encodeURIComponent(clusterId)}/${encodeURIComponent(hostId || "cluster")}/${encodeURIComponent(logsType)}`;
}

// ---------- header ----------

function renderMeta(state, ok) {
  const meta = document.getElementById("meta");
  const badges = [
    el("span", { class: `pill ${state && state.mode === "upstream" ? "warning" : "info"}` },
      state ? (state.mode === "upstream" ? "upstream-compat" : "enhanced: boot stages + host_boot") : "…"),
    state && el("span", { class: "pill neutral" }, `agent auth ${state.agent_auth ? "on" : "off"}`),
    state && el("span", { class: "pill neutral" }, `user auth ${state.user_auth ? "on" : "off"}`),
    el("span", { class: `live ${ok ? "ok" : "down"}`, title: "The page polls /admin/state every 2 s" },
      el("span", { class: "dot", "aria-hidden": "true" }),
      ok ? `live · ${clock(state && state.now)} UTC` : "disconnected · retrying"),
  ];
  meta.replaceChildren(...badges.filter(Boolean));
}

// ---------- stage progress ----------

function stageBar(host, newStages) {
  const stages = host.progress_stages || [];
  const current = host.current_stage;
  const failed = current === "Failed";
  const lastIndex = failed ? stagesReached(host, stages) : stages.indexOf(current);
  if (stages.length === 0) {
    return el("p", { class: "muted" }, "No stage list for this role yet (auto-assign).");
  }
  const items = stages.map((s, i) => {
    const isNew = newStages.includes(s);
    let cls = "todo";
    if (i < lastIndex || (current === "Done" && i <= lastIndex)) cls = "done";
    else if (i === lastIndex) cls = failed ? "failed" : "current";
    return el("li", {
      class: `stage ${cls}${isNew ? " new" : ""}`,
      "aria-current": cls === "current" ? "step" : null,
      title: `${s}${isNew ? " (new stage)" : ""}`,
      dataset: { stage: s },
    },
    el("span", { class: "seg", "aria-hidden": "true" }),
    el("span", { class: "stage-label" }, s, isNew ? el("span", { class: "new-tag" }, "new") : null));
  });
  return el("ol", {
    class: "stages",
    "aria-label": `Installation stages of ${hostName(host)}: ${host.installation_percentage}% done`,
  }, items);
}

// For a failed host: the last stage of the list it reached before Failed.
function stagesReached(host, stages) {
  let best = -1;
  for (const e of host.stage_history || []) {
    const i = stages.indexOf(e.stage);
    if (i > best) best = i;
  }
  return best + 1;
}

// ---------- stage history ----------

// Consecutive entries of one stage (progress_info refreshes) are one span.
function historySpans(host, nowMs) {
  const spans = [];
  for (const e of host.stage_history || []) {
    const at = parseTime(e.at);
    const last = spans[spans.length - 1];
    if (last && last.stage === e.stage) {
      last.info = e.progress_info || last.info;
      last.updates += 1;
      continue;
    }
    if (last) last.end = at;
    spans.push({ stage: e.stage, start: at, end: null, info: e.progress_info, updates: 1, at: e.at });
  }
  const lastSpan = spans[spans.length - 1];
  if (lastSpan) lastSpan.ongoing = !["Done", "Failed"].includes(lastSpan.stage);
  for (const s of spans) {
    if (s.end === null) s.end = s.ongoing ? nowMs : s.start;
  }
  return spans;
}

function historyView(host, newStages, nowMs) {
  const spans = historySpans(host, nowMs);
  if (spans.length === 0) {
    return el("p", { class: "muted" }, "No stage reported yet.");
  }
  const t0 = spans[0].start;
  const t1 = Math.max(nowMs, spans[spans.length - 1].end, t0 + 1000);
  const rows = spans.map((s) => {
    const left = ((s.start - t0) / (t1 - t0)) * 100;
    const width = Math.max(((s.end - s.start) / (t1 - t0)) * 100, 0.6);
    const isNew = newStages.includes(s.stage);
    return el("tr", { class: s.ongoing ? "ongoing" : "" },
      el("td", { class: "hist-time", title: s.at }, clock(s.at)),
      el("th", { scope: "row", class: "hist-stage" }, s.stage, isNew ? el("span", { class: "new-tag" }, "new") : null),
      el("td", { class: "hist-dur" }, s.ongoing ? `${duration((s.end - s.start) / 1000)} so far` : duration((s.end - s.start) / 1000)),
      el("td", { class: "hist-bar" },
        el("span", {
          class: `hbar${s.stage === "Failed" ? " failed" : ""}${isNew ? " new" : ""}${s.ongoing ? " ongoing" : ""}`,
          style: `left:${left.toFixed(2)}%;width:${width.toFixed(2)}%`,
          "aria-hidden": "true",
        })),
      el("td", { class: "hist-info" }, s.info || ""));
  });
  return el("table", { class: "history" },
    el("caption", { class: "sr-only" }, `Stage history of ${hostName(host)}`),
    el("thead", {}, el("tr", {},
      el("th", { scope: "col" }, "Started"),
      el("th", { scope: "col" }, "Stage"),
      el("th", { scope: "col" }, "Duration"),
      el("th", { scope: "col", class: "hist-bar-head" }, "Timeline"),
      el("th", { scope: "col" }, "Progress info"))),
    el("tbody", {}, rows));
}

// ---------- bundles ----------

function bundlesView(clusterId, hostId, bundles, label) {
  if (!bundles || bundles.length === 0) {
    return el("p", { class: "muted" }, "No logs uploaded yet.");
  }
  const rows = bundles.map((b) => {
    const base = bundleBase(clusterId, hostId, b.logs_type);
    const open = ui.browser && ui.browser.base === base;
    return el("tr", { class: open ? "selected" : "" },
      el("th", { scope: "row" }, el("code", {}, b.logs_type)),
      el("td", {}, size(b.size)),
      el("td", { title: b.uploaded_at }, `${clock(b.uploaded_at)} UTC`),
      el("td", {}, String(b.uploads)),
      el("td", {}, b.valid ? el("span", { class: "pill success" }, "valid tar.gz") : el("span", { class: "pill danger" }, "not a tar.gz")),
      el("td", {}, String((b.members || []).length)),
      el("td", { class: "actions" },
        el("a", { class: "btn link", href: base, download: "" }, "Download"),
        el("button", {
          class: `btn ${open ? "secondary" : "primary"}`,
          type: "button",
          "aria-expanded": open ? "true" : "false",
          disabled: !b.valid,
          onclick: () => (open ? closeBrowser() : openBrowser(base, b, label)),
        }, open ? "Close" : "Browse")));
  });
  return el("table", { class: "bundles" },
    el("thead", {}, el("tr", {},
      ["Logs", "Size", "Uploaded", "Uploads", "Archive", "Members", ""].map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, rows));
}

// ---------- cluster roll-up ----------

// What changes a cluster's roll-up: its hosts' stages and host_boot uploads.
function rollupSignature(hosts) {
  return JSON.stringify(hosts.map((h) => [h.id, h.current_stage,
    ((h.bundles || []).find((b) => b.logs_type === "host_boot") || {}).uploaded_at]));
}

// Fetched again only when the signature changes; the page is redrawn when
// the answer arrives.
function rollupOf(clusterId, hosts) {
  const sig = rollupSignature(hosts);
  const known = ui.rollups[clusterId];
  if (known && known.sig === sig) return known;
  const entry = { sig, data: known && known.data, error: null };
  ui.rollups[clusterId] = entry;
  getJSON(`/admin/clusters/${encodeURIComponent(clusterId)}/rollup`)
    .then((data) => { entry.data = data; entry.error = null; })
    .catch((e) => { entry.error = e.message; })
    .finally(() => { if (ui.rollups[clusterId] === entry && ui.state) render(ui.state); });
  return entry;
}

// The cluster's hosts read together, as `inspect BUNDLE…` prints them: a
// row per host (host, role, stage, headline), then the causes several hosts
// share, most hosts first.
function rollupView(cluster, hosts) {
  const r = rollupOf(cluster.id, hosts);
  const head = el("h4", {}, "Cluster roll-up");
  if (!r.data) {
    return el("section", { class: "card panel rollup", "aria-label": "Cluster roll-up" }, head,
      r.error ? el("p", { class: "error-text" }, `Could not read the roll-up: ${r.error}`) : loading("roll-up"));
  }
  const pill = { error: "danger", warning: "warning", info: "neutral" };
  const names = new Map(r.data.hosts.map((h) => [h.host_id, h.name]));
  const rows = r.data.hosts.map((h) => el("tr", { dataset: { host: h.host_id } },
    el("th", { scope: "row" }, h.name),
    el("td", {}, h.role, h.bootstrap ? " · bootstrap" : ""),
    el("td", {}, h.stage || "not reported"),
    el("td", { class: "headline" },
      h.error ? el("span", { class: "error-text" }, h.error)
        : !h.bundle ? el("span", { class: "muted" }, "no host_boot bundle yet")
          : h.headline || el("span", { class: "muted" }, h.findings ? "infos only" : "no finding"))));
  const shared = r.data.shared;
  return el("section", { class: "card panel rollup", "aria-label": "Cluster roll-up" }, head,
    el("table", { class: "rollup-hosts" },
      el("thead", {}, el("tr", {}, ["Host", "Role", "Stage", "Headline"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, rows)),
    el("h4", { class: "shared-head" }, "Causes shared by several hosts"),
    shared.length === 0 ? el("p", { class: "muted" }, "None: no finding on more than one host.")
      : el("ol", { class: "finding-list shared-causes" }, shared.map((c) => el("li", {
        class: `finding ${c.severity}`, "data-category": c.category, "data-severity": c.severity,
      },
      el("div", { class: "finding-head" },
        el("span", { class: `pill small ${pill[c.severity] || "neutral"}` }, c.severity),
        el("code", { class: "category" }, c.category),
        el("span", { class: "finding-summary" }, c.summary)),
      el("p", { class: "muted small shared-hosts" },
        `on ${c.hosts.length} of ${r.data.hosts.length} hosts: ${c.hosts.map((id) => names.get(id) || id).join(", ")}`),
      el("p", { class: "hint muted small" }, c.hint)))));
}

// ---------- hosts and clusters ----------

function hostCard(state, host) {
  const nowMs = parseTime(state.now) || Date.now();
  const newStages = state.new_stages || [];
  const isNewStage = newStages.includes(host.current_stage);
  const since = parseTime(host.stage_started_at);
  const card = el("article", { class: "card host", id: `host-${host.id}`, dataset: { host: host.id } },
    el("div", { class: "host-head" },
      el("div", {},
        el("h3", {}, hostName(host)),
        el("div", { class: "host-tags" },
          el("span", { class: "pill neutral" }, host.role, host.bootstrap ? " · bootstrap" : "", host.single_node ? " · single node" : ""),
          el("span", { class: `pill ${statusClass(host.status)}`, title: host.status_info }, statusLabel(host.status)),
          el("code", { class: "id" }, host.id))),
      el("div", { class: "pct", "aria-label": `${host.installation_percentage}% installed` },
        el("span", { class: "pct-num" }, `${host.installation_percentage}%`),
        el("span", { class: "pct-bar", "aria-hidden": "true" },
          el("span", { style: `width:${host.installation_percentage}%` })))),
    stageBar(host, newStages),
    el("p", { class: "current-line" },
      el("span", { class: "muted" }, "Current stage "),
      el("strong", { class: "current-stage", dataset: { stage: host.current_stage || "" } }, host.current_stage || "not reported"),
      isNewStage ? el("span", { class: "new-tag" }, "new") : null,
      since ? el("span", { class: "muted" }, ` · since ${clock(host.stage_started_at)} UTC (${duration((nowMs - since) / 1000)})`) : null,
      host.progress_info ? el("span", { class: "progress-info" }, host.progress_info) : null),
    el("div", { class: "host-cols" },
      el("section", { class: "panel" },
        el("h4", {}, "Stage history"),
        historyView(host, newStages, nowMs)),
      el("section", { class: "panel" },
        el("h4", {}, "Logs"),
        bundlesView(host.cluster_id, host.id, host.bundles, hostName(host)))));
  return card;
}

function render(state) {
  const app = document.getElementById("app");
  app.setAttribute("aria-busy", "false");
  const sections = [];
  if (state.clusters.length === 0 && state.hosts.length === 0) {
    sections.push(el("p", { class: "empty" }, "No state yet: seed the mock with ", el("code", {}, "POST /admin/seed"), "."));
  }
  for (const c of state.clusters) {
    const hosts = state.hosts.filter((h) => h.cluster_id === c.id);
    sections.push(el("section", { class: "cluster", "aria-labelledby": `cluster-${c.id}` },
      el("div", { class: "cluster-head" },
        el("h2", { id: `cluster-${c.id}` }, c.name),
        el("span", { class: "muted" }, c.openshift_version ? `OpenShift ${c.openshift_version}` : ""),
        el("span", { class: "muted" }, `${hosts.length} host${hosts.length === 1 ? "" : "s"}`),
        el("code", { class: "id" }, c.id)),
      hosts.length ? rollupView(c, hosts) : null,
      c.bundles && c.bundles.length ? el("section", { class: "card panel" },
        el("h4", {}, "Cluster-level logs"), bundlesView(c.id, null, c.bundles, c.name)) : null,
      hosts.map((h) => hostCard(state, h))));
  }
  const unbound = state.hosts.filter((h) => !h.cluster_id);
  if (unbound.length) {
    sections.push(el("section", { class: "cluster" },
      el("div", { class: "cluster-head" }, el("h2", {}, "Hosts without a cluster")),
      unbound.map((h) => hostCard(state, h))));
  }
  // The browser survives the redraw: it is moved, not rebuilt.
  const browserNode = ui.browser && ui.browser.node;
  app.replaceChildren(...sections);
  if (browserNode) placeBrowser();
}

// ---------- bundle browser ----------

function openBrowser(base, bundle, label) {
  ui.browser = {
    base,
    label,
    logsType: bundle.logs_type,
    uploadedAt: bundle.uploaded_at,
    uploads: bundle.uploads,
    size: bundle.size,
    tab: "timeline",
    member: null,
    expanded: new Set(),
    filter: "",
    data: { timeline: null, manifest: null, members: null, text: null, diagnosis: null },
    line: null,
    node: el("section", { class: "card browser", "aria-label": "Bundle browser" }),
  };
  render(ui.state);
  loadBrowser();
}

function closeBrowser() {
  ui.browser = null;
  tooltip.hide();
  render(ui.state);
}

// Puts the browser right under the card of the host whose bundle it shows.
function placeBrowser() {
  const b = ui.browser;
  const row = [...document.querySelectorAll("table.bundles a.btn.link")].find((a) => a.getAttribute("href") === b.base);
  const card = row && row.closest(".card");
  if (card) card.after(b.node);
  else document.getElementById("app").append(b.node);
}

async function loadBrowser() {
  const b = ui.browser;
  b.data = { timeline: null, manifest: null, members: null, text: b.data.text, diagnosis: null };
  drawBrowser();
  const settle = (key) => (v) => {
    if (ui.browser !== b) return;
    b.data[key] = v;
    drawBrowser();
  };
  await Promise.all([
    getJSON(`${b.base}/timeline`).then(settle("timeline"), (e) => settle("timeline")({ error: e.message })),
    getJSON(`${b.base}/manifest`).then(settle("manifest"), (e) => settle("manifest")({ error: e.message })),
    getJSON(`${b.base}/members`).then(settle("members"), (e) => settle("members")({ error: e.message })),
    getJSON(`${b.base}/diagnosis`).then(settle("diagnosis"), (e) => settle("diagnosis")({ error: e.message })),
  ]);
  if (b.member && ui.browser === b) viewMember(b.member, b.line);
}

function drawBrowser() {
  const b = ui.browser;
  if (!b) return;
  const stale = Boolean(currentBundle(b) && currentBundle(b).uploaded_at !== b.uploadedAt);
  b.staleShown = stale;
  const tabs = [
    ["timeline", "Records timeline"],
    ["manifest", "Manifest"],
    ["files", "Files"],
  ];
  b.node.replaceChildren(...[
    el("div", { class: "browser-head" },
      el("div", {},
        el("h3", {}, el("code", {}, b.logsType), " bundle of ", b.label),
        el("p", { class: "muted" }, `upload #${b.uploads} at ${clock(b.uploadedAt)} UTC · ${size(b.size)}`)),
      el("div", { class: "actions" },
        el("a", { class: "btn link", href: b.base, download: "" }, "Download"),
        el("button", { class: "btn secondary", type: "button", onclick: closeBrowser }, "Close"))),
    stale ? el("div", { class: "notice", role: "status" },
      "A newer upload of this bundle arrived. ",
      el("button", { class: "btn primary small", type: "button", onclick: reloadBrowser }, "Show the newest")) : null,
    findingsView(b.data.diagnosis),
    el("div", { class: "tabs", role: "tablist", "aria-label": "Bundle views" },
      tabs.map(([id, label]) => el("button", {
        class: `tab${b.tab === id ? " active" : ""}`,
        role: "tab",
        type: "button",
        id: `tab-${id}`,
        "aria-selected": b.tab === id ? "true" : "false",
        "aria-controls": `panel-${id}`,
        onclick: () => { b.tab = id; drawBrowser(); },
      }, label))),
    el("div", { class: "tabpanel", role: "tabpanel", id: `panel-${b.tab}`, "aria-labelledby": `tab-${b.tab}` },
      b.tab === "timeline" ? timelineView(b.data.timeline)
        : b.tab === "manifest" ? manifestView(b.data.manifest)
          : filesView(b)),
  ].filter(Boolean));
}

function currentBundle(b) {
  if (!ui.state) return null;
  for (const h of ui.state.hosts) {
    for (const x of h.bundles || []) {
      if (bundleBase(h.cluster_id, h.id, x.logs_type) === b.base) return x;
    }
  }
  for (const c of ui.state.clusters) {
    for (const x of c.bundles || []) {
      if (bundleBase(c.id, null, x.logs_type) === b.base) return x;
    }
  }
  return null;
}

function reloadBrowser() {
  const b = ui.browser;
  const now = currentBundle(b);
  if (now) {
    b.uploadedAt = now.uploaded_at;
    b.uploads = now.uploads;
    b.size = now.size;
  }
  loadBrowser();
}

function loading(what) {
  return el("p", { class: "muted" }, `Loading ${what}…`);
}

function failed(what, data) {
  return el("p", { class: "error-text" }, `Could not read the ${what}: ${data.error}`);
}

// ---------- diagnosis ----------

// The agent's findings, most likely cause first, above the timeline; each
// evidence line opens its member in the file viewer at that line.
function findingsView(d) {
  if (!d) return el("section", { class: "findings", "aria-label": "Diagnosis" }, loading("diagnosis"));
  if (d.error) return el("section", { class: "findings", "aria-label": "Diagnosis" }, failed("diagnosis", d));
  if (d.absent) {
    return el("section", { class: "findings", "aria-label": "Diagnosis" },
      el("p", { class: "muted" }, "This bundle has no diagnosis.json (an agent from before diagnosis)."));
  }
  const findings = d.findings || [];
  const head = el("h4", {}, "Diagnosis", el("span", { class: "muted small" },
    findings.length ? ` · ${findings.length} finding${findings.length === 1 ? "" : "s"}, most likely cause first`
      : ` · nothing found in ${d.lines_scanned ?? 0} lines`));
  const pill = { error: "danger", warning: "warning", info: "neutral" };
  return el("section", { class: "findings", "aria-label": "Diagnosis" }, head,
    el("ol", { class: "finding-list" }, findings.map((f) => el("li", {
      class: `finding ${f.severity}`, "data-category": f.category, "data-severity": f.severity,
    },
    el("div", { class: "finding-head" },
      el("span", { class: `pill small ${pill[f.severity] || "neutral"}` }, f.severity),
      el("code", { class: "category" }, f.category),
      el("span", { class: "finding-summary" }, f.summary)),
    el("p", { class: "hint muted small" }, f.hint),
    el("ul", { class: "evidence" }, (f.evidence || []).map((e) => el("li", {},
      e.line ? el("button", {
        type: "button", class: "linkish evidence-link", "data-path": e.path, "data-line": String(e.line),
        title: `Open ${e.path} at line ${e.line}`,
        onclick: () => viewMember(memberPath(e.path), e.line),
      }, `${e.path}:${e.line}`) : el("span", { class: "muted" }, `${e.path} (line cut from the bundle)`),
      el("code", { class: "evidence-text" }, e.text))))))));
}

// ---------- records timeline ----------

function spanTooltip(service, s) {
  const lines = [
    el("strong", {}, `${service.name} · ${s.kind === "service" ? "service run" : s.kind} ${s.kind === "service" ? "" : s.name}`),
    el("div", {}, `${clock(s.start)} → ${s.end ? clock(s.end) : "no end"} · ${duration(s.duration)} · ${resultLabel(s.result)}`),
  ];
  if (s.errorLine) lines.push(el("div", { class: "tt-code" }, s.errorLine));
  if (s.errorMessage) lines.push(el("pre", { class: "tt-pre" }, s.errorMessage));
  return lines;
}

function timelineView(t) {
  if (!t) return loading("records timeline");
  if (t.error) return failed("records timeline", t);
  if (!t.services.length) {
    return el("p", { class: "muted" }, "This bundle has no bootstrap service records (normal on a host that is not the bootstrap host, or after its reboot).");
  }
  const t0 = parseTime(t.start);
  const t1 = Math.max(parseTime(t.end) || t0, t0 + 1000);
  const pos = (s) => ((parseTime(s) - t0) / (t1 - t0)) * 100;
  const bar = (service, s, extra) => {
    const start = parseTime(s.start) === null ? 0 : pos(s.start);
    const end = s.end && parseTime(s.end) !== null ? pos(s.end) : 100;
    const width = Math.max(end - start, 0.5);
    const label = `${service.name} ${s.kind} ${s.name}: ${resultLabel(s.result)}, ${duration(s.duration)}${s.errorLine ? `, ${s.errorLine}` : ""}`;
    return el("button", {
      type: "button",
      class: `bar ${resultClass(s.result)} ${extra || ""}`,
      style: `left:${start.toFixed(3)}%;width:${width.toFixed(3)}%`,
      "aria-label": label,
      dataset: { result: s.result, name: s.name, service: service.name },
      onmouseenter: (ev) => tooltip.show(ev.currentTarget, spanTooltip(service, s)),
      onfocus: (ev) => tooltip.show(ev.currentTarget, spanTooltip(service, s)),
      onmouseleave: () => tooltip.hide(),
      onblur: () => tooltip.hide(),
      onclick: () => { ui.browser.selected = { service: service.name, span: s }; drawBrowser(); },
    });
  };
  // Axis: about six ticks on whole seconds.
  const spanS = (t1 - t0) / 1000;
  const step = [5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200].find((x) => spanS / x <= 7) || 14400;
  const ticks = [];
  for (let s = Math.ceil(t0 / 1000 / step) * step; s * 1000 <= t1; s += step) {
    ticks.push(el("span", { class: "tick", style: `left:${(((s * 1000 - t0) / (t1 - t0)) * 100).toFixed(2)}%` }, new Date(s * 1000).toISOString().slice(11, 19)));
  }
  const rows = [];
  for (const svc of t.services) {
    rows.push(el("div", { class: "tl-row tl-service", dataset: { service: svc.name } },
      el("div", { class: "tl-label" },
        el("span", { class: "tl-name" }, svc.name),
        el("span", { class: `pill small ${resultClass(svc.result)}` }, resultLabel(svc.result)),
        svc.runs.length > 1 ? el("span", { class: "muted small" }, `${svc.runs.length} starts`) : null),
      el("div", { class: "tl-track" }, svc.runs.map((r) => bar(svc, r, "run")),
        svc.error ? el("span", { class: "error-text small" }, svc.error) : null)));
    for (const s of svc.spans) {
      rows.push(el("div", { class: `tl-row${s.result === "failure" ? " tl-failed" : ""}` },
        el("div", { class: "tl-label sub" },
          el("span", { class: "tl-kind" }, s.kind === "stage" ? "" : `${s.kind} `), s.name),
        el("div", { class: "tl-track" }, bar(svc, s),
          el("span", { class: "tl-dur", style: `left:calc(${Math.min(s.end && parseTime(s.end) !== null ? pos(s.end) : 100, 100).toFixed(2)}% + 6px)` }, duration(s.duration)))));
    }
  }
  const failures = groupFailures(t);
  const sel = ui.browser.selected || (failures[0] && firstFailedSpan(t));
  return el("div", { class: "records" },
    t.digest ? el("p", { class: "digest" }, el("span", { class: "muted" }, "Worst finding "), el("strong", {}, t.digest)) : null,
    (t.problems || []).length ? el("ul", { class: "problems" }, t.problems.map((p) => el("li", {}, p))) : null,
    el("div", { class: "legend", "aria-hidden": "true" },
      el("span", {}, el("i", { class: "sw success" }), "succeeded"),
      el("span", {}, el("i", { class: "sw danger" }), "failed"),
      el("span", {}, el("i", { class: "sw info" }), "no end yet"),
      el("span", {}, el("i", { class: "sw warning" }), "killed by a restart"),
      el("span", { class: "muted" }, `${clock(t.start)} – ${clock(t.end)} UTC · from ${t.source} · hover or click a bar for details`)),
    el("div", { class: "tl", role: "group", "aria-label": "Bootstrap service records timeline" },
      el("div", { class: "tl-row tl-axis", "aria-hidden": "true" }, el("div", { class: "tl-label" }), el("div", { class: "tl-track" }, ticks)),
      rows),
    sel ? spanDetail(sel) : null,
    failures.length ? el("section", { class: "failures" },
      el("h4", {}, `Failures (${failures.length})`),
      failures.map(({ svc, f }) => el("div", { class: "failure" },
        el("div", { class: "failure-head" },
          el("strong", {}, svc.name), f.name ? ` · ${f.name}` : "", el("span", { class: "muted" }, ` · ${f.phases.join(", ")} at ${clock(f.at)} UTC`)),
        f.errorLine ? el("div", {}, el("span", { class: "muted" }, "errorLine "), el("code", {}, f.errorLine)) : null,
        f.errorMessage ? el("pre", { class: "log" }, f.errorMessage) : null))) : el("p", { class: "muted" }, "No failures recorded."));
}

// A failed stage ends its service with the same error at the same second:
// one entry for both reads better than the same message twice.
function groupFailures(t) {
  const out = [];
  for (const svc of t.services) {
    for (const f of svc.failures) {
      const prev = out[out.length - 1];
      if (prev && prev.svc === svc && prev.f.at === f.at && prev.f.errorLine === f.errorLine && prev.f.errorMessage === f.errorMessage) {
        prev.f.phases.push(f.phase);
        continue;
      }
      out.push({ svc, f: { ...f, phases: [f.phase] } });
    }
  }
  return out;
}

function firstFailedSpan(t) {
  for (const svc of t.services) {
    const s = svc.spans.find((x) => x.result === "failure") || svc.runs.find((x) => x.result === "failure");
    if (s) return { service: svc.name, span: s };
  }
  return null;
}

function spanDetail(sel) {
  const s = sel.span;
  return el("div", { class: `detail ${resultClass(s.result)}`, "aria-live": "polite" },
    el("div", { class: "detail-head" },
      el("strong", {}, `${sel.service} · ${s.kind === "service" ? "service run" : `${s.kind} ${s.name}`}`),
      el("span", { class: `pill small ${resultClass(s.result)}` }, resultLabel(s.result)),
      el("span", { class: "muted" }, `${clock(s.start)} → ${s.end ? clock(s.end) : "no end"} UTC · ${duration(s.duration)}`)),
    s.errorLine ? el("div", {}, el("span", { class: "muted" }, "errorLine "), el("code", {}, s.errorLine)) : null,
    s.errorMessage ? el("pre", { class: "log" }, s.errorMessage) : null);
}

// ---------- manifest ----------

function manifestView(m) {
  if (!m) return loading("manifest");
  if (m.error) return failed("manifest", m);
  const b = ui.browser;
  const meta = m.meta || {};
  const facts = [
    ["Generated", m.generated_at],
    ["Reason", meta.reason],
    ["Boot", meta.boot_number !== undefined ? `#${meta.boot_number} · ${meta.boot_id || ""}` : meta.boot_id],
    ["Stage at the service", meta.service_stage],
    ["Agent", meta.agent_version],
    ["Content", `${size(m.total_bytes)} (caps: ${size(m.limits && m.limits.total_bytes)} total, ${size(m.limits && m.limits.member_bytes)} per member)`],
  ].filter(([, v]) => v !== undefined && v !== null && v !== "");
  const rows = [];
  for (const c of m.collectors || []) {
    const open = b.expanded.has(c.name);
    rows.push(el("tr", { class: "collector" },
      el("th", { scope: "row" },
        el("button", {
          class: "disclosure", type: "button", "aria-expanded": open ? "true" : "false",
          onclick: () => { if (open) b.expanded.delete(c.name); else b.expanded.add(c.name); drawBrowser(); },
        }, open ? "▾ " : "▸ ", c.name)),
      el("td", {}, el("span", { class: `pill small ${collectorClass(c.status)}` }, c.status)),
      el("td", { class: "num" }, size(c.bytes)),
      el("td", { class: "num" }, `${c.duration_ms} ms`),
      el("td", { class: "num" }, String((c.files || []).length)),
      el("td", { class: "reason" }, c.reason || "")));
    if (open) {
      for (const f of c.files || []) {
        rows.push(el("tr", { class: "file-row" },
          el("td", { class: "file-path" },
            f.archived ? el("button", { class: "linkish", type: "button", onclick: () => { b.tab = "files"; viewMember(memberPath(f.path)); } }, f.path) : f.path),
          el("td", {}, el("span", { class: `pill small ${collectorClass(f.status)}` }, f.status)),
          el("td", { class: "num" }, size(f.bytes)),
          el("td", { class: "num" }, `${f.duration_ms} ms`),
          el("td", {}, [f.truncated ? `cut from ${size(f.original_bytes)}` : "", f.redactions ? `${f.redactions} redacted` : ""].filter(Boolean).join(" · ")),
          el("td", { class: "reason" }, [f.reason, f.source].filter(Boolean).join(" — "))));
      }
    }
  }
  return el("div", { class: "manifest" },
    el("dl", { class: "facts" }, facts.map(([k, v]) => [el("dt", {}, k), el("dd", {}, String(v))])),
    el("table", { class: "collectors" },
      el("thead", {}, el("tr", {}, ["Collector", "Status", "Bytes", "Took", "Files", "Notes"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, rows)),
    (m.truncated || []).length ? el("p", { class: "muted" }, `Cut by a size cap: ${m.truncated.map((t) => t.path).join(", ")}`) : null);
}

function collectorClass(s) {
  return { ok: "success", failed: "danger", timed_out: "danger", partial: "warning", skipped: "neutral" }[s] || "neutral";
}

// Manifest paths are relative to the top directory.
function memberPath(rel) {
  const members = (ui.browser.data.members && ui.browser.data.members.members) || [];
  const hit = members.find((m) => m.path === rel || m.path.endsWith(`/${rel}`));
  return hit ? hit.path : `host_boot/${rel}`;
}

// ---------- files ----------

async function viewMember(path, line = null) {
  const b = ui.browser;
  b.member = path;
  b.line = line;
  b.tab = "files";
  b.data.text = null;
  drawBrowser();
  let data;
  try {
    data = await getJSON(`${b.base}/member?path=${encodeURIComponent(path)}`);
  } catch (e) {
    data = { error: e.message, path };
  }
  if (ui.browser === b && b.member === path) {
    b.data.text = data;
    drawBrowser();
    const mark = b.node.querySelector("pre.viewer-text mark.evidence-line");
    if (mark) {
      mark.scrollIntoView({ block: "center" });
      const pre = mark.closest("pre");
      pre.scrollTop = Math.max(0, mark.offsetTop - pre.offsetTop - pre.clientHeight / 2);
    }
  }
}

// The member's text with line `line` (1-based) marked.
function textWithLine(text, line) {
  if (!line) return [text || "(empty)"];
  const lines = text.split("\n");
  if (line > lines.length) return [text];
  return [
    lines.slice(0, line - 1).join("\n") + (line > 1 ? "\n" : ""),
    el("mark", { class: "evidence-line", id: "evidence-line", "data-line": String(line) }, lines[line - 1]),
    line < lines.length ? "\n" + lines.slice(line).join("\n") : "",
  ];
}

function filesView(b) {
  const m = b.data.members;
  if (!m) return loading("file list");
  if (m.error) return failed("file list", m);
  const files = m.members.filter((x) => x.kind === "file" && x.path.toLowerCase().includes(b.filter.toLowerCase()));
  const list = el("ul", { class: "file-list", "aria-label": "Files in the bundle" },
    files.map((f) => el("li", { class: b.member === f.path ? "active" : "" },
      el("button", { type: "button", class: "linkish", "aria-current": b.member === f.path ? "true" : null, onclick: () => viewMember(f.path, null) },
        el("span", { class: "file-name" }, f.path.replace(/^host_boot\//, "")),
        el("span", { class: "muted small" }, size(f.size))))));
  const filter = el("input", {
    type: "search", class: "filter", placeholder: "Filter files", "aria-label": "Filter files", value: b.filter,
    oninput: (ev) => {
      b.filter = ev.target.value;
      const pos = ev.target.selectionStart;
      drawBrowser();
      const again = b.node.querySelector("input.filter");
      again.focus();
      again.setSelectionRange(pos, pos);
    },
  });
  const t = b.data.text;
  let viewer;
  if (!b.member) viewer = el("p", { class: "muted" }, "Pick a file to read it here.");
  else if (!t) viewer = loading(b.member);
  else if (t.error) viewer = failed(b.member, t);
  else {
    viewer = el("div", { class: "viewer-body" },
      el("div", { class: "viewer-head" },
        el("code", {}, t.path), el("span", { class: "muted" }, ` · ${size(t.size)}`),
        t.truncated ? el("span", { class: "pill small warning" }, `first ${size(t.text.length)} shown; download for the rest`) : null,
        t.binary ? el("span", { class: "pill small warning" }, "binary content") : null),
      el("pre", { class: "log viewer-text", tabindex: "0" }, ...textWithLine(t.text, b.line)));
  }
  return el("div", { class: "files" },
    el("div", { class: "file-pane" }, filter, el("p", { class: "muted small" }, `${files.length} of ${m.members.filter((x) => x.kind === "file").length} files${m.incomplete ? " (listing cut short)" : ""}`), list),
    el("div", { class: "viewer" }, viewer));
}

// ---------- polling ----------

async function poll() {
  try {
    const state = await getJSON("/admin/state");
    ui.errors = 0;
    const json = JSON.stringify(state, (k, v) => (k === "now" ? undefined : v));
    ui.state = state;
    // Redraw on change, and now and then while installing so the "so far"
    // durations move; the browser is only redrawn when its notice changes,
    // so a scrolled log or a typed filter stays as it is.
    ui.polls = (ui.polls || 0) + 1;
    const installing = state.hosts.some((h) => (h.status || "").startsWith("installing"));
    if (json !== ui.lastJSON || (installing && ui.polls % 5 === 0)) {
      ui.lastJSON = json;
      render(state);
      const b = ui.browser;
      if (b) {
        const stale = Boolean(currentBundle(b) && currentBundle(b).uploaded_at !== b.uploadedAt);
        if (stale !== Boolean(b.staleShown)) drawBrowser();
      }
    }
    renderMeta(state, true);
  } catch (e) {
    ui.errors += 1;
    renderMeta(ui.state, false);
  } finally {
    setTimeout(poll, ui.errors ? Math.min(POLL_MS * 2 ** ui.errors, 15000) : POLL_MS);
  }
}

document.addEventListener("keydown", (ev) => {
  if (ev.key === "Escape") tooltip.hide();
});
poll();
