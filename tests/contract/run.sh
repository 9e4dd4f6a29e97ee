#!/usr/bin/env bash
# Contract tests: the official assisted-service-client against the mock, and
# a real agent run's requests validated against the API definition.
# Creates its own virtualenv (tests/contract/.venv) from requirements.txt;
# expects the binaries built (cargo build --workspace --bins).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
venv=${CONTRACT_VENV:-$here/.venv}
if [[ ! -x $venv/bin/python ]] || ! cmp -s "$here/requirements.txt" "$venv/requirements.txt"; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
    cp "$here/requirements.txt" "$venv/requirements.txt"
fi
cd "$here"
exec "$venv/bin/python" -m pytest -p no:cacheprovider -q "$@"
