#!/usr/bin/env bash
# Install what Capture needs on a Debian machine, skipping what is already there.
#   scripts/setup.sh            runtime: Chromium, fonts, poppler (PDF thumbnails), ffmpeg and
#                               espeak-ng (screencast videos, narrated ads), and the EasyList and
#                               EasyPrivacy filter lists of Debian's uBlock Origin package
#                               (blockAds, blockTrackers; read from /usr/share, never copied)
#   scripts/setup.sh --test     also PostgreSQL (started, reachable on 127.0.0.1:5432)
# Two phases, which scripts/run.sh runs apart so the packages download while the build runs:
#   scripts/setup.sh --toolchain   only what the build needs (a C compiler, Rust)
#   scripts/setup.sh --packages    only the runtime packages (add --test for PostgreSQL)
set -euo pipefail

want_pg=0
do_toolchain=1
do_packages=1
for arg in "$@"; do
  case "$arg" in
    --test) want_pg=1 ;;
    --toolchain) do_packages=0 ;;
    --packages) do_toolchain=0 ;;
    *) echo "setup: unknown argument $arg" >&2; exit 2 ;;
  esac
done

SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null; then SUDO="sudo"; else echo "setup: run as root or install sudo" >&2; exit 1; fi
fi

have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
apt_install() {
  echo "setup: installing $*"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

if [ "$do_toolchain" = 1 ]; then
  # The crates that build C (SQLite, aws-lc) need a compiler and libc's headers.
  if ! command -v cc >/dev/null || ! have_pkg libc6-dev; then
    apt_install gcc libc6-dev
  fi
  if ! command -v cargo >/dev/null; then
    if [ -x "$HOME/.cargo/bin/cargo" ]; then
      export PATH="$HOME/.cargo/bin:$PATH"
    else
      command -v curl >/dev/null || apt_install curl ca-certificates
      echo "setup: installing the Rust toolchain with rustup"
      curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal -c clippy,rustfmt
      export PATH="$HOME/.cargo/bin:$PATH"
    fi
  fi
fi
[ "$do_packages" = 1 ] || exit 0

missing=()
for p in chromium chromium-headless-shell fonts-noto-core fonts-noto-color-emoji fonts-noto-cjk fonts-liberation poppler-utils ffmpeg espeak-ng webext-ublock-origin-chromium ca-certificates curl; do
  have_pkg "$p" || missing+=("$p")
done
if [ "$want_pg" = 1 ] && ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  missing+=(python3-venv)
fi
if [ "$want_pg" = 1 ] && ! command -v pg_ctlcluster >/dev/null && ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  missing+=(postgresql)
fi
if [ "${#missing[@]}" -gt 0 ]; then
  apt_install "${missing[@]}"
fi

if [ "$want_pg" = 1 ]; then
  if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
    echo "setup: starting PostgreSQL"
    ver=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n1)
    if [ -n "$ver" ]; then
      $SUDO pg_ctlcluster --skip-systemctl-redirect "$ver" main start || true
    fi
    for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
  fi
  pg_isready -h 127.0.0.1 -p 5432 >/dev/null || { echo "setup: PostgreSQL is not reachable on 127.0.0.1:5432" >&2; exit 1; }
  # A fresh Debian cluster asks for a password over TCP: give the postgres role the one the
  # tests use (machines with trust auth ignore it).
  if ! psql -h 127.0.0.1 -U postgres -w -c 'select 1' postgres >/dev/null 2>&1; then
    (cd / && $SUDO -u postgres psql -q -c "ALTER USER postgres PASSWORD 'postgres'" 2>/dev/null) || \
      (cd / && su postgres -c "psql -q -c \"ALTER USER postgres PASSWORD 'postgres'\"") || true
  fi
fi
