"""How the package's signatures are typed: the counts issue 50 tracks for the CLI.

    python scripts/annotation_stats.py [--list]

Reads the source (``car_verify/`` and ``analyses/``) without importing it and prints:

* ``any``: parameters annotated with bare ``Any`` over all annotated parameters
  (``self`` and ``cls`` are not annotated, so not counted), and the same over the
  public functions and methods of ``car_verify/cli/`` (names without a leading ``_``);
* ``profile``: the distinct annotations of parameters named ``profile``;
* ``private imports``: names starting with ``_`` imported from ``car_verify/cli``'s
  shared module (``_common`` or ``options``) by the command modules;
* ``format branches``: comparisons of ``args.format`` with ``==`` / ``!=`` / ``in``.

``--list`` also names each parameter annotated ``Any`` and each ``profile``
annotation's places.
"""

from __future__ import annotations

import argparse
import ast
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREES = ("car_verify", "analyses")
SHARED = ("_common", "options")


def _files() -> Iterator[Path]:
    for tree in TREES:
        yield from sorted((ROOT / tree).rglob("*.py"))


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    a = fn.args
    extra = [x for x in (a.vararg, a.kwarg) if x is not None]
    return [*a.posonlyargs, *a.args, *a.kwonlyargs, *extra]


def _is_bare_any(node: ast.expr | None) -> bool:
    if node is None:
        return False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # "Any" as a string
        return node.value.strip() == "Any"
    return (isinstance(node, ast.Name) and node.id == "Any") or (
        isinstance(node, ast.Attribute) and node.attr == "Any"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="name the places counted")
    args = parser.parse_args(argv)

    annotated = bare = 0
    cli_annotated = cli_bare = 0
    any_places: list[str] = []
    profile: defaultdict[str, list[str]] = defaultdict(list)
    private: Counter[str] = Counter()
    branches: list[str] = []
    for path in _files():
        rel = path.relative_to(ROOT).as_posix()
        in_cli = rel.startswith("car_verify/cli/")
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                public = not node.name.startswith("_") or node.name == "__init__"
                for param in _params(node):
                    if param.annotation is None:
                        continue
                    annotated += 1
                    is_any = _is_bare_any(param.annotation)
                    bare += is_any
                    if in_cli and public:
                        cli_annotated += 1
                        cli_bare += is_any
                    if is_any:
                        any_places.append(f"{rel}:{node.lineno} {node.name}({param.arg})")
                    if param.arg == "profile":
                        shown = ast.unparse(param.annotation)
                        profile[shown].append(f"{rel}:{node.lineno}")
            elif (
                isinstance(node, ast.ImportFrom)
                and in_cli
                and (node.module or "").rpartition(".")[2] in SHARED
            ):
                private.update(a.name for a in node.names if a.name.startswith("_"))
            elif isinstance(node, ast.Compare) and any(
                isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn) for op in node.ops
            ):
                sides = [node.left, *node.comparators]
                if any(ast.unparse(s) == "args.format" for s in sides):
                    branches.append(f"{rel}:{node.lineno}")

    def share(n: int, d: int) -> str:
        return f"{n}/{d} = {100 * n / d:.1f}%" if d else "0/0"

    print(f"any: {share(bare, annotated)} of annotated parameters (car_verify/ + analyses/)")
    print(f"any in cli/ public signatures: {share(cli_bare, cli_annotated)}")
    print(f"profile: {len(profile)} annotations of a `profile` parameter")
    for shown, places in sorted(profile.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(places):3} {shown}")
        if args.list:
            print("".join(f"        {p}\n" for p in places), end="")
    total = sum(private.values())
    print(f"private imports: {total} names ({len(private)} distinct) from the cli's shared module")
    print(f"format branches: {len(branches)} comparisons of args.format")
    if args.list:
        print("".join(f"  {b}\n" for b in branches), end="")
        print("".join(f"  any: {p}\n" for p in any_places), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
