#!/usr/bin/env bash
# Measure a fresh machine's first run of scripts/run.sh (docs/building.md, "A fresh machine"):
# the runtime packages purged, apt's cache and lists emptied, cargo's registry moved aside,
# a fresh clone of this checkout's HEAD and an empty target dir; then the seconds until the
# first 200 of /healthz. It changes the machine (apt, ~/.cargo), so it asks for --purge.
# The registry is put back afterwards; the packages are installed again by run.sh itself.
set -u
if [ "${1:-}" != "--purge" ]; then
  echo "usage: $0 --purge   (purges Chromium, fonts, ffmpeg… and apt's lists; needs root)" >&2
  exit 2
fi
repo="$(cd "$(dirname "$0")/.." && pwd)"
out=/tmp/first-run
rm -rf "$out" && mkdir -p "$out"
PKGS="chromium chromium-headless-shell fonts-noto-core fonts-noto-color-emoji fonts-noto-cjk fonts-liberation poppler-utils ffmpeg espeak-ng webext-ublock-origin-chromium"
apt-get purge -y -qq $PKGS >/dev/null 2>&1
apt-get autoremove -y -qq >/dev/null 2>&1
apt-get clean
rm -rf /var/lib/apt/lists/*
aside=0
if [ -d ~/.cargo/registry ]; then mv ~/.cargo/registry ~/.cargo/registry.aside; aside=1; fi
git clone -q "$repo" "$out/clone"
cd "$out/clone"
start=$(date +%s)
CARGO_TARGET_DIR="$out/target" CAPTURE_LISTEN=127.0.0.1:18080 setsid bash scripts/run.sh >"$out/run.log" 2>&1 &
pid=$!
while ! curl -sf -o /dev/null http://127.0.0.1:18080/healthz; do
  sleep 1
  kill -0 "$pid" 2>/dev/null || { echo "run.sh exited (see $out/run.log)"; break; }
done
echo "healthz after $(( $(date +%s) - start )) s"
grep "Finished" "$out/run.log"
curl -s http://127.0.0.1:18080/readyz; echo
kill -- -"$pid" 2>/dev/null
sleep 2
if [ "$aside" = 1 ]; then
  rm -rf ~/.cargo/registry
  mv ~/.cargo/registry.aside ~/.cargo/registry
fi
