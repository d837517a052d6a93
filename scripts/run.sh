#!/usr/bin/env bash
# Run the service with the embedded default: SQLite and files under ./data, the system's
# Chromium. Installs what is missing, builds the release binary, then serves.
# Extra arguments go to `capture serve` (e.g. --roles api,worker).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --locked -p capture
bin="${CARGO_TARGET_DIR:-target}/release/capture"
exec "$bin" serve "$@"
