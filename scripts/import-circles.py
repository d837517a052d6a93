#!/usr/bin/env python3
"""Import circles between the source files of each crate: exits 1 and names them if any.

A file depends on another when it names a module path that resolves to it (`use crate::a::b`,
`crate::a::b::f(…)` in code, `super::x`, `self::x`). What a module declares (`mod x;`) and
re-exports of its own children (`pub use x::…`) are its structure, not dependencies. Comments
and doc lines are skipped. Run: `python3 scripts/import-circles.py` (from anywhere).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATH_RE = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")


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


def edges(src: Path) -> dict[Path, set[Path]]:
    mods = modules(src)
    by_file = {f: m for m, f in mods.items()}
    graph: dict[Path, set[Path]] = {f: set() for f in by_file}
    for f, me in by_file.items():
        text = f.read_text(encoding="utf-8", errors="replace")
        if "#[cfg(test)]" in text:
            text = text.split("#[cfg(test)]")[0]
        for line in code_lines(text):
            stripped = line.strip()
            if re.match(r"(pub(\([a-z]+\))?\s+)?mod\s+\w+\s*;", stripped):
                continue
            for base, rest in PATH_RE.findall(line):
                parts = rest.split("::")[1:]
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
