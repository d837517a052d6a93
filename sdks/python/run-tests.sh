#!/usr/bin/env bash
# The Python SDK's tests (sdks/python/tests) against a real service: the `capture` binary
# (CAPTURE_BIN, else target/debug/capture, not built here) started by the tests on a fresh
# SQLite database with the api, worker and scheduler roles, capturing pages the tests serve
# on 127.0.0.1. First the drift check: models.py must be what generate.py makes of
# sdks/openapi.json. The virtualenv lives in the target dir (sdk-python-venv), made from
# sdks/python/requirements.txt (PyPI) with the SDK installed editable, and made again when
# the requirements or pyproject.toml change. Arguments go to pytest (-k NAME, -x…).
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 sdks/python/generate.py --check
target="${CARGO_TARGET_DIR:-$PWD/target}"
venv="$target/sdk-python-venv"
stamp="$venv/.requirements"
want="$(cat sdks/python/requirements.txt sdks/python/pyproject.toml)"
if [ ! -x "$venv/bin/pytest" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    mkdir -p "$target"
    python3 -m venv --clear "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r sdks/python/requirements.txt >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e sdks/python >&2
    printf '%s' "$want" >"$stamp"
fi
bin="${CAPTURE_BIN:-$target/debug/capture}"
[ -x "$bin" ] || { echo "no capture binary at $bin: cargo build -p capture --bin capture, or set CAPTURE_BIN" >&2; exit 1; }
export CAPTURE_BIN="$bin" PYTHONDONTWRITEBYTECODE=1
exec "$venv/bin/pytest" -q -p no:cacheprovider --rootdir sdks/python sdks/python/tests "$@"
