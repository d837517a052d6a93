#!/usr/bin/env bash
# Make (or reuse) the virtualenv holding Python's aiosmtpd for the outbound mail tests and print
# the path of its `python`. The virtualenv lives in the Cargo target directory (aiosmtpd-venv),
# next to the S3 tests' one, and is rebuilt from tests/smtp/requirements.txt when missing or
# stale. The tests start tests/smtp/smtp_sink.py with it and stop it themselves.
set -euo pipefail
cd "$(dirname "$0")/../.."
target="${CARGO_TARGET_DIR:-$PWD/target}"
venv="$target/aiosmtpd-venv"
stamp="$venv/.requirements"
if [ ! -x "$venv/bin/python" ] || ! cmp -s tests/smtp/requirements.txt "$stamp" \
    || ! "$venv/bin/python" -c 'import aiosmtpd' 2>/dev/null; then
    mkdir -p "$target"
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/smtp/requirements.txt >&2
    cp tests/smtp/requirements.txt "$stamp"
fi
echo "$venv/bin/python"
