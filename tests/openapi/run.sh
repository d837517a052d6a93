#!/usr/bin/env bash
# A bounded Schemathesis run against the service's own OpenAPI document: starts the `capture`
# binary (CAPTURE_BIN, else target/debug/capture) on a fresh SQLite database with the api
# role, makes an account and a key, and lets Schemathesis generate requests for every
# documented operation. It fails when an answer is a 5xx, a status code the document does not
# list, or a body or content type that does not match it. ST_MAX_EXAMPLES bounds the examples
# per operation (default 15). Schemathesis lives in a virtualenv in the target dir, made from
# tests/openapi/requirements.txt (PyPI) when missing or stale. `POST /v1/profiles/login` is
# left out: it needs a browser, which this api-only node does not run (its documented answer
# here is 503; the Rust suite tests it on nodes with and without one).
set -euo pipefail
cd "$(dirname "$0")/../.."
target="${CARGO_TARGET_DIR:-$PWD/target}"
venv="$target/schemathesis-venv"
stamp="$venv/.requirements"
if [ ! -x "$venv/bin/st" ] || ! cmp -s tests/openapi/requirements.txt "$stamp"; then
    mkdir -p "$target"
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/openapi/requirements.txt >&2
    cp tests/openapi/requirements.txt "$stamp"
fi
bin="${CAPTURE_BIN:-$target/debug/capture}"
work="$(mktemp -d)"
server=""
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
export CAPTURE_LISTEN=127.0.0.1:0 CAPTURE_DATA_DIR="$work/data" CAPTURE_LOG=warn \
    CAPTURE_PLAN_LIMITS=free=1000000,starter=1000000,pro=1000000 CAPTURE_ROLES=api,scheduler
"$bin" admin user create --email openapi@example.com --plan pro >/dev/null
key="$("$bin" admin key create --email openapi@example.com --name schemathesis | tail -1)"
"$bin" serve --roles api,scheduler >"$work/out" 2>"$work/err" &
server=$!
for _ in $(seq 100); do grep -q "listening on" "$work/out" && break; sleep 0.2; done
base="$(sed -n 's/^listening on //p' "$work/out")"
[ -n "$base" ] || { cat "$work/err" >&2; echo "the service did not start" >&2; exit 1; }
"$venv/bin/st" run "$base/openapi.json" \
    -H "Authorization: Bearer $key" \
    --max-examples "${ST_MAX_EXAMPLES:-15}" \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
    --exclude-path /v1/profiles/login \
    --no-color "$@"
