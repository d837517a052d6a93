#!/usr/bin/env bash
# The test command: installs what is missing, then format check, lints and every test
# (unit, store tests on SQLite and PostgreSQL, the browser engine, the service end to end,
# S3 storage against a local moto server, mail against a local aiosmtpd server).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh --test
export PATH="$HOME/.cargo/bin:$PATH"

# CI keeps its build cache outside the clone so fresh clones reuse it.
if [ "${CI:-}" = "true" ] && [ -z "${CARGO_TARGET_DIR:-}" ]; then
  export CARGO_TARGET_DIR=/var/tmp/capture-ci-target
fi
# A fresh clone's workspace crates are rebuilt anyway: incremental state only costs disk there.
if [ "${CI:-}" = "true" ]; then export CARGO_INCREMENTAL=0; fi
export CAPTURE_TEST_PG_URL="${CAPTURE_TEST_PG_URL:-postgres://postgres:postgres@127.0.0.1:5432/postgres}"
export RUST_BACKTRACE=1
# moto's S3 server (PyPI, in a virtualenv in the target dir) for the S3 storage tests, which
# start and stop it themselves; under CI=true they fail rather than skip without it.
CAPTURE_TEST_MOTO="$(bash tests/s3/moto-venv.sh)"
export CAPTURE_TEST_MOTO
# Python's aiosmtpd (PyPI, in a virtualenv in the target dir): the real SMTP server the outbound
# mail tests start and stop themselves; under CI=true they fail rather than skip without it.
CAPTURE_TEST_AIOSMTPD="$(bash tests/smtp/aiosmtpd-venv.sh)"
export CAPTURE_TEST_AIOSMTPD

# axe-core is built into the binary (crates/capture-audit/vendor/axe-core): the audit and
# campaign tests run that copy, the one a default install runs, so nothing is installed for
# it and no CAPTURE_AXE_PATH is set (an operator's one would be unset here so the tests cannot
# pass on a copy users do not get); the override has its own test, with a file it writes.
unset CAPTURE_AXE_PATH

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== import circles (none allowed between a crate's files)"
python3 scripts/import-circles.py
echo "== cargo clippy"
cargo clippy --locked --workspace --all-targets -q -- -D warnings
# The engine's live-session relay tests drive real puppeteer-core and playwright-core
# (crates/capture-browser/tests/relay, from its lock file; never a browser download).
if ! command -v npm >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  $( [ "$(id -u)" = 0 ] || echo sudo ) apt-get update -qq
  $( [ "$(id -u)" = 0 ] || echo sudo ) apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
(
  cd crates/capture-browser/tests/relay
  PUPPETEER_SKIP_DOWNLOAD=1 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
)

echo "== cargo test"
cargo test --locked --workspace -- --test-threads="${CAPTURE_TEST_THREADS:-4}"

# The browser and MCP suites below run the `capture` binary `cargo test --workspace` just
# built (same feature set), so they never compile anything inside a test timeout.
CAPTURE_BIN="$(cd "${CARGO_TARGET_DIR:-target}" && pwd)/debug/capture"
[ -x "$CAPTURE_BIN" ] || { echo "missing $CAPTURE_BIN after cargo test" >&2; exit 1; }
export CAPTURE_BIN

# ---- website in a real browser (tests/e2e: node:test + playwright-core, Debian's Chromium) ----
# Installs its own Node dependencies from the committed lock file; never downloads a browser.
echo "== e2e (website in headless Chromium)"
if ! command -v npm >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  $( [ "$(id -u)" = 0 ] || echo sudo ) apt-get update -qq
  $( [ "$(id -u)" = 0 ] || echo sudo ) apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
(
  cd tests/e2e
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
  # support.mjs builds the `capture` binary with cargo (already built by `cargo test`).
  npm test
)

# ---- MCP server with a real client (tests/mcp: the official Python `mcp` SDK over OAuth) ----
echo "== mcp (Python SDK client, whole OAuth flow)"
bash tests/mcp/run.sh

# ---- the OpenAPI document against the running service (tests/openapi: Schemathesis) ----
# A bounded property run: every documented operation, ST_MAX_EXAMPLES examples each; fails on a
# 5xx or an answer the document does not describe.
echo "== openapi (Schemathesis against the service's own document)"
bash tests/openapi/run.sh

# ---- the SDKs (sdks/): generated from the document the binary serves, then used against it ----
# sdks/openapi.json must be `capture openapi`, and each SDK's generated types what its generator
# makes of it (a changed API fails here until both are regenerated); then each SDK's tests
# start the binary above and drive it as an application would.
echo "== sdks (drift check, Python capture-client and TypeScript @capture/client against the service)"
bash sdks/check-drift.sh
bash sdks/python/run-tests.sh
(
  cd sdks/typescript
  npm ci --no-audit --no-fund --loglevel=error
  npm test
)

# ---- the container image in podman (scripts/image-check.sh, docs/containers.md) ----
# Builds the Containerfile around the binary above (nothing is compiled again) on a Debian base
# made once with mmdebstrap and cached (no registry), runs one node: health, one capture of a
# local page, stop. Installs podman, runc, mmdebstrap and slirp4netns when missing; about 12 s
# once the base exists, 2-4 minutes the first time on a machine.
echo "== container image (podman: one node, one capture)"
$( [ "$(id -u)" = 0 ] || echo sudo ) env CAPTURE_BIN="$CAPTURE_BIN" bash scripts/image-check.sh
