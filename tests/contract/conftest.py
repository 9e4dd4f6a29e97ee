"""Fixtures for the contract tests: the real mock service binary on an
ephemeral 127.0.0.1 port, the official `assisted-service-client` configured
with its own auth settings, and a real agent run whose requests the mock
journals. Every wait is bounded."""

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

import assisted_service_client as asc

REPO = Path(__file__).resolve().parents[2]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
if not TARGET.is_absolute():
    TARGET = REPO / TARGET
MOCK_BIN = TARGET / "debug" / "mock-assisted-service"
AGENT_BIN = TARGET / "debug" / "assisted-boot-reporter"
SEED = REPO / "tests" / "fixtures" / "ui-seed.json"
SWAGGER = Path(
    os.environ.get("ASSISTED_SWAGGER", REPO / "tests" / "fixtures" / "assisted-service-swagger.yaml")
)


class Mock:
    """A running `mock-assisted-service`."""

    def __init__(self, tmp: Path, upstream_compat: bool = False):
        for b in (MOCK_BIN, AGENT_BIN):
            if not b.exists():
                raise RuntimeError(f"{b} is missing: run cargo build --workspace --bins first")
        self.seed = json.loads(SEED.read_text())
        self.tmp = tmp
        self.stdout = open(tmp / "mock.out", "w+")
        self.stderr = open(tmp / "mock.log", "w+")
        args = [str(MOCK_BIN), "--listen", "127.0.0.1:0", "--seed", str(SEED), "--data-dir", str(tmp / "data")]
        if upstream_compat:
            args.append("--upstream-compat")
        self.proc = subprocess.Popen(args, stdout=self.stdout, stderr=self.stderr)
        deadline = time.monotonic() + 30
        self.base = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mock exited {self.proc.returncode}: {(tmp / 'mock.log').read_text()}")
            for line in (tmp / "mock.out").read_text().splitlines():
                if line.startswith("listening on http://"):
                    self.base = line.removeprefix("listening on ")
            if self.base:
                break
            time.sleep(0.05)
        if not self.base:
            self.stop()
            raise RuntimeError("mock did not print its listening line within 30 s")

    @property
    def cluster_id(self) -> str:
        return self.seed["clusters"][0]["id"]

    @property
    def infra_env_id(self) -> str:
        return self.seed["infra_envs"][0]["id"]

    def host_id(self, hostname_prefix: str) -> str:
        return next(h["id"] for h in self.seed["hosts"] if h["requested_hostname"].startswith(hostname_prefix))

    def admin(self, path: str, body=None, method=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            f"{self.base}{path}",
            data=data,
            method=method or ("POST" if data is not None else "GET"),
            headers={"Content-Type": "application/json"} if data is not None else {},
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def reseed(self):
        self.admin("/admin/seed", self.seed)
        self.admin("/admin/requests", method="DELETE")

    def client(self, agent_key=None, user_token=None, url_key=None) -> asc.InstallerApi:
        """The official client, authenticated only through its own settings:
        `api_key['X-Secret-Key']` (agentAuth), `api_key['Authorization']`
        with a `Bearer` prefix (userAuth), `api_key['api_key']` (urlAuth)."""
        cfg = asc.Configuration()
        cfg.host = f"{self.base}/api/assisted-install"
        cfg.temp_folder_path = str(self.tmp)
        cfg.api_key = {}
        cfg.api_key_prefix = {}
        if agent_key is not None:
            cfg.api_key["X-Secret-Key"] = agent_key
        if user_token is not None:
            cfg.api_key["Authorization"] = user_token
            cfg.api_key_prefix["Authorization"] = "Bearer"
        if url_key is not None:
            cfg.api_key["api_key"] = url_key
        return asc.InstallerApi(asc.ApiClient(cfg))

    def agent_client(self):
        return self.client(agent_key=self.seed["agent_token"])

    def user_client(self):
        return self.client(user_token=self.seed["user_token"])

    def run_agent(self, host_prefix="master-0", timeout="6s") -> subprocess.CompletedProcess:
        """One first boot from disk of the host, on a copy of the fixture
        root with the fake host commands, as scripts/demo.sh runs it."""
        host = next(h for h in self.seed["hosts"] if h["requested_hostname"].startswith(host_prefix))
        d = Path(tempfile.mkdtemp(dir=self.tmp, prefix="host-"))
        root = d / "root"
        shutil.copytree(REPO / "tests" / "fixtures" / "root", root)
        (root / "proc/sys/kernel/random/boot_id").write_text(f"{uuid.uuid4()}\n")
        config = d / "config"
        for sub in (config, d / "state", d / "home"):
            sub.mkdir(parents=True)
        (config / "service-url").write_text(f"{self.base}\n")
        (config / "infra-env-id").write_text(f"{host['infra_env_id']}\n")
        (config / "host-id").write_text(f"{host['id']}\n")
        (config / "cluster-id").write_text(f"{host['cluster_id']}\n")
        secret = {"auths": {"cloud.openshift.com": {"auth": self.seed["agent_token"], "email": "c@example.com"}}}
        (config / "pull-secret").write_text(json.dumps(secret) + "\n")
        os.chmod(config / "pull-secret", 0o600)
        return subprocess.run(
            [
                str(AGENT_BIN), "run",
                "--config-dir", str(config), "--state-dir", str(d / "state"), "--root", str(root),
                "--upload-interval", "2s", "--timeout", timeout,
                "--retry-initial-delay", "200ms", "--retry-max-delay", "1s", "--retry-attempts", "3",
                "--command-timeout", "10s", "--kubelet-healthz-url", "http://127.0.0.1:9/healthz",
            ],
            env={
                "PATH": f"{REPO / 'tests' / 'fixtures' / 'bin'}:/usr/local/bin:/usr/bin:/bin",
                "HOME": str(d / "home"),
                "FAKE_SYSTEMCTL_LOG": str(d / "systemctl.log"),
            },
            capture_output=True,
            text=True,
            timeout=120,
        )

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.stdout.close()
        self.stderr.close()


@pytest.fixture(scope="session")
def mock(tmp_path_factory):
    m = Mock(tmp_path_factory.mktemp("mock"))
    yield m
    m.stop()


@pytest.fixture(scope="session")
def upstream_mock(tmp_path_factory):
    m = Mock(tmp_path_factory.mktemp("upstream"), upstream_compat=True)
    yield m
    m.stop()


@pytest.fixture
def fresh(mock):
    """The enhanced mock, reseeded and with an empty journal."""
    mock.reseed()
    return mock
