// The real assisted UI (@openshift-assisted/ui-lib's hosts-table status cell
// = HostStatus with its popover, and HostProgress), built with Vite and fed
// by the mock service through ui-lib's own API client, in headless Debian
// Chromium. Both mock modes: enhanced (the two boot stages exist) and
// --upstream-compat (today's service). Asserts DOM text, never pixels:
// the progress bar's aria-valuetext "Step N of M: <stage>[: <info>]", its
// title and measure, HostStatus's "Installing N/M", the popover, and the
// stage-timeout warning icon. Screenshots go to docs/ui-real/<mode>.png and
// tests/ui-real/artifacts/.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import {
  cleanup, dist, getJSON, here, launchBrowser, mockBin, repo, scratch, startMock, startPageServer, waitFor,
} from "./harness.mjs";
import {
  CP_IGN, HEADLINE, LOCAL_IGN, MODES, NEW_STAGES, buildSeeds, expectedStep, fallbackText, listedKind, stageList,
} from "./seeds.mjs";

const ARTIFACTS = join(here, "artifacts");
const DOCS = join(repo, "docs/ui-real");
const API = "/api/assisted-install/v2";
/** HostStatus's title per host status (ui-lib status.tsx; withProgress adds " N/M"). */
const STATUS_TITLE = {
  "installing-in-progress": { title: "Installing", withProgress: true },
  installed: { title: "Installed", withProgress: false },
  "installing-pending-user-action": { title: "Pending user action", withProgress: false },
  error: { title: "Error", withProgress: true },
};
/** The text of upstream's timeout popover (HostStatus.tsx getHostStatusIcon), whatever the stage. */
const TIMEOUT_TEXT = "Waiting for control plane has been active more than the expected completion time.";

for (const mode of Object.keys(MODES)) {
  describe(`real assisted UI against the mock, ${mode} mode`, { timeout: 240000 }, () => {
    let dir;
    let mock;
    let timeoutMock;
    let server;
    let context;
    let page;
    let seeds;
    /** Every host as the service lists it, by id, with the seed host. */
    const api = new Map();
    const pageErrors = [];
    const foreign = [];

    const byName = (name) => [...api.values()].find((h) => h.requested_hostname === name);
    const row = (h) => page.locator(`tr[data-host-id="${h.id}"]`);

    before(async () => {
      assert.ok(existsSync(mockBin), `${mockBin} is missing: run cargo build --workspace --bins --locked first`);
      assert.ok(existsSync(join(dist, "index.html")), `${dist} is missing: run npm run build first`);
      mkdirSync(ARTIFACTS, { recursive: true });
      mkdirSync(DOCS, { recursive: true });
      dir = scratch();
      seeds = buildSeeds(mode);
      mock = await startMock(dir, `${mode}-main`, seeds.main, MODES[mode].args);
      timeoutMock = await startMock(dir, `${mode}-timeout`, seeds.timeout,
        [...MODES[mode].args, "--time-scale", "1000000"]);
      const baseOf = (envId) => (envId === seeds.timeoutEnvId ? timeoutMock.base : mock.base);
      await waitFor("the timeout mock's hosts to time out", async () => {
        const hosts = await getJSON(`${timeoutMock.base}${API}/infra-envs/${seeds.timeoutEnvId}/hosts`);
        return hosts.length === 2 && hosts.every((h) => h.progress?.stage_timed_out === true);
      }, 15000);
      const seeded = new Map([...seeds.main.hosts, ...seeds.timeout.hosts].map((h) => [h.id, h]));
      for (const s of seeds.sections) {
        for (const h of await getJSON(`${baseOf(s.infraEnvId)}${API}/infra-envs/${s.infraEnvId}/hosts`)) {
          api.set(h.id, { ...h, section: s.key, seed: seeded.get(h.id) });
        }
      }
      assert.equal(api.size, seeded.size, "the service lists every seeded host");

      server = await startPageServer({
        sections: seeds.sections,
        title: MODES[mode].title,
        mockFor: { [seeds.timeoutEnvId]: timeoutMock.base },
        defaultBase: mock.base,
      });
      context = await launchBrowser(dir);
      page = await context.newPage();
      page.on("request", (r) => {
        if (!r.url().startsWith(`${server.base}/`) && !r.url().startsWith("data:")) foreign.push(r.url());
      });
      page.on("pageerror", (e) => pageErrors.push(e.message));
      await page.goto(`${server.base}/`);
      await page.waitForFunction(
        () => document.documentElement.dataset.ready === "true" || document.documentElement.dataset.error,
        null, { timeout: 60000 });
      const loadError = await page.evaluate(() => document.documentElement.dataset.error);
      assert.equal(loadError, undefined, `the page failed to load the hosts: ${loadError}`);
    });

    after(async () => {
      if (context) await context.close();
      if (server) await server.stop();
      if (mock) await mock.stop();
      if (timeoutMock) await timeoutMock.stop();
      if (dir) cleanup(dir);
    });

    test("the page read every host through ui-lib's client from the infra-env hosts list", async () => {
      for (const s of seeds.sections) {
        const path = `${API}/infra-envs/${s.infraEnvId}/hosts`;
        const hits = server.forwarded.filter((f) => f.method === "GET" && f.path === path);
        assert.equal(hits.length, 1, `${path} requested once by the page`);
        assert.equal(hits[0].status, 200);
      }
      assert.equal(await page.locator("tr[data-host-id]").count(), api.size);
      assert.deepEqual(foreign, [], "nothing but the loopback page server was requested");
      assert.deepEqual(pageErrors, []);
    });

    test("the service sends each role's stage list; compat mode has no boot stages", () => {
      const wrong = [];
      for (const h of api.values()) {
        const want = stageList(listedKind(h.seed, mode), mode);
        if (JSON.stringify(h.progress_stages) !== JSON.stringify(want)) {
          wrong.push({ host: h.requested_hostname, got: h.progress_stages, want });
        }
        if (mode === "compat") {
          assert.ok(!NEW_STAGES.includes(h.progress.current_stage), h.requested_hostname);
          for (const s of NEW_STAGES) assert.ok(!h.progress_stages.includes(s), h.requested_hostname);
        }
      }
      assert.deepEqual(wrong, []);
      // Every stage of every role is on the page once.
      for (const kind of ["bootstrap", "master", "worker", "sno"]) {
        const stages = [...api.values()].filter((h) => h.section === kind).map((h) => h.progress.current_stage);
        assert.deepEqual(stages, stageList(kind, mode), kind);
      }
    });

    test("every host's progress bar reads Step N of M: <stage>[: <progress_info>]", async () => {
      const rendered = await page.evaluate(() => [...document.querySelectorAll("tr[data-host-id]")].map((tr) => {
        const progress = tr.querySelector('[data-testid="host-progress"]');
        const bar = progress.querySelector('[role="progressbar"]');
        return {
          id: tr.dataset.hostId,
          valuetext: bar?.getAttribute("aria-valuetext"),
          valuenow: bar?.getAttribute("aria-valuenow"),
          valuemax: bar?.getAttribute("aria-valuemax"),
          title: progress.querySelector(".pf-v6-c-progress__description")?.textContent,
          measure: progress.querySelector(".pf-v6-c-progress__status .pf-v6-c-progress__measure")?.textContent ?? null,
        };
      }));
      const got = [];
      const want = [];
      for (const r of rendered) {
        const h = api.get(r.id);
        const { current_stage: stage, progress_info: info, installation_percentage: pct } = h.progress;
        // N and M from what the service sent, the way ui-lib computes them...
        const m = h.progress_stages.length;
        const n = Math.round(((pct || 0) / 100) * m);
        // ...and from the role lists alone: the two must agree.
        const independent = expectedStep(h.seed, stage, mode);
        assert.deepEqual({ n, m }, { n: independent.n, m: independent.m }, `${h.requested_hostname}: step from the service`);
        const label = `${stage}${info ? `: ${info}` : " "}`;
        const { id: _id, ...shown } = r;
        got.push({ host: h.requested_hostname, ...shown });
        want.push({
          host: h.requested_hostname,
          valuetext: `Step ${n} of ${m}: ${label}`,
          valuenow: String(n),
          valuemax: String(m),
          title: label,
          // ui-lib hides the measure once the host is installed.
          measure: h.status === "installed" ? null : `Step ${n} of ${m}`,
        });
      }
      assert.deepEqual(got, want);
    });

    test("HostStatus prints the status with N/M from the service", async () => {
      const got = [];
      const want = [];
      for (const h of api.values()) {
        const s = STATUS_TITLE[h.status];
        assert.ok(s, `${h.requested_hostname}: unexpected status ${h.status}`);
        const n = Math.round(((h.progress.installation_percentage || 0) / 100) * h.progress_stages.length);
        got.push({ host: h.requested_hostname, text: (await row(h).locator('[data-testid="host-status"]').innerText()).trim() });
        want.push({ host: h.requested_hostname, text: s.withProgress ? `${s.title} ${n}/${h.progress_stages.length}` : s.title });
      }
      assert.deepEqual(got, want);
    });

    test(mode === "enhanced"
      ? "the two boot stages render as steps of every role's list"
      : "compat: today's lists, and the single-node list quirk", async () => {
      const valuetext = (name) => row(byName(name)).locator('[data-testid="host-progress"] [role="progressbar"]')
        .getAttribute("aria-valuetext");
      // Written out in full: what a user reads, checked by hand against the lists.
      const expected = mode === "enhanced" ? {
        "bootstrap-09": `Step 9 of 13: ${LOCAL_IGN} `,
        "bootstrap-11": `Step 11 of 13: ${CP_IGN} `,
        "master-06": `Step 6 of 10: ${LOCAL_IGN} `,
        "master-08": `Step 8 of 10: ${CP_IGN} `,
        "worker-06": `Step 6 of 11: ${LOCAL_IGN} `,
        "worker-09": `Step 9 of 11: ${CP_IGN} `,
        "sno-07": `Step 7 of 10: ${LOCAL_IGN} `,
        "sno-08": `Step 8 of 10: ${CP_IGN} `,
        "master-10": "Step 10 of 10: Done ",
      } : {
        "bootstrap-08": "Step 8 of 11: Rebooting ",
        "master-05": "Step 5 of 8: Rebooting ",
        "master-06": "Step 6 of 8: Configuring ",
        "worker-05": "Step 5 of 9: Rebooting ",
        // Upstream lists a single-node host with the multi-node bootstrap
        // list (11 stages) but measures it on the single-node one (8).
        "sno-03": "Step 4 of 11: Waiting for bootkube ",
        "sno-06": "Step 8 of 11: Rebooting ",
        "sno-07": "Step 10 of 11: Joined ",
        "master-08": "Step 8 of 8: Done ",
      };
      const got = {};
      for (const name of Object.keys(expected)) got[name] = await valuetext(name);
      assert.deepEqual(got, expected);
      if (mode === "compat") {
        const text = await page.locator("main").innerText();
        // The stage names appear only inside the reporter's progress_info.
        const lines = text.split("\n").filter((l) => l.includes("Booted with"));
        assert.ok(lines.length > 0);
        for (const l of lines) assert.match(l, /\(boot \d from disk, reported by assisted-boot-reporter\)/, l);
      }
    });

    test("progress_info from the reporter: printed after the stage, in the bar and the popover", async () => {
      const cases = [
        {
          name: "fallback-rebooting",
          label: `Rebooting: ${fallbackText(LOCAL_IGN, 1)}; ${HEADLINE}`,
          step: mode === "enhanced" ? "Step 5 of 10" : "Step 5 of 8",
        },
        {
          name: "fallback-configuring",
          label: `Configuring: ${fallbackText(CP_IGN, 2)}`,
          step: mode === "enhanced" ? "Step 8 of 11" : "Step 7 of 9",
        },
      ];
      if (mode === "enhanced") {
        cases.unshift({ name: "diag-local-ignition", label: `${LOCAL_IGN}: ${HEADLINE}`, step: "Step 6 of 10" });
      }
      assert.equal(fallbackText(LOCAL_IGN, 1),
        "Booted with local ignition (boot 1 from disk, reported by assisted-boot-reporter)");
      for (const c of cases) {
        const r = row(byName(c.name));
        const cell = r.locator('[data-testid="host-progress"]');
        assert.equal(await cell.locator(".pf-v6-c-progress__description").textContent(), c.label, c.name);
        assert.equal(await cell.locator('[role="progressbar"]').getAttribute("aria-valuetext"), `${c.step}: ${c.label}`);
        // The popover HostStatus opens: header, then HostProgress with the same label.
        await r.locator('[data-testid="host-status"] button').click();
        const dialog = page.getByRole("dialog");
        await dialog.waitFor({ state: "visible", timeout: 10000 });
        assert.equal((await dialog.locator(".pf-v6-c-popover__header").innerText()).trim(), "Installing");
        assert.equal(await dialog.locator(".pf-v6-c-progress__description").textContent(), c.label);
        assert.equal(await dialog.locator(".pf-v6-c-progress__status .pf-v6-c-progress__measure").textContent(), c.step);
        assert.equal(await dialog.locator('[role="progressbar"]').getAttribute("aria-valuetext"), `${c.step}: ${c.label}`);
        assert.match(await dialog.innerText(), /Step started at /);
        await page.keyboard.press("Escape");
        await dialog.waitFor({ state: "hidden", timeout: 10000 });
      }
    });

    test("no stage-timeout warning icon on hosts that have not timed out", async () => {
      const warned = [];
      for (const h of api.values()) {
        if (h.progress.stage_timed_out === true) continue;
        const icons = await row(h).locator('[data-testid="host-status"] .pf-v6-c-icon__content.pf-m-warning').count();
        if (icons) warned.push(`${h.requested_hostname} (stage_timed_out sent: ${JSON.stringify(h.progress.stage_timed_out)})`);
      }
      assert.deepEqual(warned, [], "hosts that never timed out show upstream's stage-timeout warning icon");
    });

    test("a host whose stage timed out shows the warning; one in error shows the error icon", async () => {
      const pending = byName("timeout-rebooting");
      assert.equal(pending.progress.stage_timed_out, true);
      assert.equal(pending.status, "installing-pending-user-action");
      const cell = row(pending).locator('[data-testid="host-status"]');
      const icon = cell.locator(".pf-v6-c-icon__content.pf-m-warning");
      assert.equal(await icon.count(), 1);
      await icon.click();
      const dialog = page.getByRole("dialog").filter({ hasText: TIMEOUT_TEXT });
      await dialog.waitFor({ state: "visible", timeout: 10000 });
      await page.keyboard.press("Escape");
      await dialog.waitFor({ state: "hidden", timeout: 10000 });

      // Timed out in any other stage: error, and upstream skips the warning
      // for "Error" (its red icon is the status icon).
      const failed = byName("timeout-error");
      assert.equal(failed.progress.stage_timed_out, true);
      assert.equal(failed.status, "error");
      const fcell = row(failed).locator('[data-testid="host-status"]');
      assert.equal(await fcell.locator(".pf-v6-c-icon__content.pf-m-warning").count(), 0);
      const stage = mode === "enhanced" ? CP_IGN : "Configuring";
      assert.match(failed.status_info, new RegExp(`installation stage ${stage} took longer than expected`));
      assert.equal(await row(failed).locator(".pf-v6-c-progress.pf-m-danger").count(), 1);
    });

    test("screenshot", async () => {
      // The info host's popover open, as a user would look at it.
      const info = row(byName(mode === "enhanced" ? "diag-local-ignition" : "fallback-rebooting"));
      // Centred in the viewport, so the popover opens upwards into the gap
      // the page leaves above this section, as in both screenshots.
      await info.evaluate((el) => el.scrollIntoView({ block: "center" }));
      await info.locator('[data-testid="host-status"] button').click();
      await page.getByRole("dialog").waitFor({ state: "visible", timeout: 10000 });
      await page.mouse.move(0, 0);
      const shot = join(ARTIFACTS, `${mode}.png`);
      await page.screenshot({ path: shot, fullPage: true });
      copyFileSync(shot, join(DOCS, `${mode}.png`));
      assert.deepEqual(pageErrors, []);
    });
  });
}
