#!/usr/bin/env bash
# The container check: builds the image from the Containerfile around a binary that is already
# built (CAPTURE_BIN, default ${CARGO_TARGET_DIR:-target}/debug/capture; nothing is compiled),
# runs the single-node service in it with podman, and checks it end to end:
#   start → /healthz and /readyz (browsers up; the image's tools and lists reported ok) →
#   an account and a key made by `capture admin` in the container (same data volume) →
#   one capture of a page served on this machine → the PNG decoded at the asked size, the
#   page's colour in it → stop (SIGTERM drain) → clean up.
#
# No registry is needed: the base is a Debian root made with mmdebstrap from Debian's mirror
# (the host's release, so the binary's glibc matches) holding the Containerfile's
# RUNTIME_PACKAGES, `podman import`ed and kept as localhost/capture-base:<suite>-<hash of
# the package list>, so later runs skip it (IMAGE_CHECK_REFRESH=1 makes it again).
# Installs podman, runc, mmdebstrap and slirp4netns with apt-get when missing (needs root).
# podman runs with runc and `default_ulimits = []` from a containers.conf of its own
# (CONTAINERS_CONF; the machine's configuration is not changed).
#
# IMAGE_CHECK_OUT=DIR keeps the screenshot and the /readyz answer there.
# Bounded: IMAGE_CHECK_TIMEOUT (default 1200 s) for the whole run, each step less. Whatever
# happens, the container, the volume, the check's image, the page server and temporary files
# are removed; the base image and the runtime layer stay as the cache.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

if [ -z "${IMAGE_CHECK_INNER:-}" ]; then
  # The whole run under one time limit; TERM reaches every process of the run, whose exit
  # trap then cleans up (KILL 60 s later if that hangs).
  export IMAGE_CHECK_INNER=1
  exec timeout --kill-after=60 "${IMAGE_CHECK_TIMEOUT:-1200}" bash "$0" "$@"
fi

say() { printf 'image-check: %s\n' "$*" >&2; }
die() { say "FAIL: $*"; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

[ "$(id -u)" = 0 ] || die "needs root (mmdebstrap and rootful podman); run it with sudo"

t_start=$(now)
bin="${CAPTURE_BIN:-${CARGO_TARGET_DIR:-target}/debug/capture}"
[ -x "$bin" ] || die "no binary at $bin (build it first: cargo build -p capture, or set CAPTURE_BIN)"
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"

# ---- tools ----
missing=()
for p in podman runc mmdebstrap slirp4netns; do
  command -v "$p" >/dev/null || missing+=("$p")
done
command -v python3 >/dev/null || missing+=(python3)
command -v curl >/dev/null || missing+=(curl)
if [ "${#missing[@]}" -gt 0 ]; then
  say "installing ${missing[*]}"
  t=$(now)
  export DEBIAN_FRONTEND=noninteractive
  timeout 300 apt-get update -qq
  timeout 600 apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  say "installed in $(since "$t") s"
fi

# ---- where things go ----
work="$(mktemp -d /var/tmp/capture-image-check.XXXXXX)"
name="capture-image-check-$$"
volume="$name-data"
image="localhost/capture:image-check-$$"
page_pid=""
ok=0
cleanup() {
  rc=$?
  trap - EXIT INT TERM
  if [ "$ok" != 1 ] && podman container exists "$name" 2>/dev/null; then
    say "service log (last 40 lines):"
    podman logs --tail 40 "$name" 2>&1 | sed 's/^/    /' >&2 || true
  fi
  timeout 60 podman rm -f -v -t 5 "$name" >/dev/null 2>&1 || true
  timeout 30 podman volume rm -f "$volume" >/dev/null 2>&1 || true
  timeout 60 podman rmi -f "$image" >/dev/null 2>&1 || true
  if [ -n "$page_pid" ]; then kill "$page_pid" 2>/dev/null || true; wait "$page_pid" 2>/dev/null || true; fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'say "stopped (time limit or interrupt): cleaning up"; exit 124' INT TERM

# podman on these machines: runc (crun fails on this kernel's cgroups) and no default ulimits.
cat >"$work/containers.conf" <<'EOF'
[containers]
default_ulimits = []

[engine]
runtime = "runc"
EOF
export CONTAINERS_CONF="$work/containers.conf"

# ---- the base: Debian of the host's release, with the Containerfile's packages ----
# shellcheck disable=SC1091
. /etc/os-release
suite="${IMAGE_CHECK_SUITE:-}"
if [ -z "$suite" ]; then
  if [ "${ID:-}" != debian ] || [ -z "${VERSION_CODENAME:-}" ]; then
    die "not a Debian release here (${PRETTY_NAME:-?}): set IMAGE_CHECK_SUITE to the Debian suite whose glibc the binary needs"
  fi
  suite="$VERSION_CODENAME"
fi
mirror="${IMAGE_CHECK_MIRROR:-http://deb.debian.org/debian}"
security="${IMAGE_CHECK_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
sources=("deb $mirror $suite main")
case "$suite" in
  sid|unstable|experimental) ;;
  *) sources+=("deb $mirror $suite-updates main" "deb $security $suite-security main") ;;
esac
packages="$(sed -n 's/^ARG RUNTIME_PACKAGES="\(.*\)"$/\1/p' Containerfile)"
[ -n "$packages" ] || die "no ARG RUNTIME_PACKAGES=\"…\" line in Containerfile"
mm_opts=(--variant=minbase --mode=root --format=tar
  --aptopt='Apt::Install-Recommends "false"'
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright')
key="$( { printf '%s\n' "$suite" "${sources[@]}" "${mm_opts[@]}"; tr ' ' '\n' <<<"$packages" | sort -u; } \
  | sha256sum | cut -c1-12)"
base="localhost/capture-base:$suite-$key"
mkdir -p /var/tmp/capture-image-check-lock
exec 9>/var/tmp/capture-image-check-lock/base.lock
flock -w 900 9 || die "another run holds the base image lock for 15 minutes"
t=$(now)
if [ "${IMAGE_CHECK_REFRESH:-}" = 1 ] || ! podman image exists "$base"; then
  say "making the base $base with mmdebstrap ($suite: $(wc -w <<<"$packages") packages and their dependencies)"
  # Streamed into podman import: no tarball on disk.
  timeout 900 mmdebstrap "${mm_opts[@]}" --include="${packages// /,}" "$suite" - "${sources[@]}" \
    2>"$work/mmdebstrap.log" \
    | timeout 900 podman import -q - "$base" >/dev/null \
    || { tail -20 "$work/mmdebstrap.log" >&2; die "mmdebstrap or podman import failed"; }
  base_how="made in $(since "$t") s"
else
  base_how="cached"
fi
flock -u 9
say "base: $base ($base_how)"

# ---- the image: the Containerfile's `prebuilt` target around the binary ----
# A context of the binary alone (a hard link when on the same file system).
mkdir "$work/context"
ln "$bin" "$work/context/capture" 2>/dev/null || cp "$bin" "$work/context/capture"
t=$(now)
# --network=none: the base already holds every package, so the Containerfile's install step
# has nothing to fetch (if it had, it would fail here instead of passing unnoticed).
build=(podman build --pull=never --network=none --layers --build-arg "BASE=$base" -f "$repo/Containerfile")
runtime=localhost/capture-runtime:image-check
old_runtime="$(podman image inspect --format '{{.Id}}' "$runtime" 2>/dev/null || true)"
timeout 600 "${build[@]}" --target runtime -t "$runtime" -q "$work/context" >/dev/null \
  || die "building the runtime stage failed"
# What an older Containerfile or base left is only disk now: the previous runtime stage (with
# its untagged layers), then older bases (another package list or release).
if [ -n "$old_runtime" ] && [ "$old_runtime" != "$(podman image inspect --format '{{.Id}}' "$runtime")" ]; then
  podman rmi "$old_runtime" >/dev/null 2>&1 || true
fi
podman images --format '{{.Repository}}:{{.Tag}}' | grep '^localhost/capture-base:' | grep -vx "$base" \
  | xargs -r podman rmi >/dev/null 2>&1 || true
timeout 600 "${build[@]}" --target prebuilt -t "$image" -q "$work/context" >/dev/null \
  || die "building the image failed"
say "image built in $(since "$t") s ($(podman image inspect --format '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}'), binary $(du -m "$bin" | cut -f1) MB)"

# ---- an account and a key, made in the container on the data volume ----
t=$(now)
podman volume create "$volume" >/dev/null
admin() { timeout 60 podman run --rm --network=none -v "$volume:/var/lib/capture/data" "$image" admin "$@"; }
admin user create --email image-check@example.com --plan pro >/dev/null || die "capture admin user create failed"
api_key="$(admin key create --email image-check@example.com --name image-check | tail -n1)"
[ -n "$api_key" ] || die "capture admin key create printed no key"

# ---- a page on this machine, reached from the container through slirp4netns (10.0.2.2) ----
mkdir "$work/site"
cat >"$work/site/index.html" <<'EOF'
<!doctype html>
<html><head><meta charset="utf-8"><title>image check</title>
<style>html, body { margin: 0; height: 100%; background: #1f7a4d; color: #fff; font: 32px sans-serif }</style>
</head><body><p>Capture in a container — コンテナ 🙂</p></body></html>
EOF
python3 - "$work/site" >"$work/page.port" 2>"$work/page.log" <<'EOF' &
import functools, http.server, sys
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
print(server.server_address[1], flush=True)
server.serve_forever()
EOF
page_pid=$!
for _ in $(seq 50); do [ -s "$work/page.port" ] && break; sleep 0.1; done
page_port="$(cat "$work/page.port")"
[ -n "$page_port" ] || die "the page server did not start"
# A free port on the host for the API (published on 127.0.0.1 only).
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
base_url="http://127.0.0.1:$port"

# ---- the service ----
timeout 60 podman run -d --name "$name" \
  --network slirp4netns:allow_host_loopback=true -p "127.0.0.1:$port:8080" \
  -v "$volume:/var/lib/capture/data" \
  -e CAPTURE_BASE_URL="$base_url" -e CAPTURE_EGRESS_ALLOW="10.0.2.2:$page_port" \
  "$image" >/dev/null || die "podman run failed"
up=""
for _ in $(seq 120); do
  if curl -fsS -m 2 "$base_url/healthz" >/dev/null 2>&1; then up=1; break; fi
  [ "$(podman inspect --format '{{.State.Running}}' "$name")" = true ] || die "the service exited"
  sleep 0.5
done
[ -n "$up" ] || die "/healthz did not answer within 60 s"
say "healthy in $(since "$t") s (account, key, start)"
ready=""
for _ in $(seq 120); do
  if curl -fsS -m 5 "$base_url/readyz" >"$work/readyz.json" 2>/dev/null; then ready=1; break; fi
  sleep 0.5
done
[ -n "$ready" ] || { curl -sS -m 5 "$base_url/readyz" >&2 || true; die "/readyz was not 200 within 60 s"; }
# Every feature must be usable but those that need a service of the operator's (mail, a
# language model): the image brings the lists, ffmpeg, espeak-ng, pdftoppm, …
python3 - "$work/readyz.json" <<'EOF' || die "/readyz reports a feature the image should bring unavailable"
import json, sys
features = json.load(open(sys.argv[1])).get("features", {})
external = {"mail", "llmExtraction"}
for k in ("blockLists", "pdfThumbnails", "runVideos", "videoAds"):
    assert k in features, f"/readyz no longer reports {k}"
bad = [f"{k}: {v}" for k, v in features.items() if k not in external and v.get("status") != "ok"]
if bad:
    sys.exit("not ok: " + "; ".join(bad))
EOF
uid="$(podman exec "$name" id -u)"
[ "$uid" = 10001 ] || die "the service runs as uid $uid, not 10001"
[ "$(podman exec "$name" cat /proc/1/comm)" = tini ] || die "PID 1 is not tini"
# compose.yaml's health check, run the same way (curl inside the container).
podman exec "$name" curl -fsS -o /dev/null http://127.0.0.1:8080/readyz || die "compose.yaml's health check fails"

# ---- one capture of the local page ----
t=$(now)
width=800 height=600
curl -fsS -m 30 -X POST "$base_url/v1/screenshot" -H "Authorization: Bearer $api_key" \
  -H 'Content-Type: application/json' \
  -d "{\"url\": \"http://10.0.2.2:$page_port/\", \"width\": $width, \"height\": $height}" \
  >"$work/job.json" || die "POST /v1/screenshot failed"
job="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$work/job.json")"
status=""
for _ in $(seq 120); do
  curl -fsS -m 10 "$base_url/v1/screenshot/$job" -H "Authorization: Bearer $api_key" >"$work/job.json" \
    || die "GET /v1/screenshot/$job failed"
  status="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' "$work/job.json")"
  case "$status" in done|failed|canceled|cancelled) break ;; esac
  sleep 0.5
done
[ "$status" = "done" ] || { cat "$work/job.json" >&2; echo >&2; die "the capture ended '$status'"; }
file_url="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["publicUrl"])' "$work/job.json")"
curl -fsS -m 30 "$file_url" -o "$work/shot.png" || die "downloading $file_url failed"
# Decode the PNG (every chunk's CRC, the zlib stream, every row's filter) and look at it: the
# asked size, the page's background in the middle, and something drawn on it (the text).
python3 - "$work/shot.png" "$width" "$height" <<'EOF' || die "the PNG is not the page"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
want_w, want_h = int(sys.argv[2]), int(sys.argv[3])
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, ihdr = 8, b"", None
while pos < len(data):
    (length,) = struct.unpack(">I", data[pos:pos + 4])
    kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
    (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
    assert zlib.crc32(kind + body) == crc, f"bad CRC in {kind!r}"
    if kind == b"IHDR":
        ihdr = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    elif kind == b"IEND":
        break
    pos += 12 + length
w, h, depth, colour, _, _, interlace = ihdr
assert (w, h) == (want_w, want_h), f"{w}x{h}, asked {want_w}x{want_h}"
assert depth == 8 and colour in (2, 6) and interlace == 0, f"unexpected PNG format {ihdr}"
bpp = 3 if colour == 2 else 4
raw = zlib.decompress(idat)
stride = w * bpp
assert len(raw) == h * (stride + 1), "wrong amount of pixel data"
prev, rows = bytearray(stride), []
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    if f == 1:
        for i in range(bpp, stride): line[i] = (line[i] + line[i - bpp]) & 255
    elif f == 2:
        for i in range(stride): line[i] = (line[i] + prev[i]) & 255
    elif f == 3:
        for i in range(stride): line[i] = (line[i] + ((line[i - bpp] if i >= bpp else 0) + prev[i]) // 2) & 255
    elif f == 4:
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    else:
        assert f == 0, f"bad filter {f}"
    rows.append(line)
    prev = line
px = lambda x, y: tuple(rows[y][x * bpp:x * bpp + 3])
centre = px(w // 2, h // 2)
assert all(abs(a - b) <= 2 for a, b in zip(centre, (0x1F, 0x7A, 0x4D))), f"centre pixel {centre}, not the page's #1f7a4d"
top = [px(x, y) for y in range(0, h // 4) for x in range(0, w, 2)]
drawn = sum(1 for p in top if p != centre)
assert drawn > 100, "nothing drawn on the background (no text)"
# The emoji in colour (Noto Color Emoji): yellow, which neither text nor background is.
yellow = sum(1 for r, g, b in top if r > 200 and g > 150 and b < 120)
assert yellow > 20, "no colour emoji drawn (fonts-noto-color-emoji)"
print(f"image-check: PNG {w}x{h} decoded; background #1f7a4d; text and a colour emoji drawn ({drawn}, {yellow} pixels sampled)", file=sys.stderr)
EOF
say "captured the local page in $(since "$t") s: $(wc -c <"$work/shot.png") bytes, ${width}x${height}"
if [ -n "${IMAGE_CHECK_OUT:-}" ]; then
  mkdir -p "$IMAGE_CHECK_OUT" && cp "$work/shot.png" "$work/readyz.json" "$IMAGE_CHECK_OUT/"
fi

# ---- stop: SIGTERM through tini, the service drains and exits ----
t=$(now)
timeout 60 podman stop -t 40 "$name" >/dev/null || die "podman stop failed"
code="$(podman inspect --format '{{.State.ExitCode}}' "$name")"
[ "$code" = 0 ] || die "the service exited with $code after SIGTERM"
say "stopped in $(since "$t") s (exit 0)"
ok=1
say "ok in $(since "$t_start") s (base $base_how)"
