#!/usr/bin/env bash
# Demo: two installing hosts reported by assisted-boot-reporter to the mock
# assisted-service: master-0 in the classic flow (pointer-ignition boot,
# reboot, control-plane boot) and master-1 in today's single-boot flow
# (machine-config-daemon-firstboot applies the config in place, no reboot).
#
#   scripts/demo.sh                        # run and tear down
#   DEMO_HOLD_SECONDS=600 scripts/demo.sh  # keep the mock (and its page) up afterwards
#
# Needs cargo and python3 (README.md); the first build takes about 10
# minutes on 2 cores.
# Everything runs on 127.0.0.1 in a temp directory; the host is the fixture
# root under tests/fixtures/root and the host commands (journalctl, ip,
# crictl, systemctl) are the fakes under tests/fixtures/bin, so nothing on
# this machine is read or changed.
# Exits non-zero unless both hosts end at "Booted with control plane
# ignition" with a host_boot bundle stored, and master-1's reporter left
# during its one boot.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
hold=${DEMO_HOLD_SECONDS:-0}
seed="$repo/tests/fixtures/demo-seed.json"
fake_bin="$repo/tests/fixtures/bin"

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

for tool in cargo python3; do
    command -v "$tool" >/dev/null || {
        echo "demo: $tool not found; install it first (python3: apt-get install python3; cargo: README.md)" >&2
        exit 1
    }
done

# http METHOD URL [JSON]: the mock's admin API, printed to stdout (Python's
# urllib, never through a proxy of the environment: the mock is on loopback).
http() {
    python3 - "$@" <<'EOF'
import sys, urllib.request
method, url = sys.argv[1], sys.argv[2]
data = sys.argv[3].encode() if len(sys.argv) > 3 else None
headers = {"Content-Type": "application/json"} if data else {}
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
with opener.open(urllib.request.Request(url, data=data, method=method, headers=headers), timeout=10) as r:
    sys.stdout.buffer.write(r.read())
EOF
}

say "building (cargo build --workspace --bins)"
cargo build --workspace --bins
target_dir=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
agent="$target_dir/debug/assisted-boot-reporter"
mock="$target_dir/debug/mock-assisted-service"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/abr-demo.XXXXXX")
pids=()
cleanup() {
    local pid
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Waits up to $2 seconds for file $1 to have a line matching $3; prints it.
wait_line() {
    local file=$1 secs=$2 pattern=$3 i line
    for ((i = 0; i < secs * 10; i++)); do
        line=$(grep -m1 -E "$pattern" "$file" 2>/dev/null || true)
        if [[ -n $line ]]; then
            printf '%s\n' "$line"
            return 0
        fi
        sleep 0.1
    done
    return 1
}

seed_field() {
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$seed" "$1"
}
token=$(seed_field 'd["agent_token"]')
cluster_id=$(seed_field 'd["clusters"][0]["id"]')
infra_env_id=$(seed_field 'd["infra_envs"][0]["id"]')
host_id=$(seed_field 'd["hosts"][0]["id"]')
single_host_id=$(seed_field 'd["hosts"][1]["id"]')

say "starting the mock assisted-service (seed $seed)"
"$mock" --listen 127.0.0.1:0 --seed "$seed" --data-dir "$tmp/data" >"$tmp/mock.out" 2>"$tmp/mock.log" &
pids+=($!)
if ! line=$(wait_line "$tmp/mock.out" 30 '^listening on http://'); then
    echo "mock did not start:" >&2
    cat "$tmp/mock.log" >&2
    exit 1
fi
base=${line#listening on }
echo "mock listening at $base"
echo "status page: $base/ (up while the demo runs; DEMO_HOLD_SECONDS=600 keeps it 10 minutes more)"

# The host: a copy of the fixture root, the discovery contract the discovery
# agent would have left, and the agent's state dir.
# make_host DIR HOST_ID: the host's root, contract and state under DIR.
make_host() {
    local dir=$1 id=$2
    mkdir -p "$dir"
    cp -R "$repo/tests/fixtures/root" "$dir/root"
    mkdir -p "$dir/config" "$dir/state"
    printf '%s\n' "$base" >"$dir/config/service-url"
    printf '%s\n' "$infra_env_id" >"$dir/config/infra-env-id"
    printf '%s\n' "$id" >"$dir/config/host-id"
    printf '%s\n' "$cluster_id" >"$dir/config/cluster-id"
    (umask 077 && printf '{"auths":{"cloud.openshift.com":{"auth":"%s","email":"demo@example.com"}}}\n' "$token" \
        >"$dir/config/pull-secret")
}
mkdir -p "$tmp/home"
make_host "$tmp" "$host_id"
host_dir=$tmp

kubelet_url="http://127.0.0.1:9/healthz" # nothing listens there until the second boot

# run_agent LABEL TIMEOUT [REBOOT_AFTER]: with REBOOT_AFTER (seconds) the run
# is stopped with SIGTERM then, as systemd does when the host reboots; the
# --timeout budget counts from the first start and spans both boots.
run_agent() {
    local label=$1 timeout=$2 reboot_after=${3:-} rc=0 pid
    say "$label (agent run, --timeout $timeout${reboot_after:+, reboot after ${reboot_after}s})"
    env -i PATH="$fake_bin:/usr/local/bin:/usr/bin:/bin" HOME="$tmp/home" \
        FAKE_SYSTEMCTL_LOG="$tmp/systemctl.log" \
        "$agent" run \
        --config-dir "$host_dir/config" --state-dir "$host_dir/state" --root "$host_dir/root" \
        --upload-interval 2s --timeout "$timeout" \
        --retry-initial-delay 200ms --retry-max-delay 1s --retry-attempts 3 \
        --command-timeout 10s --kubelet-healthz-url "$kubelet_url" &
    pid=$!
    if [[ -n $reboot_after ]]; then
        sleep "$reboot_after"
        kill -TERM "$pid" 2>/dev/null || true
    fi
    wait "$pid" || rc=$?
    echo "agent exited $rc"
}

show_host() {
    local id=${1:-$host_id}
    http GET "$base/admin/state" | python3 -c '
import json, sys
state = json.load(sys.stdin)
host = next(h for h in state["hosts"] if h["id"] == sys.argv[1])
print("host %s: status %s, stage %r, progress_info %r" % (host["id"], host["status"], host["current_stage"], host["progress_info"]))
' "$id"
}

show_host
run_agent "first boot from disk" 120s 7
show_host

say "reboot: new boot ID; the controller moves the host to Configuring"
python3 -c 'import uuid; print(uuid.uuid4())' >"$tmp/root/proc/sys/kernel/random/boot_id"
http POST "$base/admin/hosts/$host_id/stage" '{"current_stage":"Configuring"}'
show_host

say "kubelet comes up healthy (stand-in answering ok at /healthz)"
python3 -u -c '
import http.server
class Healthz(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"ok" if self.path == "/healthz" else b"404 page not found"
        self.send_response(200 if self.path == "/healthz" else 404)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), Healthz)
print("port", server.server_address[1])
server.serve_forever()
' >"$tmp/kubelet.out" 2>&1 &
pids+=($!)
line=$(wait_line "$tmp/kubelet.out" 10 '^port [0-9]+') || { echo "kubelet stand-in did not start" >&2; exit 1; }
kubelet_url="http://127.0.0.1:${line#port }/healthz"
echo "kubelet healthz at $kubelet_url"

run_agent "second boot from disk" 120s

say "master-1: single-boot install (MCO reboot skipped), its one boot from disk"
make_host "$tmp/master-1" "$single_host_id"
host_dir=$tmp/master-1
# Ignition left the machine config for machine-config-daemon-firstboot.
mkdir -p "$host_dir/root/etc/machine-config-daemon"
echo '{}' >"$host_dir/root/etc/machine-config-daemon/node-annotations.json"
echo '{}' >"$host_dir/root/etc/ignition-machine-config-encapsulated.json"
show_host "$single_host_id"
(
    sleep 5
    echo "firstboot: the config matches the booted OS; applied in place, reboot skipped"
    rm -f "$host_dir/root/etc/ignition-machine-config-encapsulated.json"
) &
pids+=($!)
run_agent "master-1, the only boot from disk (kubelet healthy once the config is applied)" 120s
show_host "$single_host_id"

say "stage history and bundles"
http GET "$base/admin/state" >"$tmp/state.json"
verdict=0
python3 - "$tmp/state.json" "$host_id" "$single_host_id" <<'EOF' || verdict=$?
import json, sys
state = json.load(open(sys.argv[1]))


def show(host):
    print(f"host {host['requested_hostname']} ({host['id']}):")
    print("  stage history:")
    for e in host.get("stage_history", []):
        info = f"  ({e['progress_info']})" if e.get("progress_info") else ""
        print(f"    {e.get('at', '')}  {e['stage']}{info}")
    print("  bundles:")
    for b in host.get("bundles", []):
        print(f"    {b['logs_type']}: {b['size']} bytes, {b['uploads']} upload(s), last {b['uploaded_at']}, "
              f"valid={b['valid']}, {len(b.get('members', []))} members")
        for m in b.get("members", [])[:80]:
            print(f"        {m}")
    ok = True
    if host["current_stage"] != "Booted with control plane ignition":
        print(f"FAIL: final stage is {host['current_stage']!r}, expected 'Booted with control plane ignition'")
        ok = False
    boot = [b for b in host.get("bundles", []) if b["logs_type"] == "host_boot"]
    if not boot or boot[0]["uploads"] < 1:
        print("FAIL: no host_boot bundle arrived")
        ok = False
    return ok


ok = True
for host_id in sys.argv[2:]:
    ok = show(next(h for h in state["hosts"] if h["id"] == host_id)) and ok
sys.exit(0 if ok else 1)
EOF

say "cleanup on the host"
# The collectors' read-only `systemctl list-units` / `status` calls are left out.
echo "systemctl calls that change something: $(grep -Ev '^(list-units|status) ' "$tmp/systemctl.log" 2>/dev/null | paste -sd ';' - || true)"
for h in "master-0:$tmp" "master-1:$tmp/master-1"; do
    for d in config state; do
        if [[ -e ${h#*:}/$d ]]; then echo "${h%%:*} $d dir: still there"; else echo "${h%%:*} $d dir: removed"; fi
    done
done

if ((hold > 0)); then
    say "holding the mock for ${hold}s: open $base/"
    sleep "$hold"
fi

if ((verdict == 0)); then
    say "demo OK"
else
    say "demo FAILED"
fi
exit "$verdict"
