#!/usr/bin/env bash
# Make (or reuse) the virtualenv holding moto's S3 server for the S3 blob store tests and
# print the path of its `moto_server` program. The virtualenv lives in the Cargo target
# directory (moto-venv), next to the MCP tests' one, and is rebuilt from
# tests/s3/requirements.txt when missing or stale. The tests start and stop the server.
set -euo pipefail
cd "$(dirname "$0")/../.."
target="${CARGO_TARGET_DIR:-$PWD/target}"
venv="$target/moto-venv"
stamp="$venv/.requirements"
if [ ! -x "$venv/bin/moto_server" ] || ! cmp -s tests/s3/requirements.txt "$stamp"; then
    mkdir -p "$target"
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/s3/requirements.txt >&2
    cp tests/s3/requirements.txt "$stamp"
fi
echo "$venv/bin/moto_server"
