#!/usr/bin/env python3
"""Import circles between the source files of each crate: exits 1 and names them if any.

A file depends on another when it names a module path that resolves to it (`use crate::a::b`,
`crate::a::b::f(…)` in code, `super::x`, `self::x`). What a module declares (`mod x;`) and
re-exports of its own children (`pub use x::…`) are its structure, not dependencies. Comments
and doc lines are skipped; grouped imports (`use crate::{a, b::{c, d}}`) count once per path, and
`use child::x` (a child module named without `self::`) counts too.
Run: `python3 scripts/import-circles.py` (from anywhere).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATH_RE = re.compile(r"\b(crate|super|self)((?:::(?:[A-Za-z_][A-Za-z0-9_]*|\*))+)")


def modules(src: Path) -> dict[tuple[str, ...], Path]:
    """Module path → file, for one crate's `src` (lib.rs or main.rs is the root)."""
    out: dict[tuple[str, ...], Path] = {}
    for f in src.rglob("*.rs"):
        rel = f.relative_to(src).with_suffix("").parts
        if rel in (("lib",), ("main",)):
            out[()] = f
        elif rel[-1] == "mod":
            out[rel[:-1]] = f
        else:
            out[rel] = f
    return out


def code_lines(text: str):
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("//"):
            continue
        yield line.split("//")[0] if "//" in line and '"' not in line else line


def expand(tree: str) -> list[str]:
    """The paths a `use` tree names: `crate::{a, b::{c, d}}` → `crate::a`, `crate::b::c`, `crate::b::d`."""
    tree = re.sub(r"\s+as\s+\w+", "", tree)
    tree = re.sub(r"\s+", "", tree)
    brace = tree.find("{")
    if brace < 0:
        return [tree]
    prefix, inner = tree[:brace], tree[brace + 1 : tree.rfind("}")]
    items, depth, start = [], 0, 0
    for i, c in enumerate(inner):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            items.append(inner[start:i])
            start = i + 1
    items.append(inner[start:])
    out = []
    for item in filter(None, items):
        for sub in expand(item):
            out.append(prefix.rstrip(":") if sub == "self" else prefix + sub)
    return out


USE_RE = re.compile(r"^(\s*)((?:pub(?:\([a-z]+\))?\s+)?)use\s+([^;]+);", re.M | re.S)


def expand_uses(text: str) -> str:
    """Each `use` with groups, one line per path it names (so grouped imports count)."""
    return USE_RE.sub(lambda m: "\n".join(f"{m.group(1)}{m.group(2)}use {p};" for p in expand(m.group(3))), text)


def edges(src: Path) -> dict[Path, set[Path]]:
    mods = modules(src)
    by_file = {f: m for m, f in mods.items()}
    graph: dict[Path, set[Path]] = {f: set() for f in by_file}
    for f, me in by_file.items():
        text = f.read_text(encoding="utf-8", errors="replace")
        if "#[cfg(test)]" in text:
            text = text.split("#[cfg(test)]")[0]
        text = expand_uses("\n".join(code_lines(text)))
        for line in code_lines(text):
            stripped = line.strip()
            if re.match(r"(pub(\([a-z]+\))?\s+)?mod\s+\w+\s*;", stripped):
                continue
            found = PATH_RE.findall(line)
            # `use child::x` names a child module of this one without a prefix.
            bare = re.match(r"(?:pub(?:\([a-z]+\))?\s+)?use\s+([A-Za-z_][A-Za-z0-9_]*)((?:::[A-Za-z_*][A-Za-z0-9_]*)*)", stripped)
            if bare and bare.group(1) not in ("crate", "super", "self") and me + (bare.group(1),) in mods:
                found.append(("self", "::" + bare.group(1) + bare.group(2)))
            for base, rest in found:
                parts = [p for p in rest.split("::")[1:] if p != "*"]
                if base == "crate":
                    start: tuple[str, ...] = ()
                elif base == "self":
                    start = me
                else:
                    # `super::x`, `super::super::x`
                    start = me[:-1]
                    while parts and parts[0] == "super":
                        start = start[:-1]
                        parts = parts[1:]
                path = start + tuple(parts)
                while path and path not in mods:
                    path = path[:-1]
                # A re-export of one's own descendant is structure, not a dependency.
                if stripped.startswith("pub use") and len(path) > len(me) and path[: len(me)] == me:
                    continue
                target = mods.get(path)
                if target is not None and target != f:
                    graph[f].add(target)
    return graph


def circles(graph: dict[Path, set[Path]]) -> list[list[Path]]:
    """Strongly connected components of more than one file (Tarjan)."""
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on: set[Path] = set()
    out: list[list[Path]] = []
    counter = [0]

    sys.setrecursionlimit(10000)

    def visit(v: Path) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def main() -> int:
    found = 0
    for src in sorted(ROOT.glob("crates/*/src")):
        graph = edges(src)
        # The crate root declares and re-exports everything: it is structure, not a layer.
        root = modules(src).get(())
        if root is not None:
            graph[root] = set()
        for comp in circles(graph):
            found += 1
            print(f"circle of {len(comp)} files in {src.parent.name}:")
            for f in comp:
                names = [str(t.relative_to(ROOT)) for t in graph[f] if t in comp]
                print(f"  {f.relative_to(ROOT)} -> {', '.join(sorted(names))}")
    if found:
        return 1
    print("no import circles in crates/*/src")
    return 0


if __name__ == "__main__":
    sys.exit(main())
