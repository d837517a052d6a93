#!/usr/bin/env bash
# The SDKs cannot drift from the API: sdks/openapi.json must be the document the binary serves
# (`capture openapi`), and each SDK's generated types must be what its generator makes of it.
# After changing the API: `capture openapi > sdks/openapi.json`, then run both generators
# without --check, and commit the three files.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${CAPTURE_BIN:-${CARGO_TARGET_DIR:-target}/debug/capture}"
if ! diff -u sdks/openapi.json <("$bin" openapi) > /tmp/capture-openapi-drift.diff; then
    head -40 /tmp/capture-openapi-drift.diff >&2
    echo "sdks/openapi.json is not the document the service serves: run \`capture openapi > sdks/openapi.json\`, then the SDK generators" >&2
    exit 1
fi
python3 sdks/python/generate.py --check
node sdks/typescript/generate.mjs --check
echo "sdks: the OpenAPI document and both SDKs' generated types are up to date"
