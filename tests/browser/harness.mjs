// Processes for the browser tests: the real mock service binary, a real
// agent run on a copy of the fixture host root (as scripts/demo.sh does),
// and headless Chromium from Debian driven by playwright-core. Every wait is
// bounded; everything listens on 127.0.0.1 only.
import { spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { randomUUID } from "node:crypto";
import { chromium } from "playwright-core";

export const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

function targetDir() {
  const t = process.env.CARGO_TARGET_DIR;
  return t ? resolve(repo, t) : join(repo, "target");
}

export const bins = {
  mock: join(targetDir(), "debug", "mock-assisted-service"),
  agent: join(targetDir(), "debug", "assisted-boot-reporter"),
};

/// Polls `check` until it returns a truthy value or `timeoutMs` passes.
export async function waitFor(what, check, timeoutMs = 30000, everyMs = 200) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try {
      const v = await check();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last.message}` : ""}`);
}

function collect(stream) {
  const out = { text: "" };
  stream.setEncoding("utf8");
  stream.on("data", (d) => {
    // Keep the tail only; enough to explain a failure.
    out.text = (out.text + d).slice(-64 * 1024);
  });
  return out;
}

function stop(child) {
  if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
}

export function exited(child, timeoutMs = 15000) {
  return waitFor("process exit", () => child.exitCode !== null || child.signalCode !== null, timeoutMs, 50);
}

/// A scratch directory removed by `cleanup`.
export function scratch() {
  return mkdtempSync(join(tmpdir(), "abr-browser-"));
}

export async function startMock(dir, seedPath) {
  const child = spawn(bins.mock, ["--listen", "127.0.0.1:0", "--seed", seedPath, "--data-dir", join(dir, "data")], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const out = collect(child.stdout);
  const err = collect(child.stderr);
  const base = await waitFor("the mock's listening line", () => {
    if (child.exitCode !== null) throw new Error(`mock exited ${child.exitCode}: ${err.text}`);
    const m = out.text.match(/^listening on (http:\/\/\S+)$/m);
    return m && m[1];
  });
  return { child, base, log: err, stop: () => stop(child) };
}

/// The host as the discovery agent leaves it: credentials, ids, a fixture
/// root with bootstrap records (bootkube failed at mco-bootstrap).
export function prepareHost(dir, base, seedPath, hostIndex = 0) {
  const seed = JSON.parse(readFileSync(seedPath, "utf8"));
  const host = seed.hosts[hostIndex];
  const root = join(dir, "root");
  cpSync(join(repo, "tests/fixtures/root"), root, { recursive: true });
  writeFileSync(join(root, "proc/sys/kernel/random/boot_id"), `${randomUUID()}\n`);
  const config = join(dir, "config");
  for (const d of [config, join(dir, "state"), join(dir, "home")]) mkdirSync(d, { recursive: true });
  writeFileSync(join(config, "service-url"), `${base}\n`);
  writeFileSync(join(config, "infra-env-id"), `${host.infra_env_id}\n`);
  writeFileSync(join(config, "host-id"), `${host.id}\n`);
  writeFileSync(join(config, "cluster-id"), `${host.cluster_id}\n`);
  writeFileSync(join(config, "pull-secret"),
    `${JSON.stringify({ auths: { "cloud.openshift.com": { auth: seed.agent_token, email: "demo@example.com" } } })}\n`,
    { mode: 0o600 });
  return { host, seed, root, config, state: join(dir, "state"), home: join(dir, "home") };
}

/// A first boot from disk: the agent sets its stage and uploads every 2 s
/// until `timeout` or until stopped.
export function startAgent(dir, hostDir, timeout = "5m") {
  const child = spawn(bins.agent, [
    "run",
    "--config-dir", hostDir.config,
    "--state-dir", hostDir.state,
    "--root", hostDir.root,
    "--upload-interval", "2s",
    "--timeout", timeout,
    "--retry-initial-delay", "200ms",
    "--retry-max-delay", "1s",
    "--retry-attempts", "3",
    "--command-timeout", "10s",
    "--kubelet-healthz-url", "http://127.0.0.1:9/healthz",
  ], {
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      PATH: `${join(repo, "tests/fixtures/bin")}:/usr/local/bin:/usr/bin:/bin`,
      HOME: hostDir.home,
      FAKE_SYSTEMCTL_LOG: join(dir, "systemctl.log"),
    },
  });
  const out = collect(child.stdout);
  const err = collect(child.stderr);
  return { child, log: () => out.text + err.text, stop: () => stop(child) };
}

export async function launchBrowser(dir) {
  const profile = join(dir, "chromium-profile");
  mkdirSync(profile, { recursive: true });
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1440, height: 1000 },
    deviceScaleFactor: 1,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  return context;
}

export function cleanup(dir) {
  rmSync(dir, { recursive: true, force: true });
}

export async function adminJSON(base, path, body) {
  const resp = await fetch(`${base}${path}`, body === undefined ? {} : {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!resp.ok) throw new Error(`${path}: ${resp.status} ${await resp.text()}`);
  return resp.status === 204 ? null : resp.json();
}
