"""The line parsed with tree-sitter's bash grammar, as bash would split it.

Two steps stand between the text and the grammar:

* every byte outside ASCII, and every control character but a tab and a newline
  (bash takes a carriage return as part of a word, where the grammar takes it as
  a blank), is given to the grammar as ``x`` (the text is read back
  from the line itself, at the same offsets). The grammar's C scanner reads past
  its buffer on some non-ASCII input and crashes the process (tree-sitter 0.26.1
  with tree-sitter-bash 0.25.1, about one line in 5,000 of random text); on ASCII
  it was not seen to in 120,000. Bash takes such bytes as word characters, which
  ``x`` is too, and ``x`` is in no reserved word; where bash would differ (a
  variable name or an assignment with such a byte, which bash does not accept)
  the grammar sees more expansions and more assignments than bash, which only
  leaves more of the line undecided. A heredoc delimiter holding one is refused,
  since two different delimiters would look alike;
* a backslash-newline is removed where bash removes it (everywhere but in single
  quotes, ``$'...'``, comments and here-documents) and the line parsed again: the
  grammar would split a word there (``r\\<newline>m`` is ``rm``). One in an
  unquoted here-document's body is refused: bash joins the lines before it looks
  for the delimiter.

A line the grammar cannot read without an error, or with a NUL byte (which no
``bash -c`` line can hold), raises :class:`ShellError`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

from .model import Budget, ShellError

if TYPE_CHECKING:
    from types import ModuleType

    from tree_sitter import Language, Node, Parser

__all__ = ["check_heredoc", "heredoc_expands", "language", "parse"]

#: Node types whose text bash takes literally: a backslash-newline in them stays.
_LITERAL_TEXT = frozenset({"raw_string", "comment", "heredoc_body", "ansi_c_string"})
_CONTINUATION = re.compile(rb"\\+\n")
# Bytes bash takes as word characters and the grammar may take as blanks (a
# carriage return, a form feed) or not read: given to the grammar as "x" too.
_TO_X = re.compile(rb"[\x80-\xff\x01-\x08\x0b-\x1f\x7f]")


@lru_cache(maxsize=1)
def language() -> Language:
    import tree_sitter

    return tree_sitter.Language(bash_binding().language())


def bash_binding_plain() -> ModuleType:
    """The bash grammar's compiled module, imported with its package."""
    import importlib

    return importlib.import_module("tree_sitter_bash._binding")


def bash_binding() -> ModuleType:
    """:func:`bash_binding_plain`, without running the package's ``__init__`` where
    the compiled module can be found beside it: that imports ``importlib.resources``
    (for a query file no reading uses), which cost the hook's start about 5 ms. The
    module is loaded under its own name, so a later import of the package takes it
    as it is. ``tests/test_hook_startup.py`` holds the two to the same grammar."""
    import sys

    name = "tree_sitter_bash._binding"
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    import importlib.machinery
    import importlib.util
    import os

    package = importlib.util.find_spec("tree_sitter_bash")
    for folder in (package and package.submodule_search_locations) or ():
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "_binding" + suffix)
            if not os.path.isfile(path):
                continue
            loader = importlib.machinery.ExtensionFileLoader(name, path)
            spec = importlib.util.spec_from_file_location(name, path, loader=loader)
            if spec is None:
                continue
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
            return module
    return bash_binding_plain()


def _parser() -> Parser:
    """A fresh parser for each parse (about a microsecond): no state is carried from
    one line to the next, and threads never share one."""
    import tree_sitter

    return tree_sitter.Parser(language())


def _grammar_parse(src: bytes, budget: Budget) -> Node:
    budget.spend(len(src))
    return _parser().parse(_TO_X.sub(b"x", src)).root_node


def parse(src: bytes, budget: Budget) -> tuple[Node, bytes]:
    """The parse tree of ``src`` and the text its offsets point into (``src`` with
    line continuations removed)."""
    if b"\0" in src:
        raise ShellError("the command line holds a NUL byte, which no shell line can")
    root = _grammar_parse(src, budget)
    cut = _continuations(root, src)
    if cut:
        pieces, at = [], 0
        for k in cut:
            pieces.append(src[at:k])
            at = k + 2
        pieces.append(src[at:])
        src = b"".join(pieces)
        root = _grammar_parse(src, budget)
        if _continuations(root, src):
            raise ShellError("line continuations the shell parser cannot place")
    if root.has_error:
        raise ShellError("the command line has a syntax error the shell parser cannot read")
    return root, src


def _continuations(root: Node, src: bytes) -> list[int]:
    """Where a backslash-newline that bash removes starts."""
    cut = []
    for m in _CONTINUATION.finditer(src):
        if (m.end() - m.start() - 1) % 2 == 0:
            continue  # an even run of backslashes: the last one is quoted
        at = m.end() - 2
        holder = _literal_holder(root, at)
        if holder is None:
            cut.append(at)
        elif holder.type == "heredoc_body" and _expands(holder, src):
            raise ShellError("a line continuation in a here-document is not read")
    return cut


def _literal_holder(root: Node, at: int) -> Node | None:
    node: Node | None = root.descendant_for_byte_range(at, at + 1)
    while node is not None:
        if node.type in _LITERAL_TEXT:
            return node
        node = node.parent
    return None


def _expands(body: Node, src: bytes) -> bool:
    """Whether a here-document's body is expanded: its delimiter is unquoted."""
    redirect = body.parent
    start = None
    if redirect is not None:
        start = next((c for c in redirect.children if c.type == "heredoc_start"), None)
    if start is None:
        return True
    return not re.search(rb"['\"\\]", src[start.start_byte : start.end_byte])


def heredoc_expands(body: Node, src: bytes) -> bool:
    """Whether ``body`` (a ``heredoc_body`` node) is expanded as bash expands it."""
    return _expands(body, src)


def check_heredoc(redirect: Node, src: bytes) -> None:
    """Refuse a here-document (a ``heredoc_redirect`` node) the grammar reads
    otherwise than bash: a delimiter ``<<E;`` (the grammar takes ``E;``, bash ends
    it at ``;``), one outside ASCII (it may look like another one to the grammar),
    or a body the grammar took words of (it does, when the body's first line
    starts with a backslash): what stands between the operator and the body must
    fit on the operator's line."""
    start = next((c for c in redirect.children if c.type == "heredoc_start"), None)
    if start is None:
        raise ShellError("a here-document without a delimiter")
    text = src[start.start_byte : start.end_byte]
    unquoted = re.sub(rb"'[^']*'|\"[^\"]*\"|\\.", b"", text)
    if re.search(rb"[;&|()<>\s]", unquoted):
        raise ShellError("a heredoc delimiter the shell parser cannot read")
    if _TO_X.search(text):
        raise ShellError("a heredoc delimiter outside printable ASCII is not read")
    body = next((c for c in redirect.children if c.type == "heredoc_body"), None)
    if body is None:
        return
    if (
        b"\n" in src[start.end_byte : body.start_byte]
        and src[body.start_byte - 1 : body.start_byte] != b"\n"
    ):
        raise ShellError("a here-document the shell parser misreads")
    for child in redirect.children:
        if (
            start.end_byte <= child.start_byte < body.start_byte
            and b"\n" in src[start.end_byte : child.end_byte]
        ):
            raise ShellError("a here-document the shell parser misreads")
