"""Turns bench/run's results into the console table and docs/benchmarks.md.

Kept apart from the measuring code so that the doc can be regenerated from a
saved results file without measuring again:

    python3 bench/report.py target/bench/results.json > docs/benchmarks.md
"""

import json
import re
from pathlib import Path
import sys

MIB = 1024 * 1024
GIB = 1024 * MIB


def b(n):
    if n is None:
        return "-"
    for unit, size in (("GiB", GIB), ("MiB", MIB), ("KiB", 1024)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{int(n)} B"


def ratio(a, c):
    return a / c if c else float("nan")


def verdict(ok):
    return "**met**" if ok else "**missed**"


ENGINE_CPU_GOAL = 0.05  # issue 23: at most 5 % of gzip -6's CPU on the same bytes
ENGINE_MEM_GOAL_KIB = 2 * 1024  # and at most 2 MiB of its own memory


def journal_columns(j):
    """The diagnose section's three journals side by side: (figure, value per
    journal) rows, for the console and the Markdown alike."""
    rows = j.get("rows", [])

    def f(row, key, fmt):
        v = row.get(key)
        return "-" if v is None else fmt(v)

    pct_ = lambda x: f"{100 * x:.2f} %"  # noqa: E731
    figures = [
        ("bytes", lambda r: b(r["journal_bytes"])),
        ("lines", lambda r: f(r, "lines", lambda v: f"{v:,}")),
        ("lines with an anchor", lambda r: f(r, "anchor_fraction", lambda v: f"{100 * v:.1f} %")),
        ("gzip -6 ratio", lambda r: f(r, "gzip_bytes", lambda v: f"{r['journal_bytes'] / v:.2f}x" if v else "-")),
        ("findings", lambda r: f(r, "findings", str)),
        ("anchor lines left unread (read budget)", lambda r: f(r, "lines_unread", lambda v: f"{v:,}")),
        ("engine CPU s", lambda r: f(r, "engine_cpu_s", lambda v: f"{v:.3f}")),
        ("gzip -6 CPU s", lambda r: f(r, "gzip_cpu_s", lambda v: f"{v:.3f}")),
        ("CPU engine / gzip -6", lambda r: f(r, "cpu_ratio", pct_)),
        ("Ir slice", lambda r: f(r, "ir_bytes", b)),
        ("engine instructions", lambda r: f(r, "engine_ir", lambda v: f"{v:,}")),
        ("gzip -6 instructions", lambda r: f(r, "gzip_ir", lambda v: f"{v:,}")),
        ("Ir engine / gzip -6", lambda r: f(r, "ir_ratio", pct_)),
        ("engine Ir per byte", lambda r: f(r, "engine_ir", lambda v: f"{v / r['ir_bytes']:.2f}")),
        ("gzip -6 Ir per byte", lambda r: f(r, "gzip_ir", lambda v: f"{v / r['ir_bytes']:.2f}")),
        ("engine peak KiB", lambda r: f(r, "engine_peak_kib", str)),
    ]
    head = [r["shape"] for r in rows]
    body = [(name, [fn(r) for r in rows]) for name, fn in figures]
    for r in rows:
        for key in ("error", "ir_error"):
            if r.get(key):
                body.append((f"{r['shape']}: {key.replace('_', ' ')}", [r[key] if x is r else "" for x in rows]))
    return head, body


def journal_verdict(row):
    """(met, text) of one journal against issue 23's bound."""
    if "cpu_ratio" not in row:
        return False, "not measured"
    ok = row["cpu_ratio"] <= ENGINE_CPU_GOAL and (row.get("engine_peak_kib") or 0) <= ENGINE_MEM_GOAL_KIB
    return ok, verdict(ok)


def e2e_rows(e2e):
    for row in e2e.get("rows", []):
        a, c = row["agent"], row["baseline"]
        yield row, a, c


# ---------------------------------------------------------------------------
# Console


def table(r, quick):
    lines = ["", "figure                                        value                       goal"]
    add = lambda k, v, g="": lines.append(f"{k:<45} {v:<27} {g}")  # noqa: E731
    e2e = r.get("e2e", {})
    for row, a, c in e2e_rows(e2e):
        j = b(row["journal_bytes"])
        add(f"e2e {j}: wall agent / baseline", f"{a['wall_s']:.1f}s / {c['wall_s']:.1f}s = {ratio(a['wall_s'], c['wall_s']):.2f}", "<= 0.5")
        add(f"e2e {j}: disk writes agent / baseline", f"{b(a['write_bytes'])} / {b(c['write_bytes'])}", "agent 0 temp bytes")
        add(f"e2e {j}: bundle agent / baseline", f"{b(a['bundle_bytes'])} / {b(c['bundle_bytes'])}")
    comp = r.get("compress", {})
    head = comp.get("headline", {})
    if head:
        gib = comp["bytes"] / GIB
        g6 = head["gzip -6"]["cpu_s"] / gib
        for name, v in sorted(head.items()):
            s = v["cpu_s"] / gib
            add(f"compress {name}", f"{s:.1f} CPU s/GiB ({s / g6:.2f}x gzip -6)", "<= 0.8x gzip -6" if name.endswith("-6") else "")
    for row in r.get("memory", {}).get("rows", []):
        add(f"memory peak RSS, {row['journal']} journal", f"{row['peak_kib'] / 1024:.1f} MiB", "<= 32 MiB")
    rows = r.get("memory", {}).get("rows", [])
    if len(rows) == 2:
        add("memory ratio", f"{rows[1]['peak_kib'] / rows[0]['peak_kib']:.3f}", "<= 1.2")
    dj = r.get("diagnose", {}).get("journals")
    if dj:
        head, body = journal_columns(dj)
        lines.append("")
        lines.append(f"diagnose: the engine vs gzip -6 on three journals (goal: <= 5 % of gzip -6's CPU, <= 2 MiB)")
        lines.append(f"  {'':<24}" + "".join(f"{h:>20}" for h in head))
        for name, vals in body:
            if name.endswith("error"):
                lines.append(f"  {name}: {' '.join(v for v in vals if v)}")
            else:
                lines.append(f"  {name:<24}" + "".join(f"{v:>20}" for v in vals))
        if dj.get("instructions_skipped"):
            lines.append(f"  {dj['instructions_skipped']}")
        lines.append("")
    for row in r.get("diagnose", {}).get("rows", []):
        add(f"diagnose {b(row['journal_bytes'])}: engine share of CPU",
            f"{100 * row['share']:.1f} % ({row.get('engine_in_bundle_s', row['engine_s']):.2f}s of {row['cpu_s']:.2f}s)", "<= 10 %")
        add(f"diagnose {b(row['journal_bytes'])}: peak RSS", f"{(row['rss_kib'] or 0) / 1024:.1f} MiB")
        add(f"diagnose {b(row['journal_bytes'])}: engine's own peak memory",
            f"{(row.get('engine_peak_kib') or 0) / 1024:.2f} MiB", "a few MiB")
    idle = r.get("idle", {})
    if "cpu_s" in idle:
        add("idle: CPU per cycle", f"{idle['cpu_per_cycle_s']:.2f}s")
        add("idle: share of one core over the hour", f"{100 * 6 * idle['cpu_per_cycle_s'] / 3600:.3f} %", "<= 1 %")
        add("idle: RSS between cycles (max)", f"{(idle['idle_rss_kib_max'] or 0) / 1024:.1f} MiB")
    for row in r.get("binary", {}).get("rows", []):
        add(f"binary {row['what'][:38]}", f"{b(row['bytes'])}, gzip {b(row['gzip9_bytes'])}", "<= 4 MiB / 2 MiB")
    load = r.get("load", {})
    if "agents" in load:
        add(f"load {load['agents']} agents: errors", str(load["errors"]), "0")
        for k, v in load.get("requests", {}).items():
            add(f"load {k} p50 / p99", f"{v['p50_s']:.3f}s / {v['p99_s']:.3f}s", "p99 < 2 s")
        add("load mock peak RSS", b((load.get("mock_peak_rss_kib") or 0) * 1024))
    herd = r.get("herd", {})
    for name, (n, share) in herd_busiest(herd):
        add(f"herd {herd['agents']} agents: busiest 1 s, {name}", f"{n} uploads = {share:.1f} %", "<= 5 %")
    bundle_table(r, add)
    for k in ("e2e", "compress", "memory", "diagnose", "idle", "binary", "load", "herd", "records", "cycles", "bundle"):
        if "error" in r.get(k, {}):
            add(f"{k}", "FAILED: " + r[k]["error"][:60])
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Markdown


def hist(values, lo, hi, bins, width=50):
    if not values:
        return "(no data)"
    step = (hi - lo) / bins
    counts = [0] * bins
    for v in values:
        i = min(bins - 1, max(0, int((v - lo) / step)))
        counts[i] += 1
    peak = max(counts) or 1
    rows = []
    for i, c in enumerate(counts):
        bar = "#" * round(width * c / peak)
        rows.append(f"{lo + i * step:7.1f}–{lo + (i + 1) * step:<7.1f}s {c:5d} {bar}")
    return "\n".join(rows)


def markdown(r, quick, notes):
    m = r["machine"]
    L = []
    w = L.append
    w("# Benchmarks")
    w("")
    if quick:
        w("> **Quick run (`bench/run --quick`)**: debug builds and tiny sizes, to prove the bench runs. "
          "These figures mean nothing; the real ones are in docs/benchmarks.md.")
        w("")
    w("Every figure below comes from one run of `bench/run` (the one command that reproduces "
      "all of them: it builds the release binaries, generates its fixtures, starts the mock "
      "on 127.0.0.1 and writes this file). The agent and what it is compared with were "
      "measured side by side in that run, alternating where repeated, so the **ratios** hold "
      "on a shared, noisy machine even where absolute times drift. Raw results: "
      "`target/bench/results.json`; `python3 bench/report.py target/bench/results.json > docs/benchmarks.md` "
      "rewrites this file from them.")
    w("")
    w("## Machine")
    w("")
    w(f"- {m['date']}, {m['nproc']} cores, {m['cpu']}, kernel {m['kernel']}, {m['rustc']}")
    w(f"- load before: `{m['uptime_before']}`")
    w(f"- load after: `{m.get('uptime_after', '?')}` (the last section, the herd, had just run "
      "a thousand agent processes)")
    if m.get("fs"):
        w(f"- work directory (fixtures, temp files, state dirs): {m['fs']}")
    w("- shared with other engineers building and testing at the same time (load averages above "
      "the core count mean other work held the cores): absolute seconds are pessimistic, "
      "CPU seconds (from the kernel's accounting) are less affected, ratios least.")
    w("")
    w("```")
    w(m["free"])
    w("```")
    w("")
    w("## Summary")
    w("")
    w("| # | figure | measured | goal | |")
    w("|---|---|---|---|---|")
    summary_rows(r, w)
    w("")
    for section, fn in (("e2e", md_e2e), ("compress", md_compress), ("memory", md_memory),
                        ("diagnose", md_diagnose), ("idle", md_idle),
                        ("binary", md_binary), ("load", md_load), ("herd", md_herd),
                        ("records", md_records), ("cycles", md_cycles), ("bundle", md_bundle)):
        if section not in r:
            continue
        if "error" in r[section]:
            w(f"## {section}: could not run")
            w("")
            w(f"`{r[section]['error']}`")
            w("")
            continue
        fn(r, w)
    if notes:
        w("## Notes from this run")
        w("")
        for n in notes:
            w(f"- {n}")
        w("")
    return "\n".join(L) + "\n"


def summary_rows(r, w):
    for row, a, c in e2e_rows(r.get("e2e", {})):
        j = b(row["journal_bytes"])
        rt = ratio(a["wall_s"], c["wall_s"])
        w(f"| 1 | end to end, {j} journal: wall time agent / baseline | {rt:.2f} ({a['wall_s']:.1f} s / {c['wall_s']:.1f} s) | ≤ 0.5 | {verdict(rt <= 0.5)} |")
        w(f"| 1 | end to end, {j} journal: bytes written to disk, agent / baseline | {b(a['write_bytes'])} / {b(c['write_bytes'])} | 0 temp bytes: the agent writes its ledger only (≤ 64 KiB) | {verdict(a['write_bytes'] <= 64 * 1024)} |")
        w(f"| 1 | end to end, {j} journal: bundle agent / baseline | {b(a['bundle_bytes'])} / {b(c['bundle_bytes'])} | | |")
    comp = r.get("compress", {})
    head = comp.get("headline", {})
    if head:
        gib = comp["bytes"] / GIB
        g6 = head["gzip -6"]["cpu_s"] / gib
        agent = comp.get("agent_default", "miniz_oxide -6")
        for name in sorted(head):
            if (name.endswith(" -6") or name == agent) and not name.startswith("gzip"):
                s = head[name]["cpu_s"] / gib
                mark = " (the agent's default)" if name == agent else ""
                w(f"| 2 | compression {name}{mark}: CPU s/GiB vs gzip -6 | {s:.1f} vs {g6:.1f} = {s / g6:.2f}x | ≤ 0.8x | {verdict(s / g6 <= 0.8)} |")
    rows = r.get("memory", {}).get("rows", [])
    if len(rows) == 2:
        big = max(x["peak_kib"] for x in rows) / 1024
        rt = rows[1]["peak_kib"] / rows[0]["peak_kib"]
        w(f"| 3 | peak RSS bundling {rows[0]['journal']} / {rows[1]['journal']} journal | {rows[0]['peak_kib'] / 1024:.1f} / {rows[1]['peak_kib'] / 1024:.1f} MiB | ≤ 32 MiB | {verdict(big <= 32)} |")
        w(f"| 3 | peak RSS ratio | {rt:.3f} | ≤ 1.2 | {verdict(rt <= 1.2)} |")
    idle = r.get("idle", {})
    if "cpu_s" in idle:
        share = 100 * 6 * idle["cpu_per_cycle_s"] / 3600
        w(f"| 4 | idle cost: CPU over the hour (6 cycles × {idle['cpu_per_cycle_s']:.2f} s) | {share:.3f} % of one core | ≤ 1 % | {verdict(share <= 1)} |")
        if idle.get("idle_rss_kib_max"):
            w(f"| 4 | RSS between cycles | {idle['idle_rss_kib_max'] / 1024:.1f} MiB (max) | | |")
    budget, budget_gz = size_budget()
    for row in r.get("binary", {}).get("rows", []):
        ok = row["bytes"] <= budget and row["gzip9_bytes"] <= budget_gz
        w(f"| 5 | binary: {row['what']} | {b(row['bytes'])}, gzip -9 {b(row['gzip9_bytes'])} "
          f"| ≤ {b(budget)} / ≤ {b(budget_gz)} (packaging/build-all's budget, docs/packaging.md) | {verdict(ok)} |")
    load = r.get("load", {})
    if "agents" in load:
        w(f"| 6 | mock load, {load['agents']} agents at once: errors | {load['errors']} | 0 | {verdict(load['errors'] == 0)} |")
        for k, v in load.get("requests", {}).items():
            w(f"| 6 | mock load: {k} p50 / p99 | {v['p50_s']:.3f} s / {v['p99_s']:.3f} s | p99 < 2 s | {verdict(v['p99_s'] < 2)} |")
        w(f"| 6 | mock load: peak RSS of the mock | {b((load.get('mock_peak_rss_kib') or 0) * 1024)} | | |")
    sp = r.get("load_spread", {})
    if "agents" in sp:
        up = sp["requests"].get("upload")
        if up:
            w(f"| 6 | mock load spread over {sp['spread_s']:.0f} s: errors, upload p99, mock peak RSS | {sp['errors']}, {up['p99_s']:.3f} s, {b((sp.get('mock_peak_rss_kib') or 0) * 1024)} | 0, p99 < 2 s | {verdict(sp['errors'] == 0 and up['p99_s'] < 2)} |")
    herd = r.get("herd", {})
    for name, (n, share) in herd_busiest(herd):
        w(f"| 7 | herd, {herd['agents']} agents started together: {name}, uploads in the busiest second | {n} = {share:.1f} % | ≤ 5 % | {verdict(share <= 5)} |")
    for row in r.get("diagnose", {}).get("journals", {}).get("rows", []):
        frac = row.get("anchor_fraction")
        measured = (f"{100 * row['cpu_ratio']:.2f} % of CPU" if "cpu_ratio" in row else "not measured")
        if "ir_ratio" in row:
            measured += f" ({100 * row['ir_ratio']:.2f} % of instructions)"
        if "engine_peak_kib" in row:
            measured += f", {row['engine_peak_kib']} KiB"
        w(f"| 3b | diagnosis engine vs gzip -6, {row['shape']} journal ({b(row['journal_bytes'])}"
          f"{f', {100 * frac:.1f} % anchor lines' if frac is not None else ''}): CPU, instructions, its own peak memory "
          f"| {measured} | ≤ 5 % of gzip -6's CPU, ≤ 2 MiB | {journal_verdict(row)[1]} |")
    for row in r.get("diagnose", {}).get("rows", []):
        w(f"| 3b | diagnosis engine, {b(row['journal_bytes'])} journal: share of the bundle's CPU, its own peak memory "
          f"| {100 * row['share']:.1f} %, {(row.get('engine_peak_kib') or 0) / 1024:.2f} MiB | ≤ 10 %, a few MiB "
          f"| {verdict(row['share'] <= 0.10 and (row.get('engine_peak_kib') or 0) <= 4 * 1024)} |")
    cyc = cycles_figures(r)
    if cyc:
        w(f"| 9 | cycles: CPU of bundles 2..6 vs bundle 1 | {cyc['later_vs_first']} | what was logged since | |")
        w(f"| 9 | cycles: per bundle after the first, {b(cyc['big'])} vs {b(cyc['small'])} journal "
          f"| {cyc['flat']:.2f}x | ≤ 1.5x | {verdict(cyc['flat'] <= 1.5)} |")
        w(f"| 9 | cycles: largest write_bytes of one later bundle | {b(cyc['writes'])} | 0 beyond the ledger | |")
        w(f"| 9 | cycles: peak RSS ({b(cyc['small'])} / {b(cyc['big'])} journal) "
          f"| {cyc['peak_small'] / 1024:.1f} / {cyc['peak_big'] / 1024:.1f} MiB | ≤ 32 MiB "
          f"| {verdict(max(cyc['peak_small'], cyc['peak_big']) <= 32 * 1024)} |")
    f = bundle_figures(r)
    if f:
        d = r["bundle"]
        for shape, row in d.get("per_journal", {"generated": d}).items():
            g = bundle_figures({"bundle": row})
            w(f"| 10 | bundle CPU / gzip -6 CPU, {shape} journal ({b(row['journal_bytes'])}), median of pairs "
              f"| {g['ratio']:.2f}x | ≤ 0.45x | {verdict(g['ratio'] <= 0.45)} |")
            w(f"| 10 | bundle bytes / gzip -6 bytes, {shape} journal | {ratio(row['bundle_bytes'], row['gzip_bytes']):.3f} "
              f"| ≤ 0.95 | {verdict(ratio(row['bundle_bytes'], row['gzip_bytes']) <= 0.95)} |")
            if row.get("agent_ir"):
                w(f"| 10 | instructions collect / gzip -6, {shape} journal's first {b(row['ir_bytes'])} "
                  f"| {ratio(row['agent_ir'], row['gzip_ir']):.2f}x | | |")
        w(f"| 10 | redaction, measured apart / all but deflate and the engine | {100 * f['redact_share']:.1f} % / "
          f"{100 * f['rest_share']:.1f} % of the bundle | ≤ 15 % | {verdict(max(f['redact_share'], f['rest_share']) <= 0.15)} |")


def size_budget():
    """The x86_64 size budget packaging/build-all enforces (bytes, gzip -9
    bytes): one number, kept there."""
    text = (Path(__file__).resolve().parent.parent / "packaging" / "build-all").read_text()
    found = dict(re.findall(r"^(budget_bytes|budget_gzip_bytes)=\$\(\((\d+) \* 1024\)\)", text, re.M))
    return int(found["budget_bytes"]) * 1024, int(found["budget_gzip_bytes"]) * 1024


def cycles_figures(r):
    """The cycles section's headline figures, or None without both sizes."""
    c = r.get("cycles", {})
    runs = sorted(c.get("runs", []), key=lambda run: run["journal_bytes"])
    if len(runs) != 2:
        return None
    def later(run):
        xs = [row["cpu_s"] for row in run["rows"][1:]]
        return sum(xs) / len(xs) if xs else float("nan")
    small, big = runs
    shares = [ratio(row["cpu_s"], run["rows"][0]["cpu_s"]) for run in runs for row in run["rows"][1:]]
    return {
        "small": small["journal_bytes"], "big": big["journal_bytes"],
        "later_vs_first": f"{min(shares):.2f}x–{max(shares):.2f}x" if shares else "?",
        "flat": ratio(later(big), later(small)),
        "writes": max(row["write_bytes"] or 0 for run in runs for row in run["rows"][1:]),
        "peak_small": max(row["hwm_kib"] or 0 for row in small["rows"]),
        "peak_big": max(row["hwm_kib"] or 0 for row in big["rows"]),
    }


HERD_ROUNDS = (("first", "first round"), ("second", "second round"), ("final", "final bundle"))


def herd_busiest(herd):
    """(round name, (uploads in the busiest 1-second window, % of that
    round)) for each round the run saw."""
    rows = []
    for key, name in HERD_ROUNDS:
        starts = herd.get(key) or []
        if not starts:
            continue
        n = herd.get("busiest", {}).get(key, (None,))[0]
        if n is None:
            n = busiest_window(starts)[0]
        rows.append((name, (n, 100 * n / len(starts))))
    return rows


def busiest_window(starts, width=1.0):
    """(most starts within any `width`-second window, where it begins)."""
    s = sorted(starts)
    best, at, lo = 0, None, 0
    for hi, t in enumerate(s):
        while t - s[lo] >= width:
            lo += 1
        if hi - lo + 1 > best:
            best, at = hi - lo + 1, s[lo]
    return best, at


def med3(xs):
    return sorted(xs)[len(xs) // 2]


def md_e2e(r, w):
    e = r["e2e"]
    w("## 1. End to end: agent vs the upstream-like shell baseline")
    w("")
    w("Both ship a generated journal (`bench/tools` `journal-gen`: kubelet, crio, NetworkManager, "
      "systemd, kernel and ovs lines, gzip -6 ratio ≈ 6.5) to the same release mock on "
      "127.0.0.1, through the same fake `journalctl` (`tests/fixtures/bin/journalctl` with "
      "`FAKE_JOURNAL_FILE`, which `cat`s the file: `journalctl -b 0` prints it, unit and "
      "previous-boot queries print a few lines).")
    w("")
    w("- **agent**: the release `assisted-boot-reporter run` on a first boot (fixture root, "
      "discovery contract dir, fake `ip`/`crictl`/`nmcli`/`systemctl`): lists the hosts, sets "
      "`Booted with local ignition`, collects every member, streams the tar.gz into the "
      "upload. Wall time = start of the process to its `uploaded the first host_boot bundle` "
      "log line (then it is stopped with SIGTERM).")
    w("- **baseline**: `bench/baseline-upload`, what upstream's reverted "
      "`assisted-boot-reporter.sh` did per cycle: `journalctl > $tmp/logs/journal.log; "
      "tar czf $tmp/logs.tar.gz; curl -F upfile=@...`. Wall time = the script's run.")
    w("- **bytes written to disk**: `write_bytes` of `/proc/<pid>/io` for the whole process "
      "tree (each is run under a bash wrapper that copies its own `/proc/$$/io` after reaping "
      "the command: the kernel adds a reaped child's counters to its parent). `write_bytes` "
      "counts page-cache pages dirtied for a file on a block device (here ext4/virtio on the "
      "same file system for both), at the moment they are dirtied; rewriting a page that is still "
      "dirty does not count again; pipes and sockets never count. "
      "`cancelled` = `cancelled_write_bytes` (dirty pages dropped by a delete or truncate "
      "before writeback). The mock's own storing of the upload is a separate process, not "
      "counted for either.")
    w(f"- each measured {e['reps']}× alternating (baseline, agent, agent, baseline); medians; "
      "CPU = user + system of the process tree (`wait4`).")
    w("")
    w("| journal | who | wall s (runs) | CPU s | write_bytes | cancelled | reached the disk | bundle |")
    w("|---|---|---|---|---|---|---|---|")
    for row, a, c in e2e_rows(e):
        for who, x in (("agent", a), ("baseline", c)):
            w(f"| {b(row['journal_bytes'])} | {who} | {x['wall_s']:.1f} ({', '.join(map(str, x['walls']))}) | {x['cpu_s']:.1f} | {b(x['write_bytes'])} | {b(x['cancelled'])} | {b(x['write_bytes'] - x['cancelled'])} | {b(x['bundle_bytes'])} |")
    w("")
    w("Ratios (agent / baseline):")
    w("")
    for row, a, c in e2e_rows(e):
        w(f"- {b(row['journal_bytes'])}: wall **{ratio(a['wall_s'], c['wall_s']):.2f}**, CPU "
          f"{ratio(a['cpu_s'], c['cpu_s']):.2f}, disk writes {ratio(a['write_bytes'], c['write_bytes']):.3f}, "
          f"bundle {ratio(a['bundle_bytes'], c['bundle_bytes']):.3f}")
    w("")
    w("**Read with care.** The two do not ship the same thing. Past 64 MiB a journal member "
      "keeps its newest 64 MiB (docs/bundle.md, caps): the agent's 1 GiB bundle holds the "
      "last 64 MiB of the journal plus every other member, the baseline's the whole GiB "
      "(which assisted-service, with its 250 MiB upload limit, would refuse when it "
      "compresses above that). Most of the 1 GiB ratio is the cap, not speed. The 50 MiB "
      "row is under every cap: the same journal bytes on both sides (the agent adds the "
      "other ~40 members and sets the stage), so it compares the pipelines themselves.")
    w("")
    w("**At equal content the wall-time goal is missed.** Both are bound by one core deflating "
      "the same bytes. The agent's deflate needs about half of gzip -6's CPU (section 2, level "
      "4), and a whole bundle 0.7x (section 10), but in this comparison the agent also pays for "
      "the fixture `journalctl`: to hand out cursors it pipes the journal through `awk`, which "
      + (f"costs {med3(r['bundle']['journalctl_cpu_s']):.2f} s of CPU per 60 MiB against the agent's own "
         f"{med3(r['bundle']['agent_cpu_s']):.2f} s (section 10 measures both apart), "
         if r.get("bundle", {}).get("journalctl_cpu_s") else "costs a large part of the agent's own CPU, ")
      + "where the baseline's `journalctl -b 0` is a plain `cat`; the real journalctl reads its "
      "binary journal either way. On top come the other ~40 members (each a command run or a "
      "file read) and the stage report. What would close the rest: deflating on a second core "
      "(parallel gzip members, as pigz does), which the agent deliberately does not do on a "
      "host that is installing (its unit runs at idle CPU priority).")
    w("")
    w("**Temp bytes.** The agent writes no temporary file: a member's content waits in "
      "memory as compressed chunks (independent gzip members of about 1 MiB, "
      "`collect/chunks.rs`), the tar header is emitted once the member's size is known, and "
      "the bundle streams into the upload. What its `write_bytes` counts is its ledger "
      "(`ledger.rs`, the one file it writes, replaced atomically by a new file at each boot "
      "record, stage and upload: a few KiB each, so a few tens of KiB per run). The baseline "
      "writes the whole journal plus its tar.gz; \"reached the disk\" = `write_bytes − "
      "cancelled_write_bytes` shows the page cache absorbed most of it here because the "
      "script deletes its temp directory seconds later, which it would not on a host under "
      "memory pressure, and the baseline also needs the free space for both.")
    w("")


def md_compress(r, w):
    c = r["compress"]
    gib = c["bytes"] / GIB
    head = c["headline"]
    g6 = head["gzip -6"]["cpu_s"] / gib
    w("## 2. Compression: CPU per GiB, flate2 backends and levels")
    w("")
    w(f"Data: {b(c['bytes'])} of the generated journal, in the page cache. `bench/deflate` "
      "(its own cargo package, not a workspace member, so its flate2 features cannot leak "
      "into the agent) runs the agent's compression path — the input cut into ~1 MiB pieces at "
      "line ends, each sealed as an independent gzip member from a whole buffer "
      "(`collect::chunks::Sealer`) — once per candidate, built with the agent's release profile "
      "(`opt-level = \"z\"`, fat LTO, one codegen unit); `release-z-backend-o2`/`-o3` are the same "
      "with only the compressor's crate at that opt-level, `release-thin-backend-o3` with thin LTO "
      "(bench/deflate/Cargo.toml; `bench/deflate/sweep` compares them on two journals). CPU = the compressing thread's run time from "
      "`/proc/thread-self/schedstat` (input already in memory). `gzip -N` = GNU gzip "
      "reading the same file from the page cache into a pipe, CPU = user + system from "
      f"`wait4`. Headline figures: median of {c['reps']} interleaved rounds.")
    w("")
    w("| what | CPU s/GiB | × gzip -6 | output | ratio |")
    w("|---|---|---|---|---|")
    for name in sorted(head, key=lambda n: (n.split()[-1], n)):
        v = head[name]
        s = v["cpu_s"] / gib
        w(f"| {name} | {s:.2f} | {s / g6:.2f} | {b(v['out'])} | {c['bytes'] / v['out']:.2f} |")
    w("")
    w("Level sweep (one run each):")
    w("")
    w("| backend | profile | level | CPU s/GiB | ratio |")
    w("|---|---|---|---|---|")
    for x in c["sweep"]:
        w(f"| {x['backend']} | {x['profile']} | {x['level']} | {x['cpu_s'] / gib:.2f} | {x['in'] / x['out']:.2f} |")
    w("")
    compress_discussion(c, w)


def compress_discussion(c, w):
    gib = c["bytes"] / GIB
    head = c["headline"]
    g6 = head["gzip -6"]["cpu_s"] / gib
    agent = c.get("agent_backend", "miniz_oxide")
    w(f"**Compressor.** The agent compresses with `{agent}`, profile "
      f"`{c.get('agent_profile', 'release')}` (root Cargo.toml). At level 6:")
    w("")
    for name in sorted(n for n in head if n.endswith(" -6") and not n.startswith("gzip")):
        s = head[name]["cpu_s"] / gib
        w(f"- {name[:-3]}: {s:.1f} CPU s/GiB = {s / g6:.2f}x gzip -6, ratio {c['bytes'] / head[name]['out']:.2f}")
    w("")
    w("libdeflate (C, built by the cc crate with the C cross compiler packaging/build-all "
      "already sets up for ring) was chosen over zlib-rs by `bench/deflate/sweep` on the "
      "generated and busy journals (issue 26). Cost in size: section 5.")
    w("")
    sweep = [x for x in c["sweep"] if x["backend"] == agent and x["profile"] == c.get("agent_profile", "release")]
    if sweep:
        w(f"**Level.** With `{agent}`, what one bundle at the 200 MiB cap costs "
          "(the most a bundle can hold; a typical first-boot bundle is smaller) and what it "
          "puts on the wire:")
        w("")
        w("| level | CPU s per 200 MiB bundle | on the wire | share of one core at 6 bundles/h |")
        w("|---|---|---|---|")
        for x in sweep:
            cpu = x["cpu_s"] / gib * 200 / 1024
            wire = 200 * MIB * x["out"] / x["in"]
            w(f"| {x['level']} | {cpu:.2f} | {b(wire)} | {100 * 6 * cpu / 3600:.3f} % |")
        w("")
    by_level = {x["level"]: x for x in sweep}
    level = c.get("agent_level", 6)
    gzip6 = head["gzip -6"]["out"]
    if {1, 6, level} <= by_level.keys():
        cpu = {lv: by_level[lv]["cpu_s"] / gib for lv in by_level}
        wire = {lv: by_level[lv]["out"] / by_level[lv]["in"] for lv in by_level}
        lower = max((lv for lv in by_level if lv < level), default=None)
        # The headline rounds (median of 3) beat the one-run sweep for the
        # level-vs-6 CPU when both levels are in them.
        agent_name = c.get("agent_default", "")
        six_name = agent_name.rsplit(" -", 1)[0] + " -6"
        if agent_name in head and six_name in head:
            cpu[level] = head[agent_name]["cpu_s"] / gib
            cpu[6] = head[six_name]["cpu_s"] / gib
        w(f"**Default level: {level}** (`collect::chunks::GZIP_LEVEL`). It costs {cpu[level] / cpu[6]:.2f}x the CPU "
          f"of this backend's level 6 and ships {wire[level] / wire[6]:.3f}x its bytes; against `gzip -6` "
          f"of the same file its output is {by_level[level]['out'] / gzip6:.3f}x the size, so the "
          "bundle is no bigger than the baseline's for less CPU. "
          + (f"Level {lower} would save another {100 * (1 - cpu[lower] / cpu[level]):.0f} % of the CPU but ship "
             f"{100 * (wire[lower] / wire[level] - 1):.0f} % more bytes; level 1 {wire[1] / wire[level]:.2f}x the bytes. "
             if lower else "")
          + "Every host of a cluster uploads its complete, cumulative bundle every 10 minutes to one "
          "service, often over a WAN link to the SaaS: bytes on the wire are paid on the network and "
          "by the service, CPU only on a host where it is already cheap (even a bundle at the 200 MiB "
          "cap costs a fraction of a percent of one core over the hour, table above). "
          + (f"In this run {level} is the lowest level whose output is no bigger than `gzip -6`'s; "
             "its CPU is what keeps a whole bundle near or under 0.75x the CPU of `gzip -6` (section 10)."
             if min((lv for lv in by_level if by_level[lv]["out"] <= gzip6), default=None) == level else
             f"In this run {level} is not the lowest level whose output is no bigger than `gzip -6`'s: "
             "the choice should be looked at again."))
        w("")


def md_memory(r, w):
    m = r["memory"]
    w("## 3. Memory: peak RSS bundling 100 MiB vs 1 GiB")
    w("")
    w("`bench/bundle-memory` (reused as is): `assisted-boot-reporter collect -o FILE` on the "
      "fixture root with the fake journalctl printing a journal of that size "
      "(`FAKE_JOURNAL_BYTES`, 64-byte filler lines, plus a token line to redact). "
      "\"peak RSS\" is the binary's own VmHWM from its summary line; \"time(1)\" is GNU "
      "time's maxrss, which covers the process only, not the journalctl it runs.")
    w("")
    w("```")
    w(m["text"])
    w("```")
    w("")


def md_diagnose(r, w):
    d = r["diagnose"]
    w("## 3b. Diagnosis: the engine against gzip -6 on three journals, its share of a bundle's CPU, and RSS")
    w("")
    if d.get("journals"):
        md_diagnose_journals(d["journals"], w)
    if "rows" not in d:
        if d.get("rows_error"):
            w(f"The bundle share could not be measured: `{d['rows_error']}`")
            w("")
        return
    w("### The engine's share of a bundle")
    w("")
    w("`assisted-boot-reporter collect` on the fixture root, this boot's journal a generated one "
      "(bench/tools journal-gen) of the size below. Bundle CPU is the kernel's user+system time of "
      "the collect process itself (its /proc stat at exit), not of the fixture journalctl it runs "
      "(a shell script that pipes the journal file through awk for cursors; the real journalctl "
      "reads its binary journal). The engine's CPU is measured apart, because inside "
      "`collect` it is interleaved with redaction and compression: `bench/tools diagnose-scan` "
      "feeds the same journal bytes to the same `diagnose::Scanner` in 64 KiB pieces and "
      "correlates, and reports its thread's CPU (a full run: the mean of 5 scans in one process). The bundle reads its "
      "journal members once more per unit, so the share is per byte scanned. Peak RSS is the "
      "binary's VmHWM (the engine's state is bounded: see docs/diagnosis.md). "
      f"First size: median of {d['reps']} runs. Goal (issue 13): the engine adds at most 10 % "
      "to the bundle's CPU and nothing to RSS beyond a few MiB whatever the journal size.")
    w("")
    w("| journal | bundle CPU | engine on the whole file (lines) | engine on the bundle's lines (lines) | share | findings | engine's own peak memory | bundle peak RSS |")
    w("|---|---|---|---|---|---|---|---|")
    for row in d["rows"]:
        w(f"| {b(row['journal_bytes'])} | {row['cpu_s']:.2f} s | {row['engine_s']:.3f} s ({row.get('scan_lines') or 0:,.0f}) | "
          f"{row.get('engine_in_bundle_s', row['engine_s']):.3f} s ({row['lines'] or 0:,}) | "
          f"{100 * row['share']:.1f} % | {row['findings']} | "
          f"{(row.get('engine_peak_kib') or 0) / 1024:.2f} MiB | {(row['rss_kib'] or 0) / 1024:.1f} MiB |")
    w("")
    w("The engine's own peak memory is `diagnose-scan`'s peak RSS after the scan minus its RSS "
      "with the journal loaded and nothing scanned yet: what the scanner and the correlation "
      "hold. The bundle's peak RSS is the whole `collect` process.")
    w("")


def md_diagnose_journals(j, w):
    w("### The engine on three journals, against gzip -6 on the same bytes")
    w("")
    w(f"Three journals of {b(j['journal_bytes'])} (`bench/tools journal-gen --shape`, seed 1, "
      "`journalctl -o short-iso-precise` lines), built once per run and shared with every section "
      "that takes a journal: **generated** (a first boot going well: kubelet, crio, "
      "NetworkManager, systemd, kernel, ovs; the journal every other section uses), **busy** (a "
      "control-plane host under load: the same lines mixed with etcd's zap JSON warnings, "
      "`apply request took too long`, `slow fdatasync`, missed heartbeats, ReadIndex retries, and "
      "its info traces; kubelet's klog reflector, lease, node-status, event and probe errors "
      "against an API that comes and goes; crio, ovs-vswitchd, ovsdb-server, ovn-controller; "
      "the generator checks every line against the engine's own `diagnose::ANCHORS` and draws "
      "a failure line when the running fraction of lines with an anchor falls behind 15 %), and "
      "**worst** (every line carries an anchor: failure lines of every family, DNS, proxy, TLS, "
      "registry, disk, container storage, etcd, clock, links, SELinux, failed units, values "
      "varied). \"Lines with an anchor\" is measured by the generator with the engine's anchors.")
    w("")
    w(f"**CPU**: median of {j['pairs']} alternating pairs on the whole journal: the engine = "
      "`bench/tools diagnose-scan` (the journal read into memory first, then fed to "
      "`diagnose::Scanner` in 64 KiB pieces, placed and correlated by `diagnose::Engine`; the scan "
      "thread's run time from /proc/thread-self/schedstat, in ns; that of a running thread moves at "
      f"the scheduler's ticks, 4 ms here, so each run scans the journal {j.get('repeat', 1)} times "
      "with a fresh scanner and engine and takes the mean), against `gzip -6 -c` of the same "
      "file (user + system from its rusage, reading included). **Instructions**: valgrind's "
      "callgrind on the journal's first "
      f"{b(j['slice_bytes'])} (cut at a line end): the engine's Ir = `diagnose-scan FILE` minus "
      "`diagnose-scan --no-scan FILE` (the same process reading the same file, no engine), so "
      "process start and the read are not counted; gzip -6's Ir is its whole process on the "
      "same slice. **Memory**: the engine's own peak = `diagnose-scan`'s VmHWM after its first scan minus "
      "its RSS before it (the peak is reset through /proc/self/clear_refs once the journal is in "
      "memory), the largest of the runs. Goal (issue 23): on each journal the engine costs at most "
      "5 % of gzip -6's CPU on the same bytes and at most 2 MiB of its own memory.")
    w("")
    head, body = journal_columns(j)
    w("| | " + " | ".join(head) + " |")
    w("|---|" + "---|" * len(head))
    for name, vals in body:
        w(f"| {name} | " + " | ".join(vals) + " |")
    met = [journal_verdict(row) for row in j.get("rows", [])]
    w("| goal: ≤ 5 % of gzip -6's CPU, ≤ 2 MiB | " + " | ".join(v for _, v in met) + " |")
    w("")
    if j.get("instructions_skipped"):
        w(j["instructions_skipped"])
        w("")


def md_idle(r, w):
    i = r["idle"]
    share = 100 * 6 * i["cpu_per_cycle_s"] / 3600
    w("## 4. Idle cost over a simulated hour")
    w("")
    w(f"The release agent on a first boot against the mock, a {i['journal_bytes'] / 1e6:.0f} MB "
      f"generated journal, `--upload-interval {i['interval_s']:.0f}s` standing for the real 10 "
      f"minutes; stopped after its {i['cycles']}th upload (uploads at "
      f"{', '.join(f'{t:.1f}' for t in i['upload_times'])} s). CPU = user + system of the "
      "agent and every command it ran (`wait4` on the wrapper, i.e. `/proc/<pid>/stat` "
      "utime+stime+cutime+cstime at exit). The real hour holds the same 6 cycles; between "
      "them the agent sleeps on one timer (first boot: no kubelet polling), so the hour's "
      "cost is the cycles' cost.")
    w("")
    w(f"- CPU over the run: {i['cpu_s']:.2f} s for {i['cycles']} cycles = **{i['cpu_per_cycle_s']:.2f} s per cycle**")
    w(f"- over the real hour: 6 × {i['cpu_per_cycle_s']:.2f} s / 3600 s = **{share:.3f} % of one core** (goal ≤ 1 %)")
    if i.get("idle_rss_kib_max"):
        w(f"- RSS between cycles (VmRSS sampled every 100 ms while no collector child ran and "
          f"the agent used no CPU, {i['idle_observed_s']:.1f} s of such samples): median "
          f"{i['idle_rss_kib_median'] / 1024:.1f} MiB, max {i['idle_rss_kib_max'] / 1024:.1f} MiB; "
          f"peak (VmHWM) {(i['peak_rss_kib'] or 0) / 1024:.1f} MiB")
    w("")


def md_binary(r, w):
    w("## 5. Binary size")
    w("")
    w("The x86_64 static (glibc `+crt-static`) release binary, built as `packaging/build-all` "
      "does (`--target x86_64-unknown-linux-gnu`, `-Wl,-u,statx`, RELR, `--icf=all`), "
      "stripped by the release profile; gzip = `gzip -9`, what an ignition `compression: "
      "gzip` file source carries. Profile and dependency feature trimming are "
      "docs/packaging.md's (issue 5); the backend's impact is in section 2's discussion.")
    w("")
    w("| binary | bytes | gzip -9 | static | stripped |")
    w("|---|---|---|---|---|")
    for row in r["binary"]["rows"]:
        w(f"| {row['what']} | {row['bytes']:,} ({b(row['bytes'])}) | {row['gzip9_bytes']:,} ({b(row['gzip9_bytes'])}) | {row['static']} | {row['stripped']} |")
    w("")
    w("The dist/ binary is the shipped artifact (packaging/build-all now also rebuilds std "
      "with the release profile and without unwind tables, docs/packaging.md); the other row "
      "uses rustup's prebuilt std with the flags of cross-build.md, which is over budget, so "
      "the budget holds only with packaging/build-all's recipe.")
    w("")
    sizes = r["binary"].get("backend_sizes")
    if sizes:
        w("What the deflate backend costs in code: the `bench/deflate` program (a `GzEncoder` "
          "and nothing else) built per backend with the agent's profile, stripped (not "
          "static); the difference between rows is the backend's size:")
        w("")
        w("| backend, profile | bytes |")
        w("|---|---|")
        for k, v in sizes.items():
            w(f"| {k} | {v:,} |")
        w("")
        w("For the whole agent, the switch from miniz_oxide to zlib-rs with its opt-level 3 "
          "override was measured once, outside this run, with the rustup-std recipe above "
          "(`cargo build --release -p assisted-boot-reporter --target x86_64-unknown-linux-gnu` "
          "with the same RUSTFLAGS, before and after the Cargo.toml change): 4,451,352 → "
          "4,504,056 bytes (+52,704), gzip -9 2,185,464 → 2,209,828 (+24,364).")
        w("")


def md_load(r, w):
    l = r["load"]
    w("## 6. Mock service load")
    w("")
    w(f"`bench/tools` `mock-load`: {l['agents']} simulated agents, each with its own HTTP "
      "client (own connection), built first and then released at the same instant by a "
      "barrier; each lists its infra-env's hosts (50 hosts per cluster), sets `Booted with "
      f"local ignition`, uploads a real `host_boot` bundle of {b(l['bundle_bytes'])} (made by "
      "`assisted-boot-reporter collect` from a generated journal). One attempt per request, "
      f"120 s timeout per request, 600 s for the run. Release mock, data dir on {l['data_dir']}; "
      "it writes, fsyncs and then reads through every upload (gunzip + tar) to mark it "
      "valid. Latency = request sent to last byte of the answer. Peak RSS = the mock's "
      "VmHWM at the end.")
    w("")
    w("Two runs against a fresh mock each: **burst**, all agents released at once (the goal's "
      "scenario), and **spread**, each agent starting at a uniformly random offset over "
      f"{r.get('load_spread', {}).get('spread_s', 0):.0f} s, which is how the ±10 % jitter spreads "
      "the hosts of a cluster from their second cycle on (section 7).")
    w("")
    for name, run in (("burst", l), ("spread", r.get("load_spread"))):
        if not run or "agents" not in run:
            continue
        w(f"**{name}**: agents completed {run['completed_agents']} / {run['agents']}, errors "
          f"**{run['errors']}** {json.dumps(run['error_kinds']) if run['error_kinds'] else ''}; "
          f"run {run['wall_s']:.1f} s, {b(run['uploaded_bytes'])} uploaded; mock peak RSS "
          f"**{b((run.get('mock_peak_rss_kib') or 0) * 1024)}**, mock CPU {run.get('mock_cpu_s') or 0:.1f} s")
        w("")
        w("| request | count | p50 s | p90 s | p99 s | max s |")
        w("|---|---|---|---|---|---|")
        for k, v in list(run["requests"].items()) + [("whole agent", run["agent_total"])]:
            w(f"| {k} | {v['count']} | {v['p50_s']:.3f} | {v['p90_s']:.3f} | {v['p99_s']:.3f} | {v['max_s']:.3f} |")
        w("")
    up = l["requests"].get("upload", {})
    if up and up.get("p99_s", 0) >= 2:
        total = l["bundle_bytes"] * l["agents"]
        w(f"**Why the burst misses p99 < 2 s.** All {l['agents']} agents push {b(total)} at once "
          f"into a mock on {r['machine']['nproc']} shared cores, which writes and fsyncs each "
          "upload and then inflates it completely (about 6.5x the bytes) to mark it valid, on "
          "tokio's blocking pool: the last upload cannot finish before the mock has done all "
          "of that, so the upload p99 is the run's length, and the CPU-bound validations "
          "starve the small requests too. This is the mock's cost, not the agent's: inflating "
          "every upload is a test feature of the mock; assisted-service's contract "
          "(reference/assisted-service-contract.md) only limits the size. What would close it: in the mock, "
          "a semaphore of one validation per core (keeps the API answering while uploads "
          "queue), or validating lazily when a bundle is viewed; in the field, the arrival "
          "pattern of the spread run, which is what the jitter produces from the second "
          "cycle on and `--upload-spread` (1 min by default) for the first and the final "
          "bundle (section 7). The mock's peak RSS grows with uploads in flight, not with their "
          "total size (same bytes in both runs, 1,000 in flight vs a few); where inside the "
          "mock (hyper's connection buffers, the blocking pool's threads) was not broken down.")
        w("")


def md_herd(r, w):
    h = r["herd"]
    iv = h["interval_s"]
    w("## 7. Herd: agents started in the same second")
    w("")
    w(f"{h['agents']} real release agents (one process each, own discovery contract and state "
      f"directory, one shared fixture root, first boot) against one mock, each spawned "
      "stopped (`sh -c 'kill -STOP $$; exec agent …'`) and then all released by SIGCONT "
      f"within {h['spawn_s']:.2f} s, `--upload-interval {iv:.0f}s --timeout {h['timeout_s']:.0f}s` "
      "and the default `--upload-spread` (1 min). Their PATH is an empty directory so "
      "that collectors find no command to run and a thousand agents fit on two cores; the "
      "scheduling under test is the real code: the stage report at once, the first bundle "
      "after a per-host share of the spread (`agent::spread::first_bundle_delay`), then the interval "
      "with ±10 % jitter (`agent::spread::jittered`), and when the budget is spent the final bundle "
      "after another per-host share, within half the final grace "
      f"(here {h['grace_s']:.0f} s, `agent::spread::final_bundle_delay`). The budget is "
      f"{h['timeout_s']:.0f} s, not 1 h, to see the final bundle in minutes; it is long enough "
      "that half its grace is not below the spread, as with 1 h. Upload start = the mock's "
      "request journal time of each `POST …/logs`, relative to the release; the final upload "
      "is each agent's last one when its log says it shipped the final bundle. "
      f"{h.get('exited_by_themselves', '?')} of {h['agents']} agents left by themselves "
      "(final bundle, cleanup) before the bench's bound.")
    w("")
    w("The goal (issue 15): no 1-second window holds more than 5 % of any round's uploads.")
    w("")
    w("| round | uploads | from – to (s after the release) | busiest second | share |")
    w("|---|---|---|---|---|")
    for key, name in HERD_ROUNDS:
        v = h.get(key) or []
        if not v:
            w(f"| {name} | 0 | – | – | – |")
            continue
        n, at = busiest_window(v)
        w(f"| {name} | {len(v)} | {min(v):.1f} – {max(v):.1f} | {n} (from {at:.1f} s) | "
          f"{100 * n / len(v):.1f} % {verdict(100 * n / len(v) <= 5)} |")
    w("")
    for key, name in HERD_ROUNDS:
        v = h.get(key) or []
        if v:
            w(f"{name.capitalize()} ({len(v)} uploads), seconds after the release:")
            w("")
            w("```")
            w(hist(v, min(v), max(v) + 1e-9, 24))
            w("```")
            w("")
    for key in ("first", "final"):
        waits = h.get(f"waits_{key}") or []
        if waits:
            w(f"The agents' own account of the {key} bundle's wait ({len(waits)} logged): "
              f"{min(waits):.1f}–{max(waits):.1f} s, median {sorted(waits)[len(waits) // 2]:.1f} s.")
            w("")
    g = h.get("gaps", [])
    if g:
        w("Per host, second upload start minus first upload start (the first upload's "
          f"duration plus the jittered wait; the jitter alone spans {0.9 * iv:.0f}–{1.1 * iv:.0f} s):")
        w("")
        w("```")
        w(hist(g, 0.85 * iv, max(max(g), 1.15 * iv), 16))
        w("```")
        w("")
    sim = h["sim_600"]
    w("From the second cycle on, at the real interval (10 min) the jitter alone, simulated for "
      "1,000 hosts (`interval × (0.9 + 0.2 U)`, U uniform; a faithful simulation of "
      "`agent::spread::jittered`, not the binary), spreads a round over 120 s:")
    w("")
    w("```")
    w(hist(sim, 540, 660, 12))
    w("```")
    w("")


def _size(n):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def md_records(r, w):
    w("## 8. Records summary: 16 MiB of any shape")
    w("")
    w("`bench/tools` `records-summary`: each record file is built in memory at the parse "
      "limit (16 MiB, what the agent reads of one file; 2 MiB in the quick run) and summarized "
      "as the records collector does (parse, timeline, digest, `records/summary.json` serialized). "
      "CPU is the thread's own (`/proc/thread-self/schedstat`), best of 3 (1 in the quick run). The goal: under a "
      "second of CPU whatever the shape (issue 12; 80,000 `stage end`s took 82 s before "
      "the parse became linear).")
    w("")
    w("| shape | input | entries kept | summary.json | CPU |")
    w("|---|---|---|---|---|")
    for row in r["records"]["rows"]:
        w(f"| {row['shape']} | {_size(row['input_bytes'])} | {row['entries_kept']:,} | "
          f"{_size(row['summary_bytes'])} | {row['cpu_ms']:.0f} ms |")
    w("")


def md_cycles(r, w):
    c = r["cycles"]
    w("## 9. Cycles: each journal byte once per run")
    w("")
    w(f"One `run` of the release agent against the mock, bundles every {c.get('interval_s', 3)} s, this boot's journal a "
      "generated one (bench/tools journal-gen) of the size below that grows by "
      f"{b(c['growth_bytes'])} after each upload (the bench appends between bundles). Per bundle: "
      "the agent's own CPU (utime+stime of its threads from /proc; the fake journalctl's time is "
      "not the reporter's), its own `write_bytes` (/proc/PID/io; the agent writes its ledger, "
      "nothing else), peak RSS (VmHWM) after that bundle. The first bundle reads the newest "
      "entries the 64 MiB member cap keeps (a probe of 2000 entries, then `--lines=N`); every "
      "later one asks journalctl only for the entries after its cursor and ships the rest from "
      "the compressed chunks it kept. Goals (issue 15): cycles 2..6 cost what was logged since "
      "the cycle before; a 1 GiB journal costs at most 1.5x the CPU of a 64 MiB one per cycle "
      "after the first; write_bytes 0 per upload beyond the ledger; peak RSS within 32 MiB.")
    w("")
    w("| journal | bundle | CPU | vs bundle 1 | write_bytes | peak RSS | compressed |")
    w("|---|---|---|---|---|---|---|")
    after = {}
    for run in c["runs"]:
        rows = run["rows"]
        first = rows[0]["cpu_s"] or float("nan")
        for i, row in enumerate(rows):
            w(f"| {b(run['journal_bytes'])} | {i + 1} | {row['cpu_s']:.2f} s | {ratio(row['cpu_s'], first):.2f}x | "
              f"{b(row['write_bytes'])} | {(row['hwm_kib'] or 0) / 1024:.1f} MiB | {b(row['bundle'])} |")
        later = [row["cpu_s"] for row in rows[1:]]
        after[run["journal_bytes"]] = (sum(later) / len(later) if later else float("nan"), rows[0]["cpu_s"])
    w("")
    if len(after) == 2:
        (small, (s_later, s_first)), (big, (b_later, b_first)) = sorted(after.items())
        w(f"- per bundle after the first, {b(big)} vs {b(small)}: {b_later:.3f} s vs {s_later:.3f} s = "
          f"{ratio(b_later, s_later):.2f}x (goal <= 1.5x: {verdict(ratio(b_later, s_later) <= 1.5)})")
        w(f"- first bundle, {b(big)} vs {b(small)}: {b_first:.2f} s vs {s_first:.2f} s = "
          f"{ratio(b_first, s_first):.2f}x (the first reads only what the cap keeps)")
        writes = max(row["write_bytes"] or 0 for run in c["runs"] for row in run["rows"][1:])
        w(f"- largest write_bytes of one later bundle: {b(writes)} (goal: 0 beyond the ledger)")
        peak = max(row["hwm_kib"] or 0 for run in c["runs"] for row in run["rows"])
        w(f"- peak RSS: {peak / 1024:.1f} MiB (goal <= 32 MiB: {verdict(peak <= 32 * 1024)})")
        w("")
def bundle_figures(r):
    """The bundle section's medians and shares, or None."""
    d = r.get("bundle", {})
    if "agent_cpu_s" not in d:
        return None
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    a, g = med(d["agent_cpu_s"]), med(d["gzip_cpu_s"])
    # Everything but deflate and the engine: redaction, tar, the other
    # members, bookkeeping, process start.
    rest = a - d["deflate_s"] - d["engine_s"]
    return {"agent": a, "gzip": g, "ratio": ratio(a, g), "redact_share": ratio(d["redact_s"], a),
            "engine_share": ratio(d["engine_s"], a), "deflate_share": ratio(d["deflate_s"], a),
            "rest_share": ratio(rest, a)}


def bundle_table(r, add):
    f = bundle_figures(r)
    if not f:
        return
    j = b(r["bundle"]["journal_bytes"])
    add(f"bundle {j}: CPU collect / gzip -6", f"{f['agent']:.2f}s / {f['gzip']:.2f}s = {f['ratio']:.2f}x", "<= 0.45x")
    add(f"bundle {j}: redaction share", f"{100 * f['redact_share']:.1f} %")
    add(f"bundle {j}: all but deflate and engine", f"{100 * f['rest_share']:.1f} %", "<= 15 %")
    add(f"bundle {j}: diagnosis engine share", f"{100 * f['engine_share']:.1f} %", "<= 10 %")


def md_bundle(r, w):
    d = r["bundle"]
    f = bundle_figures(r)
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    mb = d["journal_bytes"] / 1e6
    w("## 10. Bundle CPU vs gzip -6, and its parts")
    w("")
    w(f"The release `collect` on the fixture root, this boot's journal a generated one of {b(d['journal_bytes'])} "
      "(bench/tools journal-gen, seed 1), a contract dir with a pull secret shaped like a real one "
      "(four registries, two ~1.1 KB auths; every form of it is redacted), against `gzip -6` of the "
      f"same file, alternating, {d['runs']} runs each; CPU = user + system of the reporter's own "
      "process (its /proc stat at exit), not of the fixture journalctl it runs: that is a shell "
      "script piping the journal file through awk to number entries for cursors"
      + (f" ({med(d['journalctl_cpu_s']):.2f} s per run here, left out)" if d.get("journalctl_cpu_s") else "")
      + ", where the real journalctl reads its binary journal. The parts are measured apart on the same bytes, median of 3 (bench/tools, process CPU): "
      "`redact-scan` builds the redactor from the same pull secret as `collect` does, streams the "
      "journal through it in 64 KiB pieces, then seals its output in ~1 MiB gzip members at the bundle's "
      "level with the agent's compressor (`collect::chunks::Sealer`, libdeflate); `diagnose-scan` feeds the journal to the diagnosis engine. \"All but deflate "
      "and the engine\" = bundle CPU − deflate − engine: redaction, tar, the other members, "
      "bookkeeping and process start (issue 15's \"redaction + tar + bookkeeping\").")
    w("")
    w(f"Redactor: {d['redactor']}; built in {1000 * d['build_s']:.0f} ms CPU; {d['redactions']} redactions in the journal.")
    w("")
    w("| figure | measured | goal | |")
    w("|---|---|---|---|")
    w(f"| bundle CPU / gzip -6 CPU | {f['agent']:.2f} s / {f['gzip']:.2f} s = {f['ratio']:.2f}x "
      f"(runs {', '.join(f'{x:.2f}' for x in d['agent_cpu_s'])} / {', '.join(f'{x:.2f}' for x in d['gzip_cpu_s'])}) "
      f"| ≤ 0.45x (issue 26) | {verdict(f['ratio'] <= 0.45)} |")
    w(f"| redaction, realistic pull secret | {d['redact_s']:.3f} s = {mb / d['redact_s']:.0f} MB/s, "
      f"{100 * f['redact_share']:.1f} % of the bundle | | |" if d["redact_s"] else
      f"| redaction, realistic pull secret | {d['redact_s']:.3f} s | | |")
    w(f"| redaction, shapes only | {d['redact_shapes_s']:.3f} s | | |")
    w(f"| libdeflate -{d.get('level', 6)} of the redacted journal | {d['deflate_s']:.3f} s = {100 * f['deflate_share']:.1f} % "
      f"of the bundle = {ratio(d['deflate_s'], f['gzip']):.2f}x gzip -6 | | |")
    if d.get("bundle_bytes"):
        w(f"| bundle size / gzip -6 output of the journal | {b(d['bundle_bytes'])} / {b(d['gzip_bytes'])} = "
          f"{ratio(d['bundle_bytes'], d['gzip_bytes']):.3f} (the bundle also holds the other members and the manifest) "
          f"| | |")
    w(f"| all but deflate and the engine | {100 * f['rest_share']:.1f} % of the bundle | ≤ 15 % "
      f"| {verdict(f['rest_share'] <= 0.15)} |")
    w(f"| diagnosis engine | {d['engine_s']:.3f} s = {100 * f['engine_share']:.1f} % of the bundle | ≤ 10 % "
      f"| {verdict(f['engine_share'] <= 0.10)} |")
    w("")
    per = d.get("per_journal")
    if per:
        w("Both journals (the busy one: a control-plane host under load, section 3b), same method; "
          "instructions = callgrind's Ir of the reporter's own process (`collect`, not the fixture "
          "journalctl) and of gzip -6's whole process, on the journal's first 8 MiB cut at a line end:")
        w("")
        w("| journal | bundle CPU / gzip -6 CPU (median of pairs; runs) | bundle bytes / gzip -6 bytes "
          "| Ir collect / gzip -6 | compressor apart | engine apart | redaction apart | goal: ≤ 0.45x CPU at ≤ 0.95x bytes |")
        w("|---|---|---|---|---|---|---|---|")
        for shape, row in per.items():
            g = bundle_figures({"bundle": row})
            byt = ratio(row["bundle_bytes"], row["gzip_bytes"])
            ir = (f"{row['agent_ir']:,} / {row['gzip_ir']:,} = {ratio(row['agent_ir'], row['gzip_ir']):.2f}x"
                  if row.get("agent_ir") else row.get("ir_error", "not measured"))
            w(f"| {shape} | {g['agent']:.2f} s / {g['gzip']:.2f} s = **{g['ratio']:.2f}x** "
              f"({', '.join(f'{x:.2f}' for x in row['agent_cpu_s'])} / {', '.join(f'{x:.2f}' for x in row['gzip_cpu_s'])}) "
              f"| {b(row['bundle_bytes'])} / {b(row['gzip_bytes'])} = **{byt:.3f}** | {ir} "
              f"| {row['deflate_s']:.3f} s = {ratio(row['deflate_s'], g['gzip']):.2f}x gzip -6 "
              f"| {row['engine_s']:.3f} s = {ratio(row['engine_s'], g['gzip']):.2f}x gzip -6 "
              f"| {row['redact_s']:.3f} s = {ratio(row['redact_s'], g['gzip']):.2f}x gzip -6 "
              f"| CPU {verdict(g['ratio'] <= 0.45)}, bytes {verdict(byt <= 0.95)} |")
        w("")
    w("**Reading the parts.** Redaction measured apart is the goal's \"redaction\" itself; \"all but "
      "deflate and the engine\" is a difference of medians taken minutes apart on a shared machine, "
      "so it carries their noise, and it charges to \"the rest\" whatever deflate costs more inside "
      "the bundle than apart: apart, `redact-scan` seals chunks of a journal that sits in memory; "
      "inside, each chunk is sealed between pipe reads, redaction and the engine, which can evict the "
      "compressor's tables from the caches (not measured). The rest proper is "
      "the tar headers, the other members (each a command run or a file read, ~55 of them), the "
      "manifest and process start. A profile is the fairer split: see the notes at the end.")
    w("")


if __name__ == "__main__":
    results = json.load(open(sys.argv[1]))
    quick = len(sys.argv) > 2 and sys.argv[2] == "--quick"
    sys.stdout.write(markdown(results, quick, results.get("notes", [])))
