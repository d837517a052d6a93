#!/bin/bash
# The server's RSS around a burst of captures: `bash tests/memory/rss.sh [BIN] [N]` starts a
# fixture page (site.py, port 18931), `capture serve` (4 workers, one browser) on a fresh data
# folder, submits N (default 500) captures 8 at a time, and prints the process's RSS idle, right
# after the last capture and 20 s later. Try MALLOC_ARENA_MAX=2 in the environment to compare.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$(realpath "${1:-${CARGO_TARGET_DIR:-$ROOT/target}/debug/capture}"); N=${2:-500}
cd "$(dirname "$0")"
WORK=$(mktemp -d); mkdir "$WORK/data"
python3 site.py & SITE=$!
trap 'kill $SITE 2>/dev/null; rm -rf "$WORK"' EXIT
sleep 1
cd "$WORK"
export CAPTURE_LISTEN=127.0.0.1:0 CAPTURE_DATA_DIR=$WORK/data CAPTURE_EGRESS_ALLOW=127.0.0.1:18931 CAPTURE_WORKER_CONCURRENCY=4 CAPTURE_BROWSERS=1 CAPTURE_LOG=warn CAPTURE_PLAN_LIMITS=free=100000,starter=100000,pro=100000
$BIN admin user create --email m@example.com --plan pro >/dev/null 2>&1
KEY=$($BIN admin key create --email m@example.com --name m 2>/dev/null | tail -1)
$BIN serve > out.txt 2>err.txt &
PID=$!
for i in $(seq 50); do grep -q listening out.txt && break; sleep 0.5; done
BASE=$(sed -n 's/listening on //p' out.txt)
sleep 3
echo "idle_rss_kb $(grep VmRSS /proc/$PID/status | awk '{print $2}')"
start=$(date +%s)
for i in $(seq $N); do
  curl -s -o /dev/null -X POST "$BASE/v1/screenshot" -H "authorization: Bearer $KEY" -H 'content-type: application/json' -d '{"url":"http://127.0.0.1:18931/","waitUntil":"load"}' &
  pids+=($!)
  if (( i % 8 == 0 )); then wait "${pids[@]}"; pids=(); fi
done
[ ${#pids[@]} -gt 0 ] && wait "${pids[@]}"
# wait for all done
while true; do
  pending=$(curl -s "$BASE/metrics" | grep '^capture_jobs{status="pending"}\|^capture_jobs{status="processing"}' | awk '{s+=$2} END {print s+0}')
  [ "$pending" = "0" ] && break; sleep 1
done
end=$(date +%s)
done_n=$(curl -s "$BASE/metrics" | grep '^capture_jobs{status="done"}' | awk '{print $2}')
echo "done $done_n in $((end-start)) s"
echo "after_rss_kb $(grep VmRSS /proc/$PID/status | awk '{print $2}')"
sleep 20
echo "after_idle_rss_kb $(grep VmRSS /proc/$PID/status | awk '{print $2}')"
kill $PID; wait $PID 2>/dev/null
