#!/usr/bin/env bash
# The test command: installs what is missing, then format check, lints and every test
# (unit, store tests on SQLite and PostgreSQL, the browser engine, the service end to end).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh --test
export PATH="$HOME/.cargo/bin:$PATH"

# CI keeps its build cache outside the clone so fresh clones reuse it.
if [ "${CI:-}" = "true" ] && [ -z "${CARGO_TARGET_DIR:-}" ]; then
  export CARGO_TARGET_DIR=/var/tmp/capture-ci-target
fi
export CAPTURE_TEST_PG_URL="${CAPTURE_TEST_PG_URL:-postgres://postgres:postgres@127.0.0.1:5432/postgres}"
export RUST_BACKTRACE=1

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --locked --workspace --all-targets -q -- -D warnings
echo "== cargo test"
cargo test --locked --workspace -- --test-threads="${CAPTURE_TEST_THREADS:-4}"
