#!/usr/bin/env bash
# Run the MCP end-to-end tests with the official Python SDK as the client.
# The virtualenv lives in the Cargo target directory (mcp-venv) and is rebuilt from
# tests/mcp/requirements.txt when missing or stale. The service binary is CAPTURE_BIN, or
# the debug `capture` binary, built (or found up to date) first.
set -euo pipefail
cd "$(dirname "$0")/../.."
target="${CARGO_TARGET_DIR:-$PWD/target}"
venv="$target/mcp-venv"
stamp="$venv/.requirements"
if [ ! -x "$venv/bin/pytest" ] || ! cmp -s tests/mcp/requirements.txt "$stamp"; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/mcp/requirements.txt
    cp tests/mcp/requirements.txt "$stamp"
fi
if [ -z "${CAPTURE_BIN:-}" ]; then
    cargo build --locked --quiet -p capture --bin capture
    CAPTURE_BIN="$target/debug/capture"
fi
export CAPTURE_BIN PYTHONDONTWRITEBYTECODE=1
exec "$venv/bin/pytest" -q -p no:cacheprovider tests/mcp "$@"
