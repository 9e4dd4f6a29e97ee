// The mock service's page in headless Chromium while a real agent run is in
// progress: the new stage shows up live, a host_boot bundle opens, the
// bootstrap-records timeline draws the fixture's failures in red with their
// errorLine/errorMessage, a text member can be read, and polling does not
// close what the user opened, and the diagnosis shows the first cause above
// the timeline with links to its evidence lines. Screenshots go to tests/browser/artifacts/;
// with WRITE_DOCS_SCREENSHOT=1 the mid-install one also goes to docs/.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import {
  adminJSON, bins, cleanup, exited, launchBrowser, prepareHost, repo, scratch, startAgent, startMock, waitFor,
} from "./harness.mjs";

const SEED = join(repo, "tests/fixtures/ui-seed.json");
const ARTIFACTS = join(repo, "tests/browser/artifacts");
const NEW_STAGE = "Booted with local ignition";
const RED = "rgb(201, 25, 11)";

// The page re-renders on live updates, so two boxes read one after the other
// can straddle a render (a detached element has no box). Both are read in one
// task of the page instead, retried a bounded number of times.
async function boxes(page, selectors) {
  for (let attempt = 0; attempt < 50; attempt++) {
    const found = await page.evaluate((sels) => sels.map((sel) => {
      const el = document.querySelector(sel);
      if (!el) return null;
      const r = el.getBoundingClientRect();
      return r.width > 0 || r.height > 0 ? { x: r.x, y: r.y, width: r.width, height: r.height } : null;
    }), selectors);
    if (found.every(Boolean)) return found;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no box for ${selectors.join(", ")} after 50 tries`);
}

describe("mock service page during an agent run", { timeout: 240000 }, () => {
  let dir;
  let mock;
  let agent;
  let context;
  let page;
  let host;
  const foreign = [];
  const pageErrors = [];

  before(async () => {
    for (const b of Object.values(bins)) {
      assert.ok(existsSync(b), `${b} is missing: run cargo build --workspace --bins first`);
    }
    mkdirSync(ARTIFACTS, { recursive: true });
    dir = scratch();
    mock = await startMock(dir, SEED);
    const hostDir = prepareHost(dir, mock.base, SEED);
    host = hostDir.host;
    context = await launchBrowser(dir);
    page = await context.newPage();
    page.on("request", (r) => {
      if (!r.url().startsWith(mock.base)) foreign.push(r.url());
    });
    page.on("pageerror", (e) => pageErrors.push(e.message));
    await page.goto(`${mock.base}/`);
    await page.locator("article.host").first().waitFor({ timeout: 15000 });
    // The page is up before the agent starts: what follows arrives live.
    agent = startAgent(dir, hostDir);
  });

  after(async () => {
    if (agent) agent.stop();
    if (context) await context.close();
    if (agent) await exited(agent.child).catch(() => {});
    if (mock) {
      mock.stop();
      await exited(mock.child).catch(() => {});
    }
    if (dir) cleanup(dir);
  });

  const card = () => page.locator(`article.host[data-host="${host.id}"]`);

  test("shows every host with its role's stage list, new stages marked", async () => {
    assert.equal(await page.locator("article.host").count(), 3);
    const stages = await card().locator("li.stage").evaluateAll((els) => els.map((e) => e.dataset.stage));
    // The bootstrap master's list, with both new stages in place.
    assert.deepEqual(stages, [
      "Starting installation", "Installing", "Writing image to disk", "Copying registry data to disk",
      "Waiting for control plane", "Waiting for bootkube", "Waiting for controller", "Rebooting",
      NEW_STAGE, "Configuring", "Booted with control plane ignition", "Joined", "Done",
    ]);
    const marked = await card().locator("li.stage.new").evaluateAll((els) => els.map((e) => e.dataset.stage));
    assert.deepEqual(marked, [NEW_STAGE, "Booted with control plane ignition"]);
    // Another host's progress_info is on its card.
    const master1 = page.locator("article.host", { hasText: "master-1.demo.example.com" });
    assert.equal(await master1.locator(".progress-info").textContent(), "71%");
  });

  test("the agent's new stage appears without a reload, highlighted as current", async () => {
    const current = card().locator(`li.stage.current[data-stage="${NEW_STAGE}"]`);
    await current.waitFor({ timeout: 60000 });
    assert.equal(await current.getAttribute("aria-current"), "step");
    assert.equal(await card().locator(".current-stage").textContent(), NEW_STAGE);
    // Earlier stages done, later ones not.
    assert.ok(await card().locator('li.stage.done[data-stage="Rebooting"]').count());
    assert.ok(await card().locator('li.stage.todo[data-stage="Configuring"]').count());
    // The history has the seeded stage then the new one, with durations.
    const history = await card().locator("table.history tbody th").allTextContents();
    assert.deepEqual(history.map((t) => t.replace(/new$/, "")), ["Rebooting", NEW_STAGE]);
    assert.equal(agent.child.exitCode, null, "the agent is still running");
  });

  test("a host_boot bundle opens with its records timeline, failures in red", async () => {
    const row = card().locator("table.bundles tbody tr", { has: page.locator("code", { hasText: /^host_boot$/ }) });
    await row.waitFor({ timeout: 60000 });
    assert.match(await row.locator("td").nth(0).textContent(), /KiB|MiB| B$/);
    const download = await row.locator("a", { hasText: "Download" }).getAttribute("href");
    const resp = await fetch(`${mock.base}${download}`);
    assert.equal(resp.status, 200);
    assert.equal(resp.headers.get("content-type"), "application/octet-stream");
    await resp.arrayBuffer();

    await row.getByRole("button", { name: "Browse" }).click();
    const browser = page.locator("section.browser");
    await browser.waitFor();
    assert.equal(await browser.getByRole("tab", { name: "Records timeline" }).getAttribute("aria-selected"), "true");

    // bootkube failed at mco-bootstrap, restarted, and got through it.
    const mcoRuns = browser.locator('.bar[data-service="bootkube"][data-name="mco-bootstrap"]');
    await mcoRuns.first().waitFor({ timeout: 15000 });
    assert.deepEqual(await mcoRuns.evaluateAll((els) => els.map((e) => e.dataset.result)), ["failure", "success"]);
    const mco = mcoRuns.first();
    assert.equal(await mco.evaluate((e) => getComputedStyle(e).backgroundColor), RED);
    const ok = browser.locator('.bar[data-service="bootkube"][data-name="cvo-bootstrap"]');
    assert.equal(await ok.getAttribute("data-result"), "success");
    assert.notEqual(await ok.evaluate((e) => getComputedStyle(e).backgroundColor), RED);
    // release-image failed once, then succeeded after a restart.
    const pulls = browser.locator('.bar[data-service="release-image"][data-name="pull-release-image"]');
    assert.deepEqual(await pulls.evaluateAll((els) => els.map((e) => e.dataset.result)), ["failure", "success"]);

    await mco.hover();
    const tip = page.locator("#tooltip");
    await tip.waitFor({ state: "visible" });
    const tipText = await tip.textContent();
    assert.match(tipText, /147 main \/usr\/local\/bin\/bootkube\.sh/);
    assert.match(tipText, /server misbehaving/);

    await mco.click();
    const detail = browser.locator(".detail");
    assert.match(await detail.textContent(), /mco-bootstrap/);
    assert.match(await detail.locator("pre").textContent(), /bootkube\.service: Failed with result 'exit-code'/);
    // Each failed stage ended its service with the same error: one entry each.
    const failures = await browser.locator(".failures .failure .failure-head").allTextContents();
    assert.deepEqual(failures, [
      "release-image · pull-release-image · stage end, service end at 09:57:38 UTC",
      "bootkube · mco-bootstrap · stage end, service end at 10:04:02 UTC",
    ]);

    await page.mouse.move(0, 0);
    await page.locator("#tooltip").waitFor({ state: "hidden" });
    // The mid-install picture: new stage current, bundle open, timeline shown.
    assert.equal(agent.child.exitCode, null, "the agent is still running");
    await card().scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(ARTIFACTS, "ui-mid-install-full.png"), fullPage: true });
    // From the top to the end of the records timeline: what the README shows.
    const [box] = await boxes(page, ["section.browser .failures"]);
    const scroll = await page.evaluate(() => window.scrollY);
    const clip = { x: 0, y: 0, width: 1440, height: Math.ceil(box.y + scroll + box.height + 24) };
    await page.screenshot({ path: join(ARTIFACTS, "ui-mid-install.png"), fullPage: true, clip });
    if (process.env.WRITE_DOCS_SCREENSHOT === "1") {
      await page.screenshot({ path: join(repo, "docs/ui-mid-install.png"), fullPage: true, clip });
    }
  });

  test("the diagnosis names the DNS failure above the timeline; evidence opens its line", async () => {
    const browser = page.locator("section.browser");
    const findings = browser.locator("section.findings");
    const first = findings.locator("li.finding").first();
    await first.waitFor({ timeout: 15000 });
    assert.equal(await first.getAttribute("data-category"), "dns_resolution");
    assert.match(await first.locator(".finding-summary").textContent(),
      /quay\.io did not resolve \(lookup quay\.io on 192\.168\.122\.1:53: server misbehaving\)/);
    assert.match(await first.locator(".hint").textContent(), /nameservers/);
    // Above the records timeline.
    const timeline = browser.locator('.tl[aria-label="Bootstrap service records timeline"]');
    await timeline.waitFor();
    const [above, below] = await boxes(page, ["section.browser section.findings", 'section.browser .tl[aria-label="Bootstrap service records timeline"]']);
    assert.ok(above.y < below.y);
    // One finding for the cause, its evidence from both units and the record.
    const links = await first.locator("button.evidence-link").evaluateAll((els) => els.map((e) => e.dataset.path));
    for (const p of ["journal/units/release-image.log", "journal/units/bootkube.log", "records/bootkube.json"]) {
      assert.ok(links.includes(p), links.join(", "));
    }
    await findings.scrollIntoViewIfNeeded();
    const [top, box] = await boxes(page, ["section.browser section.findings", 'section.browser .tl[aria-label="Bootstrap service records timeline"]']);
    const scroll = await page.evaluate(() => window.scrollY);
    const clip = { x: 0, y: Math.max(0, top.y + scroll - 120), width: 1440, height: Math.ceil(box.y - top.y + box.height + 160) };
    await page.screenshot({ path: join(ARTIFACTS, "ui-diagnosis.png"), fullPage: true, clip });
    if (process.env.WRITE_DOCS_SCREENSHOT === "1") {
      await page.screenshot({ path: join(repo, "docs/ui-diagnosis.png"), fullPage: true, clip });
    }

    // The evidence link opens the member with that very line marked.
    const link = first.locator('button.evidence-link[data-path="journal/units/bootkube.log"]');
    const line = Number(await link.getAttribute("data-line"));
    await link.click();
    const mark = browser.locator("pre.viewer-text mark.evidence-line");
    await mark.waitFor({ timeout: 15000 });
    assert.equal(Number(await mark.getAttribute("data-line")), line);
    assert.match(await mark.textContent(), /lookup quay\.io on 192\.168\.122\.1:53: server misbehaving/);
    const before = await browser.locator("pre.viewer-text").evaluate((pre, n) =>
      pre.textContent.split("\n")[n - 1], line);
    assert.equal(before, await mark.textContent());
  });

  test("the cluster roll-up: a row per host, the agent's headline, above the host cards", async () => {
    const rollup = page.locator("section.rollup").first();
    const row = rollup.locator(`tr[data-host="${host.id}"]`);
    await row.locator("td.headline", { hasText: /quay\.io did not resolve/ }).waitFor({ timeout: 30000 });
    const names = await rollup.locator("table.rollup-hosts tbody th").allTextContents();
    assert.deepEqual(names, ["master-0.demo.example.com", "master-1.demo.example.com", "worker-0.demo.example.com"]);
    const cells = await row.locator("td").allTextContents();
    assert.equal(cells[0], "master · bootstrap");
    assert.equal(cells[1], NEW_STAGE);
    // The hosts without a bundle say so; one bundle shares nothing.
    const worker = rollup.locator("tr", { hasText: "worker-0.demo.example.com" });
    assert.equal(await worker.locator("td.headline").textContent(), "no host_boot bundle yet");
    assert.equal(await rollup.locator("ol.shared-causes").count(), 0);
    assert.match(await rollup.textContent(), /None: no finding on more than one host\./);
    const [top, firstCard] = await boxes(page, ["section.rollup", "article.host"]);
    assert.ok(top.y < firstCard.y);
  });

  test("manifest table and a text member", async () => {
    const browser = page.locator("section.browser");
    await browser.getByRole("tab", { name: "Manifest" }).click();
    const collectors = browser.locator("table.collectors tbody tr.collector th");
    await collectors.first().waitFor();
    const names = (await collectors.allTextContents()).map((t) => t.replace(/^[▸▾]\s*/, ""));
    // One row per collector of the bundle's manifest, in its order.
    const href = await page.locator("section.browser a", { hasText: "Download" }).getAttribute("href");
    const manifest = await (await fetch(`${mock.base}${href}/manifest`)).json();
    assert.deepEqual(names, manifest.collectors.map((c) => c.name));
    assert.ok(names.includes("records") && names.includes("journal"), names.join(","));
    await browser.locator("table.collectors").getByRole("button", { name: /records/ }).click();
    await browser.locator("tr.file-row", { hasText: "records/bootkube.json" }).waitFor();
    await page.screenshot({ path: join(ARTIFACTS, "ui-manifest.png"), fullPage: true });

    await browser.getByRole("tab", { name: "Files" }).click();
    await browser.locator("ul.file-list").getByRole("button", { name: /records\/bootkube\.json/ }).click();
    const text = browser.locator("pre.viewer-text");
    await text.waitFor();
    const body = await text.textContent();
    assert.match(body, /"stage": "mco-bootstrap"/);
    assert.deepEqual(JSON.parse(body).length, 34);
    await page.screenshot({ path: join(ARTIFACTS, "ui-files.png"), fullPage: true });
  });

  test("live updates keep the opened bundle and member", async () => {
    const other = page.locator("article.host", { hasText: "master-1.demo.example.com" });
    await adminJSON(mock.base, `/admin/hosts/5a0e9c71-3d2b-4f86-a1c4-9b7e2d6f8a13/stage`,
      { current_stage: "Rebooting", progress_info: "after 4m12s" });
    await waitFor("master-1's new stage on the page", async () =>
      (await other.locator(".current-stage").textContent()) === "Rebooting");
    assert.equal(await other.locator(".progress-info").textContent(), "after 4m12s");
    assert.equal(await page.locator("section.browser").count(), 1);
    assert.match(await page.locator("section.browser pre.viewer-text").textContent(), /mco-bootstrap/);
  });

  test("loads nothing from outside the mock and raises no script errors", () => {
    assert.deepEqual(foreign, []);
    assert.deepEqual(pageErrors, []);
  });
});
