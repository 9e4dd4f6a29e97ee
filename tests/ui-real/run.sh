#!/usr/bin/env bash
# The real assisted UI (@openshift-assisted/ui-lib) against the mock service,
# in headless Debian Chromium: one command from a fresh checkout.
#   tests/ui-real/run.sh
# Phases: check tools, build the mock (cargo), npm ci, vite build, tests.
# Fails (never skips) when a tool is missing. Honours CARGO_TARGET_DIR and
# CHROMIUM (default /usr/bin/chromium). Network: crates (if not cached) and
# the npm registry during npm ci; the tests themselves use loopback only.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
chromium="${CHROMIUM:-/usr/bin/chromium}"
apt_line="sudo apt-get install -y nodejs npm chromium"

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
secs() { local ms=$(( $(now_ms) - $1 )); printf '%d.%d' $((ms / 1000)) $(((ms % 1000) / 100)); }
t_start="$(now_ms)"
phase_start=""
phase() {
  phase_start="$(now_ms)"
  printf '\n== %s\n' "$1"
}
phase_done() {
  local took
  took="$(secs "$phase_start")"
  printf '== %s: %s s\n' "$1" "$took"
  summary+=("$(printf '%-14s %7s s' "$1" "$took")")
}
summary=()
fail() {
  printf 'ui-real: FAILED: %s\n' "$*" >&2
  exit 1
}

phase "check tools"
missing=()
command -v node >/dev/null 2>&1 || missing+=(node)
command -v npm >/dev/null 2>&1 || missing+=(npm)
[ -x "$chromium" ] || missing+=("chromium ($chromium)")
if [ "${#missing[@]}" -gt 0 ]; then
  fail "missing: ${missing[*]}. Install them with:
  $apt_line"
fi
command -v cargo >/dev/null 2>&1 || fail "cargo is missing: install a Rust toolchain (https://rustup.rs) to build the mock"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" -ge 18 ] || fail "node $(node --version) is too old (Vite 5 and node --test need 18 or newer): $apt_line"
"$chromium" --version >/dev/null 2>&1 || fail "$chromium does not run: $apt_line"
echo "node $(node --version), npm $(npm --version 2>/dev/null), $("$chromium" --version)"
phase_done "check tools"

phase "cargo build"
(cd "$repo" && cargo build --workspace --bins --locked)
phase_done "cargo build"

phase "npm ci"
(cd "$here" && npm ci --no-audit --no-fund)
phase_done "npm ci"

phase "vite build"
(cd "$here" && npm run --silent build)
phase_done "vite build"

phase "tests"
set +e
(cd "$here" && CHROMIUM="$chromium" npm test --silent)
rc=$?
set -e
phase_done "tests"

printf '\nui-real wall times:\n'
printf '  %s\n' "${summary[@]}"
printf '  %-14s %7s s\n' "total" "$(secs "$t_start")"
[ "$rc" -eq 0 ] || fail "tests failed (exit $rc)"
echo "ui-real: all tests passed; screenshots in docs/ui-real/"
