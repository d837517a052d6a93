#!/bin/bash
# The server's RSS while a live run's client floods itself and stops reading (issue 25):
# `bash tests/memory/slow-reader.sh [BIN] [SECONDS]` starts `capture serve` (one browser) on a
# fresh data folder and a fixture page (site.py, port 18931), starts a live run, runs the relay
# clients' slow-reader.mjs against it (Runtime events on, ~5 MB/s of console output, socket not read
# for SECONDS, default 15), samples the process's RSS every 250 ms, and prints the RSS idle,
# the peak during the attack, and 5 s after the client left, with how the client was closed.
# Loopback only; stops by itself.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$(realpath "${1:-${CARGO_TARGET_DIR:-$ROOT/target}/debug/capture}"); SECS=${2:-15}
HERE=$(cd "$(dirname "$0")" && pwd)
CLIENTS="$ROOT/crates/capture-browser/tests/relay"
[ -d "$CLIENTS/node_modules/ws" ] || (cd "$CLIENTS" && PUPPETEER_SKIP_DOWNLOAD=1 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
WORK=$(mktemp -d); mkdir "$WORK/data"
(cd "$HERE" && exec python3 site.py) & SITE=$!
trap 'kill $SITE $PID 2>/dev/null; rm -rf "$WORK"' EXIT
cd "$WORK"
export CAPTURE_LISTEN=127.0.0.1:0 CAPTURE_DATA_DIR=$WORK/data CAPTURE_EGRESS_ALLOW=127.0.0.1:18931 CAPTURE_BROWSERS=1 CAPTURE_LOG=warn
$BIN admin user create --email m@example.com --plan pro >/dev/null 2>&1
KEY=$($BIN admin key create --email m@example.com --name m 2>/dev/null | tail -1)
$BIN serve > out.txt 2>err.txt &
PID=$!
for i in $(seq 60); do grep -q listening out.txt && break; sleep 0.5; done
BASE=$(sed -n 's/listening on //p' out.txt)
rss() { grep VmRSS /proc/$PID/status | awk '{print $2}'; }
sleep 3
echo "idle_rss_kb $(rss)"
RUN=$(curl -s -X POST "$BASE/v1/runs" -H "authorization: Bearer $KEY" -H 'content-type: application/json' \
  -d '{"startUrl":"http://127.0.0.1:18931/","live":true,"recordVideo":false,"timeoutMs":120000}')
URL=$(printf '%s' "$RUN" | python3 -c 'import json,sys; print(json.load(sys.stdin)["connectUrl"])')
(cd "$CLIENTS" && exec node slow-reader.mjs "$URL" "$SECS") > client.json &
CLIENT=$!
peak=0
while kill -0 $CLIENT 2>/dev/null; do
  r=$(rss); [ "$r" -gt "$peak" ] && peak=$r
  sleep 0.25
done
echo "peak_rss_kb $peak"
sleep 5
echo "after_rss_kb $(rss)"
echo "client $(cat client.json)"
ID=$(printf '%s' "$RUN" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
echo "run $(curl -s "$BASE/v1/runs/$ID" -H "authorization: Bearer $KEY" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["status"], r.get("endReason"), r.get("finalizationError"))')"
kill $PID; wait $PID 2>/dev/null
