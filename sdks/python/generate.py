#!/usr/bin/env python3
"""Generate ``src/capture_client/models.py`` from the service's OpenAPI document
(``sdks/openapi.json``, written by ``capture openapi``): a TypedDict per object schema of
``components.schemas`` (and per inline object inside one), string enums as ``Literal``, unions
as ``Union``, plus the operations (``OPERATIONS``), those that honour an ``Idempotency-Key``
(``IDEMPOTENT_OPERATIONS``) and the webhook event types (``WebhookEventType``) it lists.

    python3 sdks/python/generate.py           # write models.py
    python3 sdks/python/generate.py --check   # exit 1 naming the file when it is out of date

Standard library only; the output depends on nothing but the document.
"""

from __future__ import annotations

import argparse
import difflib
import json
import keyword
import re
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
DEFAULT_OPENAPI = HERE.parent / "openapi.json"
DEFAULT_OUT = HERE / "src" / "capture_client" / "models.py"

# Request bodies that the client takes as keyword arguments beside a positional field: a
# copy of the schema with every field optional and those fields left out, under a new name
# (e.g. ``screenshots.create(url, **options: Unpack[ScreenshotOptions])``).
KWARGS_VARIANTS: Dict[str, Tuple[str, Tuple[str, ...]]] = {
    "ScreenshotRequest": ("ScreenshotOptions", ("url",)),
}

HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


def class_name(name: str) -> str:
    """A schema name as a Python class name: ``ListResponse_Job`` → ``ListResponseJob``."""
    parts = [p for p in re.split(r"[^0-9A-Za-z]+", name) if p]
    out = "".join(p[0].upper() + p[1:] for p in parts) or "Schema"
    if out[0].isdigit():
        out = "S" + out
    return out


def docstring(text: str, indent: str) -> List[str]:
    text = " ".join(text.split())
    if not text:
        return []
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if text.endswith('"'):
        text += " "
    width = 96 - len(indent)
    lines = textwrap.wrap(text, width=width, break_long_words=False, break_on_hyphens=False) or [text]
    if len(lines) == 1 and len(lines[0]) + 6 <= width:
        return [f'{indent}"""{lines[0]}"""']
    return [f'{indent}"""{lines[0]}'] + [f"{indent}{line}" for line in lines[1:]] + [f'{indent}"""']


class Generator:
    def __init__(self, doc: Dict[str, Any]) -> None:
        self.doc = doc
        self.schemas: Dict[str, Any] = doc.get("components", {}).get("schemas", {})
        self.names = {name: class_name(name) for name in self.schemas}
        # Output blocks by class name, in the order they are made.
        self.blocks: Dict[str, List[str]] = {}
        # Aliases of another schema, written after the classes.
        self.deferred: List[str] = []
        # The fields of each TypedDict made: (key, type, description).
        self.fields: Dict[str, List[Tuple[str, str, Optional[str]]]] = {}

    # --- references and types -------------------------------------------------------------

    def ref_name(self, ref: str) -> str:
        prefix = "#/components/schemas/"
        if not ref.startswith(prefix):
            raise SystemExit(f"generate.py: a $ref this generator does not follow: {ref}")
        name = ref[len(prefix):]
        if name not in self.names:
            raise SystemExit(f"generate.py: $ref to a missing schema: {ref}")
        return self.names[name]

    def py_type(self, s: Any, hint: str) -> str:
        """The Python type expression of schema ``s``; inline objects with properties become
        TypedDicts named ``hint``. Names of generated classes are quoted (forward refs)."""
        if s is True or s == {} or s is None:
            return "Any"
        if s is False:
            return "NoReturn"
        if "$ref" in s:
            return f'"{self.ref_name(s["$ref"])}"'
        if "const" in s:
            return f"Literal[{json.dumps(s['const'])}]"
        if "enum" in s:
            values = [v for v in s["enum"] if v is not None]
            lit = f"Literal[{', '.join(json.dumps(v) for v in values)}]" if values else "None"
            if None in s["enum"] and values:
                return f"Optional[{lit}]"
            return lit
        for key in ("oneOf", "anyOf"):
            if key in s:
                variants = s[key]
                types: List[str] = []
                # Name the inline objects among the variants by their tag or position, unless
                # there is only one.
                inline = [v for v in variants if isinstance(v, dict) and "$ref" not in v and (v.get("properties") or v.get("oneOf") or v.get("anyOf"))]
                for i, v in enumerate(variants):
                    t = self.py_type(v, f"{hint}{self.variant_suffix(v, i)}" if len(inline) > 1 else hint)
                    if t not in types:
                        types.append(t)
                return self.union(types)
        if "allOf" in s:
            parts = s["allOf"]
            if len(parts) == 1:
                return self.py_type(parts[0], hint)
            # Intersections: a TypedDict with every part's fields.
            merged: Dict[str, Any] = {"type": "object", "properties": {}, "required": []}
            for p in parts:
                p = self.resolve(p)
                merged["properties"].update(p.get("properties", {}))
                merged["required"] += p.get("required", [])
            return self.py_type(merged, hint)
        t = s.get("type")
        if isinstance(t, list):
            types = []
            for one in t:
                sub = dict(s, type=one)
                types.append(self.py_type(sub, hint))
            return self.union(types)
        if t == "string":
            return "str"
        if t == "integer":
            return "int"
        if t == "number":
            return "float"
        if t == "boolean":
            return "bool"
        if t == "null":
            return "None"
        if t == "array":
            items = s.get("items")
            if isinstance(items, dict) or items is True:
                return f"List[{self.py_type(items, self.singular(hint))}]"
            if "prefixItems" in s:
                return f"List[{self.union([self.py_type(p, hint) for p in s['prefixItems']])}]"
            return "List[Any]"
        if t == "object" or "properties" in s:
            if s.get("properties"):
                name = self.unique(hint)
                self.emit_typed_dict(name, s)
                return f'"{name}"'
            extra = s.get("additionalProperties")
            if isinstance(extra, dict) and extra:
                return f"Dict[str, {self.py_type(extra, hint + 'Value')}]"
            return "Dict[str, Any]"
        return "Any"

    @staticmethod
    def description(p: Any) -> Optional[str]:
        """A property's description, or its non-null variant's (``oneOf: [{$ref, description}, null]``)."""
        if not isinstance(p, dict):
            return None
        if p.get("description"):
            return p["description"]
        for key in ("oneOf", "anyOf", "allOf"):
            for v in p.get(key) or []:
                if isinstance(v, dict) and v.get("description"):
                    return v["description"]
        return None

    def resolve(self, s: Dict[str, Any]) -> Dict[str, Any]:
        while "$ref" in s:
            s = self.schemas[s["$ref"].split("/")[-1]]
        return s

    def variant_suffix(self, v: Any, i: int) -> str:
        if not isinstance(v, dict):
            return str(i + 1)
        if v.get("title"):
            return class_name(v["title"])
        # A variant told apart by a constant (a tag such as `action: "goto"`).
        props = v.get("properties") or {}
        for key, p in props.items():
            if isinstance(p, dict) and ("const" in p or (p.get("enum") and len(p["enum"]) == 1)):
                value = p.get("const", (p.get("enum") or [None])[0])
                if isinstance(value, str):
                    return class_name(value)
        return str(i + 1)

    @staticmethod
    def singular(hint: str) -> str:
        if hint.endswith("ies") and not hint.endswith(("kies", "vies")):
            return hint[:-3] + "y"
        if hint.endswith("s") and not hint.endswith("ss"):
            return hint[:-1]
        return hint + "Item"

    @staticmethod
    def union(types: List[str]) -> str:
        nullable = "None" in types
        rest = [t for t in types if t != "None"]
        if "Any" in rest:
            return "Any"
        if not rest:
            return "None"
        inner = rest[0] if len(rest) == 1 else f"Union[{', '.join(rest)}]"
        return f"Optional[{inner}]" if nullable else inner

    def unique(self, name: str) -> str:
        """``name``, or ``name2``, ``name3``… when a schema or another class has it."""
        taken = set(self.blocks) | set(self.names.values())
        base, n = name, 2
        while name in taken:
            name = f"{base}{n}"
            n += 1
        self.blocks[name] = []  # reserved
        return name

    # --- output -----------------------------------------------------------------------------

    def emit_typed_dict(
        self, name: str, s: Dict[str, Any], drop: Tuple[str, ...] = (), like: Optional[str] = None, doc: Optional[str] = None
    ) -> None:
        fields: List[Tuple[str, str, Optional[str]]] = []
        if like is not None:
            # The fields of an emitted TypedDict (its nested types reused), all optional.
            for key, t, desc in self.fields[like]:
                if key not in drop:
                    fields.append((key, f"NotRequired[{t}]", desc))
        else:
            required = set(s.get("required") or [])
            own: List[Tuple[str, str, Optional[str]]] = []
            for key, p in (s.get("properties") or {}).items():
                t = self.py_type(p, name + class_name(key))
                desc = self.description(p)
                own.append((key, t, desc))
                fields.append((key, t if key in required else f"NotRequired[{t}]", desc))
            self.fields[name] = own
        lines: List[str] = []
        functional = any(not k.isidentifier() or keyword.iskeyword(k) for k, _, _ in fields)
        description = doc if doc is not None else s.get("description") or s.get("title") or ""
        if functional:
            if description:
                lines += [f"# {line}" for line in textwrap.wrap(" ".join(description.split()), 94)]
            lines.append(f"{name} = TypedDict(")
            lines.append(f'    "{name}",')
            lines.append("    {")
            for key, t, desc in fields:
                if desc:
                    lines += [f"        # {line}" for line in textwrap.wrap(" ".join(desc.split()), 88)]
                lines.append(f"        {json.dumps(key)}: {t},")
            lines.append("    },")
            lines.append(")")
        else:
            lines.append(f"class {name}(TypedDict):")
            body = docstring(description, "    ")
            lines += body
            for key, t, desc in fields:
                lines.append(f"    {key}: {t}")
                lines += docstring(desc or "", "    ")
            if not fields and not body:
                lines.append("    pass")
        self.blocks[name] = lines

    def emit_schema(self, raw: str, s: Dict[str, Any]) -> None:
        name = self.names[raw]
        if "allOf" in s and len(s["allOf"]) > 1:
            # An intersection (a schema and more fields): one TypedDict with every part's fields.
            merged: Dict[str, Any] = {"type": "object", "properties": {}, "required": [], "description": s.get("description")}
            for part in s["allOf"]:
                part = self.resolve(part)
                merged["properties"].update(part.get("properties") or {})
                merged["required"] += part.get("required") or []
            s = merged
        if s.get("type") == "object" or ("properties" in s and "type" not in s):
            if s.get("properties") or not s.get("additionalProperties"):
                self.blocks[name] = []
                self.emit_typed_dict(name, s)
                return
        # Everything else is an alias: enums, unions, maps, scalars.
        self.blocks[name] = []
        desc = s.get("description") or ""
        expr = self.alias_expr(s, name)
        lines = [f"# {line}" for line in textwrap.wrap(" ".join(desc.split()), 94)] if desc else []
        lines.append(f"{name} = {expr}")
        self.blocks[name] = lines

    def alias_expr(self, s: Dict[str, Any], name: str) -> str:
        t = self.py_type(s, name + "Variant")
        if re.fullmatch(r'"\w+"', t):
            # An alias of one other schema must be the class itself, not its name: written
            # after every class (see render).
            self.deferred.append(name)
            return t[1:-1]
        return t

    def operations(self) -> List[str]:
        ops: List[str] = []
        for path, item in sorted(self.doc.get("paths", {}).items()):
            for m in HTTP_METHODS:
                if m in item:
                    ops.append(f"{m.upper()} {path}")
        return ops

    def keyed_operations(self) -> List[str]:
        """Operations that take an ``Idempotency-Key`` header (a retry replays the first answer)."""
        ops: List[str] = []
        for path, item in sorted(self.doc.get("paths", {}).items()):
            for m in HTTP_METHODS:
                params = (item.get(m) or {}).get("parameters") or []
                if any(isinstance(x, dict) and x.get("in") == "header" and x.get("name", "").lower() == "idempotency-key" for x in params):
                    ops.append(f"{m.upper()} {path}")
        return ops

    def webhook_events(self) -> List[str]:
        return sorted((self.doc.get("webhooks") or {}).keys())

    def render(self) -> str:
        for raw in sorted(self.schemas):
            self.emit_schema(raw, self.schemas[raw])
        for raw, (variant, drop) in sorted(KWARGS_VARIANTS.items()):
            if raw not in self.schemas:
                raise SystemExit(f"generate.py: the document has no schema {raw} (KWARGS_VARIANTS)")
            self.blocks[variant] = []
            self.emit_typed_dict(
                variant,
                {},
                drop=drop,
                like=self.names[raw],
                doc=f"The fields of {self.names[raw]} but {', '.join(drop)}, all optional: the keyword arguments of the call that takes {', '.join(drop)} apart.",
            )
        info = self.doc.get("info", {})
        head = [
            "# Generated by sdks/python/generate.py from sdks/openapi.json: do not edit.",
            f"# {info.get('title', '')} {info.get('version', '')} (OpenAPI {self.doc.get('openapi', '?')}).",
            "# Run `python3 sdks/python/generate.py` after `capture openapi > sdks/openapi.json`.",
            '"""The API\'s request and response types, generated from its OpenAPI document."""',
            "",
            "import sys",
            "from typing import {typing_names}",
            "",
            "if sys.version_info >= (3, 11):",
            "    from typing import NotRequired, TypedDict",
            "else:  # pragma: no cover",
            "    from typing_extensions import NotRequired, TypedDict",
            "",
            f"API_VERSION = {json.dumps(info.get('version', ''))}",
            "",
        ]
        body: List[str] = []
        for name in sorted(self.blocks, key=lambda n: (n in self.deferred, n)):
            body += ["", ""] + self.blocks[name]
        ops = self.operations()
        tail = ["", "", "# Every operation of the document, as `METHOD /path`.", "OPERATIONS = frozenset("]
        tail.append("    {")
        tail += [f"        {json.dumps(op)}," for op in ops]
        tail.append("    }")
        tail.append(")")
        tail += ["", "# The operations that honour an Idempotency-Key (a retry replays the first answer).", "IDEMPOTENT_OPERATIONS = frozenset("]
        tail.append("    {")
        tail += [f"        {json.dumps(op)}," for op in self.keyed_operations()]
        tail.append("    }")
        tail.append(")")
        events = self.webhook_events()
        if events:
            tail += ["", "# The webhook event types the service delivers."]
            tail.append("WebhookEventType = Literal[")
            tail += [f"    {json.dumps(e)}," for e in events]
            tail.append("]")
        names = sorted(self.blocks) + ["API_VERSION", "OPERATIONS", "IDEMPOTENT_OPERATIONS"] + (["WebhookEventType"] if events else [])
        tail += ["", "__all__ = ["] + [f"    {json.dumps(n)}," for n in names] + ["]"]
        rest = "\n".join(body[1:] + tail)
        used = [n for n in ("Any", "Dict", "List", "Literal", "NoReturn", "Optional", "Union") if re.search(rf"\b{n}\b", rest)]
        head = [line.replace("{typing_names}", ", ".join(used)) for line in head]
        return "\n".join(head) + "\n" + rest + "\n"


def generate(openapi: Path) -> str:
    doc = json.loads(openapi.read_text(encoding="utf-8"))
    return Generator(doc).render()


def shown(path: Path) -> str:
    """A path as the user would type it: relative to the working directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="do not write; exit 1 when the file differs from what would be written")
    ap.add_argument("--openapi", type=Path, default=DEFAULT_OPENAPI, help="the OpenAPI document (default: sdks/openapi.json)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the module to write (default: src/capture_client/models.py)")
    args = ap.parse_args(argv)
    text = generate(args.openapi)
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        if current != text:
            diff = list(difflib.unified_diff(current.splitlines(), text.splitlines(), shown(args.out), "generated", lineterm="", n=1))
            sys.stdout.write("\n".join(diff[:60]) + ("\n…\n" if len(diff) > 60 else "\n"))
            print(f"{shown(args.out)} differs from what {shown(args.openapi)} generates: run python3 sdks/python/generate.py", file=sys.stderr)
            return 1
        print(f"{shown(args.out)} is up to date with {shown(args.openapi)}")
        return 0
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {shown(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
