// Processes for the real-UI tests: the mock service binary (one per seed),
// a loopback HTTP server that serves the Vite build and forwards the page's
// /api calls to the mock owning the infra-env, and Debian's Chromium driven
// by playwright-core (never a downloaded browser). Every wait is bounded;
// everything listens on 127.0.0.1 only.
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, extname, join, normalize, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const here = dirname(fileURLToPath(import.meta.url));
export const repo = resolve(here, "../..");
export const dist = join(here, "dist");

function targetDir() {
  const t = process.env.CARGO_TARGET_DIR;
  return t ? resolve(repo, t) : join(repo, "target");
}

export const mockBin = join(targetDir(), "debug", "mock-assisted-service");

/** Polls `check` until it returns a truthy value or `timeoutMs` passes. */
export async function waitFor(what, check, timeoutMs = 30000, everyMs = 100) {
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
    out.text = (out.text + d).slice(-64 * 1024);
  });
  return out;
}

export function scratch() {
  return mkdtempSync(join(tmpdir(), "abr-ui-real-"));
}

export function cleanup(dir) {
  rmSync(dir, { recursive: true, force: true });
}

/** Starts the mock on an ephemeral loopback port with `seed` (an object). */
export async function startMock(dir, name, seed, extraArgs = []) {
  const seedPath = join(dir, `${name}-seed.json`);
  writeFileSync(seedPath, JSON.stringify(seed, null, 2));
  const dataDir = join(dir, `${name}-data`);
  mkdirSync(dataDir, { recursive: true });
  const child = spawn(mockBin, ["--listen", "127.0.0.1:0", "--seed", seedPath, "--data-dir", dataDir, ...extraArgs], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const out = collect(child.stdout);
  const err = collect(child.stderr);
  const base = await waitFor(`the ${name} mock's listening line`, () => {
    if (child.exitCode !== null) throw new Error(`mock exited ${child.exitCode}: ${err.text}`);
    const m = out.text.match(/^listening on (http:\/\/\S+)$/m);
    return m && m[1];
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      await waitFor("mock exit", () => child.exitCode !== null || child.signalCode !== null, 15000, 50).catch(() => {});
    }
  };
  return { child, base, log: err, stop };
}

/** GETs JSON from a mock (the test's own view of what the service sends). */
export async function getJSON(url) {
  const resp = await fetch(url);
  if (!resp.ok) throw new Error(`${url}: ${resp.status} ${await resp.text()}`);
  return resp.json();
}

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".woff2": "font/woff2",
  ".woff": "font/woff",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".json": "application/json",
};

/**
 * Serves dist/ and /sections.json, and forwards GET /api/... to a mock:
 * the one owning the infra-env in the path, else `defaultBase`. Keeps a log
 * of the forwarded requests.
 */
export async function startPageServer({ sections, title, mockFor, defaultBase }) {
  const forwarded = [];
  const server = createServer(async (req, res) => {
    try {
      const url = new URL(req.url, "http://127.0.0.1");
      if (url.pathname === "/sections.json") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ title, sections }));
        return;
      }
      if (url.pathname.startsWith("/api/")) {
        const m = url.pathname.match(/\/v2\/infra-envs\/([0-9a-f-]{36})/);
        const base = (m && mockFor[m[1]]) || defaultBase;
        const upstream = await fetch(`${base}${url.pathname}${url.search}`, {
          method: req.method,
          headers: { accept: req.headers.accept || "application/json" },
        });
        const body = Buffer.from(await upstream.arrayBuffer());
        forwarded.push({ method: req.method, path: url.pathname, status: upstream.status, to: base });
        res.writeHead(upstream.status, { "content-type": upstream.headers.get("content-type") || "application/json" });
        res.end(body);
        return;
      }
      let rel = normalize(decodeURIComponent(url.pathname)).replace(/^(\.\.[/\\])+/, "");
      if (rel === "/" || rel === "") rel = "/index.html";
      const file = join(dist, rel);
      if (!file.startsWith(dist) || !existsSync(file)) {
        res.writeHead(404, { "content-type": "text/plain" });
        res.end("not found");
        return;
      }
      res.writeHead(200, { "content-type": TYPES[extname(file)] || "application/octet-stream" });
      res.end(readFileSync(file));
    } catch (e) {
      res.writeHead(502, { "content-type": "text/plain" });
      res.end(String(e));
    }
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${server.address().port}`;
  return { base, forwarded, stop: () => new Promise((r) => server.close(r)) };
}

export async function launchBrowser(dir) {
  const profile = join(dir, "chromium-profile");
  mkdirSync(profile, { recursive: true });
  return chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1440, height: 900 },
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
}
