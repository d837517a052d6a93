#!/usr/bin/env bash
# Run the service with the embedded default: SQLite and files under ./data, the system's
# Chromium. Installs what is missing, builds the release binary, then serves.
# Extra arguments go to `capture serve` (e.g. --roles api,worker).
#
# The runtime packages (Chromium, fonts, ffmpeg: about two minutes of downloads on a fresh
# machine) install in the background while the build, which needs only the toolchain, runs:
# apt waits on the network and the disk, the build on the CPU (docs/building.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --toolchain
export PATH="$HOME/.cargo/bin:$PATH"

log="$(mktemp)"
bash scripts/setup.sh --packages >"$log" 2>&1 &
packages=$!
if ! cargo build --release --locked -p capture; then
  wait "$packages" || true  # never leave apt half done
  exit 1
fi
if ! wait "$packages"; then
  cat "$log" >&2
  echo "run: installing the runtime packages failed (above)" >&2
  exit 1
fi
cat "$log"
rm -f "$log"
bin="${CARGO_TARGET_DIR:-target}/release/capture"
exec "$bin" serve "$@"
