"""How the package's signatures are typed (issue 50), read from its source.

A profile is taken under one name everywhere: ``ProfileLike`` (a Profile, a
profile's name, a Semantics object, or None), except where the value is only a
profile's name used as a key (the code table's columns, a pass's profiles):
``ProfileName``. In the command line's public signatures no parameter is a bare
``Any``: a JSON value is named ``JSONValue``.
"""

from __future__ import annotations

import ast
import typing
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _functions(*folders: str) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    yield path.relative_to(ROOT).as_posix(), node


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    a = fn.args
    return [*a.posonlyargs, *a.args, *a.kwonlyargs]


def test_every_profile_parameter_is_typed_by_the_one_alias() -> None:
    found: dict[str, list[str]] = {}
    for where, fn in _functions("car_verify", "analyses"):
        for param in _parameters(fn):
            if param.arg == "profile" and param.annotation is not None:
                shown = ast.unparse(param.annotation)
                found.setdefault(shown, []).append(f"{where}:{fn.lineno}")
    assert set(found) <= {"ProfileLike", "ProfileName"}, found
    assert len(found.get("ProfileLike", [])) >= 20  # the API, the deciders, the plan checks


def test_the_aliases_say_what_they_take() -> None:
    from car_verify.base.config import PROFILES, ProfileName
    from car_verify.semantics import Profile, ProfileLike

    assert typing.get_args(ProfileName) == PROFILES == tuple(p.value for p in Profile)
    assert ProfileLike == "Profile | ProfileName | Semantics | None"


def test_no_public_signature_of_the_command_line_takes_a_bare_any() -> None:
    bare = [
        f"{where}:{fn.lineno} {fn.name}({param.arg})"
        for where, fn in _functions("car_verify/cli")
        if not fn.name.startswith("_") or fn.name == "__init__"
        for param in [*_parameters(fn), *(p for p in (fn.args.vararg, fn.args.kwarg) if p)]
        if param.annotation is not None and ast.unparse(param.annotation) == "Any"
    ]
    assert bare == []
