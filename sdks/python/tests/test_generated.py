"""The generated types cannot drift from the OpenAPI document, and every route the SDK
calls is one the document has."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from capture_client import _ops, models

SDK = Path(__file__).resolve().parent.parent
GENERATE = SDK / "generate.py"
OPENAPI = SDK.parent / "openapi.json"
MODELS = SDK / "src" / "capture_client" / "models.py"


def run_generate(*args: str) -> subprocess.CompletedProcess:
    # From the repository's root, as the test command runs it.
    return subprocess.run([sys.executable, str(GENERATE), *args], capture_output=True, text=True, timeout=60, cwd=SDK.parent.parent)


def test_models_are_up_to_date():
    out = run_generate("--check")
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_check_fails_naming_the_file_when_the_document_changes(tmp_path):
    doc = json.loads(OPENAPI.read_text())
    job = doc["components"]["schemas"]["Job"]
    job["properties"]["brandNewField"] = {"type": "string", "description": "Added by the test."}
    changed = tmp_path / "openapi.json"
    changed.write_text(json.dumps(doc))
    out = run_generate("--check", "--openapi", str(changed))
    assert out.returncode == 1
    assert "sdks/python/src/capture_client/models.py differs" in out.stderr
    assert "brandNewField" in out.stdout  # the diff shows what changed
    # Written, the new field is there; the committed file is untouched.
    written = tmp_path / "models.py"
    assert run_generate("--openapi", str(changed), "--out", str(written)).returncode == 0
    assert "brandNewField: NotRequired[str]" in written.read_text()
    assert run_generate("--check").returncode == 0


def test_every_route_the_sdk_calls_is_in_the_document():
    missing = sorted(_ops.ROUTES - models.OPERATIONS)
    assert not missing, f"the SDK calls routes the OpenAPI document does not have: {missing}"


def test_generated_types_read_like_the_api():
    assert models.Job.__required_keys__ >= {"id", "status", "url", "createdAt"}
    assert "url" not in models.ScreenshotOptions.__annotations__
    assert models.ScreenshotOptions.__required_keys__ == frozenset()
    assert "fullPage" in models.ScreenshotOptions.__optional_keys__
    assert "test.ping" in models.WebhookEventType.__args__


def test_every_generated_type_resolves():
    """Every forward reference in models.py names a type that exists (get_type_hints
    evaluates them all)."""
    import typing

    checked = 0
    for name in models.__all__:
        obj = getattr(models, name)
        if isinstance(obj, type) and issubclass(obj, dict) and hasattr(obj, "__required_keys__"):
            typing.get_type_hints(obj)
            checked += 1
    assert checked > 50
