"""The walk: every command a parsed line runs, by a positive list of node types.

The statements read (anything else is undecided): lists and pipelines, ``!``,
subshells and groups, ``if``, ``while``/``until``, ``for``/``select``, ``case``,
function definitions (their bodies counted as run), simple commands with their
assignments and redirections, ``declare``/``local``/``export``/``readonly``/
``typeset``, ``unset`` and ``[[ ]]``/``[ ]`` with the operators that evaluate no
arithmetic. ``(( ))`` and ``for (( ))`` are undecided unless they hold only
numbers. What each command's program does with its words is the program
table's (:mod:`.programs`, :mod:`.runners`).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ...base.patterns import LazyPattern
from .builtins import TEST_SUBSCRIPTS, test_words_problem
from .calls import XARGS_INPUT, RedirectInfo
from .model import MAX_LINE, MAX_NESTING, Budget, Command, Ctx, Reading, ShellError, Undecided
from .parse import check_heredoc, heredoc_expands, parse
from .programs import names
from .runners import run
from .words import NUMERIC_ARITHMETIC, Scan, Source, Word, assigned_name_problem, heredoc_text

if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = ["Ctx", "Reader", "read_plain"]

#: How deeply the parse tree of one line may nest (subshells in subshells ...).
MAX_TREE_DEPTH = 200
#: The steps a simple command costs besides its words (it is the reader's
#: costliest unit: the budget's steps are kept close to its time).
COMMAND_STEPS = 6
#: How many wrappers one command may pass through (``sudo nice env ... rm``).
MAX_WRAPPERS = 32


WORD_TYPES = frozenset(
    {
        "word",
        "string",
        "raw_string",
        "ansi_c_string",
        "translated_string",
        "concatenation",
        "simple_expansion",
        "expansion",
        "command_substitution",
        "process_substitution",
        "arithmetic_expansion",
        "number",
        "brace_expression",
        "extglob_pattern",
    }
)
#: Statements whose named children are statements (and, for some, words).
_CONTAINERS = frozenset(
    {
        "program",
        "do_group",
        "subshell",
        "if_statement",
        "elif_clause",
        "else_clause",
        "while_statement",
        "negated_command",
        "case_item",
        "case_statement",
    }
)
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
#: ``[[ ]]`` operators that evaluate no arithmetic and no subscript.
_TEST_OPERATORS = names(
    "-a -b -c -d -e -f -g -h -k -p -r -s -t -u -w -x -G -L -N -O -S -z -n -o -nt -ot -ef"
)
_STDIN_FILES = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})
_NULL_FILES = frozenset({"/dev/null", "/dev/zero"})
_OUTPUT_FILES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/fd/1", "/dev/fd/2"})
_SYSTEM_DIRS = ("/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/", "/lib32/")


class Reader:
    """One reading: the commands found and what was undecided (see the package
    docs); :meth:`line` reads a command line into them."""

    def __init__(self, budget: Budget) -> None:
        self.found: list[Command] = []
        self.undecided: list[Undecided] = []
        self.budget = budget
        self.src = Source(b"", budget)
        #: commands (by index in ``found``; -1 for a group) that may write a file
        self.writes: list[int] = []
        #: commands that run what a file holds (a script, a Makefile, ``./x``)
        self.file_runs: list[int] = []
        #: (write, run) pairs where the write is a later stage of the run's pipeline
        self.downstream: set[tuple[int, int]] = set()
        #: git's subcommands that write nothing but run what its configuration
        #: names (core.fsmonitor, core.pager): another git subcommand's write is no
        #: configuration (``git config`` of a command key is undecided apart)
        self.config_runs: list[int] = []
        #: the functions the line defines (their bodies, read again where called)
        self.functions: dict[str, tuple[Node, Source]] = {}
        self._calling: set[str] = set()
        self._called: set[tuple[str, Ctx]] = set()

    def undecide(self, reason: str, program: str | None = None) -> None:
        self.undecided.append(Undecided(reason, program))

    def line(self, text: str, ctx: Ctx, nest: int) -> None:
        if nest > MAX_NESTING:
            raise ShellError(f"strings and substitutions nest more than {MAX_NESTING} deep")
        if len(text) > MAX_LINE:
            raise ShellError(f"a string to run is over {MAX_LINE:,} characters")
        root, src = parse(text.encode("utf-8", "surrogatepass"), self.budget)
        outer = self.src
        self.src = Source(src, self.budget)
        try:
            self.walk(root, ctx, nest, 0)
        finally:
            self.src = outer

    def git_pair(self, write: int, run: int) -> bool:
        """Whether ``run`` is a git subcommand that reads only git's configuration
        and ``write`` another git subcommand's write (the work tree, not it)."""
        return run in self.config_runs and write >= 0 and self.found[write].program == "git"

    def aside(self, text: str, nest: int) -> Reading | None:
        """``text`` read as a command line of its own, apart from this reading (what
        a program might run it as); None when the grammar cannot read it. The
        steps it takes are this reading's."""
        other = Reader(self.budget)
        try:
            other.line(text, Ctx(), nest)
        except ShellError:
            if self.budget.left < 0:
                raise
            return None
        return other.finish()

    def finish(self) -> Reading:
        if any(
            w != r and (w, r) not in self.downstream and not self.git_pair(w, r)
            for r in self.file_runs
            for w in self.writes
        ):
            self.undecide("the line runs a file it may have written first")
        return Reading(tuple(self.found), tuple(dict.fromkeys(self.undecided)))

    # Words --------------------------------------------------------------------

    def word(self, node: Node, ctx: Ctx, nest: int, depth: int) -> Word:
        """Evaluate a word; read the substitutions in it; undecide its problems."""
        scan = Scan()
        word = self.src.word(node, scan)
        self.absorb(scan, ctx, nest, depth)
        return word

    def absorb(self, scan: Scan, ctx: Ctx, nest: int, depth: int) -> None:
        for problem in scan.problems:
            self.undecide(problem)
        for sub in scan.subs:
            self.walk(sub, ctx, nest, depth + 1)

    def assigned(self, name: str | None, value: str | None = None) -> None:
        """A variable the line sets: one bash or a program reads as code is
        undecided; a ``PATH`` set makes any program name a file the line may
        have written."""
        problem = assigned_name_problem(name, value)
        if problem is not None:
            self.undecide(problem)
        if name == "PATH":
            self.file_runs.append(-2)

    # Statements ---------------------------------------------------------------

    def walk(self, node: Node, ctx: Ctx, nest: int, depth: int) -> str | None:
        """Read every command under ``node`` (by :data:`_STATEMENTS`, the positive
        list of node types); a command's output when known."""
        if depth > MAX_TREE_DEPTH:
            raise ShellError("the command line nests too deeply")
        self.budget.spend()
        kind = node.type
        if kind == "command":
            return self.command(node, ctx, nest, depth, [], [])
        step = _STATEMENTS.get(kind)
        if step is not None:
            return step(self, node, ctx, nest, depth)
        if kind in WORD_TYPES:
            self.word(node, ctx, nest, depth)
        elif kind != "comment":
            self.undecide("a construct the reader does not read")
        return None

    def list_(self, node: Node, ctx: Ctx, nest: int, depth: int) -> str | None:
        rights: list[list[Node]] = []
        while node.type == "list":  # left-nested: a && b && c is ((a && b) && c)
            rights.append(node.children[1:])
            node = node.children[0]
            self.budget.spend()
        self.walk(node, ctx, nest, depth + 1)
        for parts in reversed(rights):
            for child in parts:
                if child.is_named:
                    self.walk(child, ctx, nest, depth + 1)
        return None

    def pipeline_(self, node: Node, ctx: Ctx, nest: int, depth: int) -> str | None:
        self.pipeline(node.children, ctx, nest, depth, None, None)
        return None

    def substitution(self, node: Node, ctx: Ctx, nest: int, depth: int) -> str | None:
        if nest >= MAX_NESTING:
            raise ShellError(f"strings and substitutions nest more than {MAX_NESTING} deep")
        text = self.src.text(node)
        if text.startswith("`"):
            self.backquoted(node, text, ctx, nest)
            return None
        for child in node.named_children:  # it inherits the stdin: the pipe, for >(...)
            self.walk(child, ctx, nest + 1, depth + 1)
        return None

    def group(self, node: Node, ctx: Ctx, nest: int, depth: int) -> str | None:
        if node.children and node.children[0].type == "((":
            self.arithmetic(node)
        else:
            self.children(node, ctx, nest, depth)
        return None

    def for_(self, node: Node, ctx: Ctx, nest: int, depth: int) -> str | None:
        variable = node.child_by_field_name("variable")
        self.assigned(self.src.text(variable) if variable is not None else None, None)
        self.children(node, ctx, nest, depth, skip=variable)
        return None

    def c_style_for(self, node: Node, ctx: Ctx, nest: int, depth: int) -> str | None:
        self.arithmetic(node)
        body = node.child_by_field_name("body")
        if body is not None:
            self.walk(body, ctx, nest, depth + 1)
        return None

    def function(self, node: Node, ctx: Ctx, nest: int, depth: int) -> str | None:
        name = node.child_by_field_name("name")
        named = self.src.text(name) if name is not None else None
        self.undecide("a function defined in the line may redefine the program", named)
        body = node.child_by_field_name("body")
        if body is not None:
            if named is not None:
                self.functions[named] = (body, self.src)
            self.walk(body, ctx, nest, depth + 1)  # counted as run, called or not
        return None

    def statements(self, node: Node, ctx: Ctx, nest: int, depth: int) -> str | None:
        self.children(node, ctx, nest, depth)
        return None

    def backquoted(self, node: Node, text: str, ctx: Ctx, nest: int) -> None:
        """A backquoted substitution: bash reads its text again after removing the
        backslash before ``$``, a backquote and a backslash (and ``"`` inside
        double quotes), so a nested one can only be seen that way."""
        quoted = False
        parent = node.parent
        while parent is not None:
            if parent.type == "string":
                quoted = True
                break
            if parent.type in ("command_substitution", "process_substitution", "program"):
                break
            parent = parent.parent
        escapes = r"\\([\\$`\"])" if quoted else r"\\([\\$`])"
        self.line(re.sub(escapes, r"\1", text[1:-1]), ctx, nest + 1)

    def call(self, name: str, ctx: Ctx, nest: int) -> None:
        """A function the line defined, called: its body read again with the call's
        stdin (it may read the pipe it is given)."""
        if name in self._calling or (name, ctx) in self._called:
            return  # recursion, or the same call again: read already
        self._called.add((name, ctx))
        body, src = self.functions[name]
        outer = self.src
        self._calling.add(name)
        self.src = src
        try:
            self.walk(body, ctx, nest + 1, 0)
        finally:
            self.src = outer
            self._calling.discard(name)

    def children(
        self, node: Node, ctx: Ctx, nest: int, depth: int, skip: Node | None = None
    ) -> None:
        for child in node.named_children:
            if skip is not None and child == skip:
                continue
            self.walk(child, ctx, nest, depth + 1)

    def arithmetic(self, node: Node) -> None:
        """``(( ))`` and ``for (( ))``: decided only when they hold numbers alone
        (a name is expanded recursively, and a subscript in its value runs)."""
        inner = "".join(
            self.src.text(c) for c in node.children if c.type not in ("((", "))", "for", "do_group")
        )
        if not NUMERIC_ARITHMETIC.fullmatch(inner):
            self.undecide("arithmetic evaluation (it may run code in array subscripts)")

    def pipeline(
        self,
        stages: Sequence[Node],
        ctx: Ctx,
        nest: int,
        depth: int,
        fed: frozenset[str] | None,
        out: str | None,
    ) -> None:
        """The stages of a pipeline (``|``/``|&`` tokens among them are skipped);
        ``fed``/``out``: what an earlier stage outside ``stages`` sends on."""
        runs_before: list[int] = []  # the files earlier stages run
        for stage in stages:
            if not stage.is_named:
                continue
            if fed is None:
                here = ctx
            elif out is not None:
                here = Ctx(ctx.inputs | fed, "text", out)
            else:
                here = Ctx(ctx.inputs | fed, "unknown")
            start = len(self.found)
            writes, runs = len(self.writes), len(self.file_runs)
            out = self.walk(stage, here, nest, depth + 1)
            fed = (fed or frozenset()) | feeding(self.found[start:])
            # A later stage writes what the earlier ones print (make | tee log):
            # not a file written for them to run.
            self.downstream.update((w, r) for w in self.writes[writes:] for r in runs_before)
            runs_before.extend(self.file_runs[runs:])

    def redirected(self, node: Node, ctx: Ctx, nest: int, depth: int) -> str | None:
        body = node.child_by_field_name("body")
        redirects = node.children_by_field_name("redirect")
        later: list[Node] = []  # what the grammar hangs under a heredoc: the rest of a list
        args: list[Node] = []  # words after a heredoc: more arguments of the command
        for redirect in redirects:
            if redirect.type != "heredoc_redirect":
                continue
            check_heredoc(redirect, self.src.src)
            for i, child in enumerate(redirect.children):
                field = redirect.field_name_for_child(i)
                if child.type == "heredoc_start":
                    continue
                if field == "argument":
                    args.append(child)
                elif (
                    child.is_named
                    and child.type not in ("heredoc_body", "heredoc_end", "comment")
                    and field != "redirect"
                    and child.type not in _REDIRECTS
                    and child.type not in ("file_descriptor",)
                ):
                    later.append(child)
        args.extend(extra for redirect in redirects for extra in redirect_extras(redirect))
        args.sort(key=lambda n: n.start_byte)
        start = len(self.found)
        if body is not None and body.type == "command":
            out = self.command(body, ctx, nest, depth + 1, redirects, args)
        else:
            if args:
                self.undecide("words after a redirection the reader does not place")
            here, fed, writes, _ = self.redirections(redirects, ctx, nest, depth)
            at = len(self.found)
            out = None
            if body is not None:
                out = self.walk(body, replace(here, inputs=here.inputs | fed), nest, depth + 1)
            self.read_output(writes, feeding(self.found[at:]), nest, depth)
            if self.file_writes(redirects):
                self.writes.append(-1)
        fed_on = feeding(self.found[start:])
        for child in later:
            if child.type == "pipeline" and child.children and not child.children[0].is_named:
                self.pipeline(child.children, ctx, nest, depth + 1, fed_on, out)
            else:
                self.walk(child, ctx, nest, depth + 1)
        return None if later else out

    def redirections(
        self, redirects: Sequence[Node], ctx: Ctx, nest: int, depth: int
    ) -> tuple[Ctx, frozenset[str], list[Node], bool]:
        """Read the words of ``redirects``; the stdin they give, the programs whose
        output they feed in, the output process substitutions (``> >(...)``), which
        read what the command writes (for the caller to read), and whether one
        redirects the input of the shell itself (for ``exec``)."""
        here = ctx
        start = len(self.found)
        later: list[Node] = []
        own_input = False
        for redirect in redirects:
            kind = redirect.type
            descriptor = redirect.child_by_field_name("descriptor")
            fd = self.src.text(descriptor) if descriptor is not None else ""
            if kind == "heredoc_redirect":
                check_heredoc(redirect, self.src.src)
                text = self.heredoc(redirect, ctx, nest, depth)
                if fd in ("", "0"):
                    own_input = True
                    here = (
                        Ctx(here.inputs, "unknown")
                        if text is None
                        else Ctx(here.inputs, "text", text)
                    )
            elif kind == "herestring_redirect":
                string = redirect.named_children[-1] if redirect.named_children else None
                word = (
                    self.word(string, ctx, nest, depth) if string is not None else Word.literal("")
                )
                if fd in ("", "0"):
                    own_input = True
                    if word.value is None:
                        here = Ctx(here.inputs, "unknown")
                    else:
                        here = Ctx(here.inputs, "text", word.value + "\n")
            elif kind == "file_redirect":
                operator = next((c.type for c in redirect.children if not c.is_named), "")
                destination = redirect.child_by_field_name("destination")
                writes = operator in (">", ">>", ">|", "&>", "&>>") and fd in ("", "1", "2")
                target: Word | None = None
                extras = {(n.start_byte, n.end_byte) for n in redirect_extras(redirect)}
                for child in redirect.named_children:
                    if child == descriptor or (child.start_byte, child.end_byte) in extras:
                        continue
                    if writes and child == destination and child.type == "process_substitution":
                        later.append(child)
                    elif child.type in WORD_TYPES:
                        word = self.word(child, ctx, nest, depth)
                        if child == destination:
                            target = word
                    else:
                        self.undecide("a redirection the reader does not read")
                if fd in ("", "0") and operator in ("<", "<>", "<&", "<&-"):
                    own_input = True
                    here = Ctx(here.inputs, self.input_kind(operator, destination, target))
            else:
                self.undecide("a redirection the reader does not read")
        return here, feeding(self.found[start:]), later, own_input

    def input_kind(self, operator: str, destination: Node | None, target: Word | None) -> str:
        if operator == "<&-":
            return "null"
        if operator == "<&" or destination is None or target is None:
            return "unknown"
        if destination.type == "process_substitution" or target.value is None:
            return "unknown"
        path = target.value
        if path in _NULL_FILES:
            return "null"
        if path.startswith(("/dev/", "/proc/")):
            return "unknown"
        return "file"

    def file_writes(self, redirects: Iterable[Node]) -> bool:
        """Whether ``redirects`` may write a file the line could run later."""
        for redirect in redirects:
            if redirect.type != "file_redirect":
                continue
            operator = next((c.type for c in redirect.children if not c.is_named), "")
            if operator not in (">", ">>", ">|", "&>", "&>>", "<>"):
                continue
            destination = redirect.child_by_field_name("destination")
            if destination is None or destination.type == "process_substitution":
                continue
            if self.src.text(destination) not in _OUTPUT_FILES:
                return True
        return False

    def heredoc(self, redirect: Node, ctx: Ctx, nest: int, depth: int) -> str | None:
        """A here-document's text as the command reads it; None when it expands a
        variable or a substitution (whose commands are read)."""
        body = next((c for c in redirect.children if c.type == "heredoc_body"), None)
        if body is None:
            return ""
        strip = any(c.type == "<<-" for c in redirect.children)
        raw = self.src.text(body)
        if strip:
            raw = re.sub(r"(?m)^\t+", "", raw)
        if not heredoc_expands(body, self.src.src):
            return raw
        computed = False
        covered: list[tuple[int, int]] = []
        for child in body.named_children:
            if child.type == "heredoc_content":
                continue
            computed = True
            covered.append((child.start_byte, child.end_byte))
            if child.type in WORD_TYPES:
                self.word(child, ctx, nest, depth)
            else:
                self.undecide("a here-document expansion the reader does not read")
        # What the grammar left as text: a backquote, or a $ that starts an
        # expansion, would still be expanded by bash.
        text = self.src.src[body.start_byte : body.end_byte]
        i = 0
        while i < len(text):
            at = body.start_byte + i
            if any(s <= at < e for s, e in covered):
                i += 1
                continue
            c = text[i : i + 1]
            if c == b"\\":
                i += 2
                continue
            if c == b"`" or (
                c == b"$" and re.match(rb"[A-Za-z0-9_{(\[@*#?$!-]", text[i + 1 : i + 2])
            ):
                self.undecide("a here-document expansion the reader does not read")
                return None
            i += 1
        return None if computed else heredoc_text(raw, True)

    def read_output(self, subs: Iterable[Node], fed: frozenset[str], nest: int, depth: int) -> None:
        """Read output process substitutions, fed what ``fed`` writes."""
        for sub in subs:
            self.walk(sub, Ctx(fed, "unknown"), nest, depth + 1)

    # Assignments and declarations ---------------------------------------------

    def assignment(self, node: Node, ctx: Ctx, nest: int, depth: int) -> None:
        name = node.child_by_field_name("name")
        if name is None:
            name = node.named_children[0] if node.named_children else None
        if name is not None and name.type == "subscript":
            self.undecide_subscript(name, ctx, nest, depth)
        elif name is not None:
            value = node.child_by_field_name("value")
            given = "" if value is None else self.src.plain_text(value)
            self.assigned(self.src.text(name), given)
        value = node.child_by_field_name("value")
        if value is None:
            return
        if value.type == "array":
            for element in value.named_children:
                if self.src.text(element).startswith("[") and not re.match(
                    r"\[[0-9]+\]=", self.src.text(element)
                ):
                    self.undecide("an array subscript (arithmetic that may run code)")
                self.word(element, ctx, nest, depth)
        elif value.type in WORD_TYPES:
            self.word(value, ctx, nest, depth)
        else:
            self.undecide("an assignment the reader does not read")

    def undecide_subscript(self, node: Node, ctx: Ctx, nest: int, depth: int) -> None:
        index = node.child_by_field_name("index")
        text = self.src.text(index) if index is not None else ""
        if not re.fullmatch(r"[0-9]+", text):
            self.undecide("an array subscript (arithmetic that may run code)")
        name = node.child_by_field_name("name")
        self.assigned(self.src.text(name) if name is not None else None)

    def declaration(self, node: Node, ctx: Ctx, nest: int, depth: int) -> None:
        """``declare``, ``typeset``, ``local``, ``export``, ``readonly``: an option that
        makes assignments arithmetic (``-i``) or indirect (``-n``), a computed word
        (it may be either), or a compound value in a string is undecided."""
        arrays = False
        for child in node.named_children:
            if child.type == "variable_assignment":
                self.assignment(child, ctx, nest, depth)
                value = child.child_by_field_name("value")
                if value is not None and value.type != "array":
                    got = self.src.plain_text(value)
                    if (got is None and arrays) or (got or "").startswith("("):
                        self.undecide("a declaration's value may be read as an array")
            elif child.type == "variable_name":
                self.assigned(self.src.text(child), "0")
            elif child.type == "subscript":
                self.undecide_subscript(child, ctx, nest, depth)
            elif child.type in WORD_TYPES:
                given = self.word(child, ctx, nest, depth).value
                if given is None:
                    self.undecide("a declaration's option or name is computed")
                elif given.startswith(("-", "+")):
                    if set(given[1:]) & set("in"):
                        self.undecide("a declaration that evaluates or redirects names (-i, -n)")
                    arrays = arrays or bool(set(given[1:]) & set("aA"))
                else:
                    name, eq, assigned = given.partition("=")
                    self.assigned(name, assigned if eq else "0")
            else:
                self.undecide("a declaration the reader does not read")

    def unset(self, node: Node, ctx: Ctx, nest: int, depth: int) -> None:
        for child in node.named_children:
            if child.type == "variable_name":
                continue
            if child.type in WORD_TYPES:
                word = self.word(child, ctx, nest, depth)
                value = word.value
                if value is None or ("[" in value and not re.search(r"\[([0-9]+|@|\*)\]$", value)):
                    self.undecide("unset of a computed name or a subscript")
            elif child.type == "subscript":
                self.undecide_subscript(child, ctx, nest, depth)
            else:
                self.undecide("an unset the reader does not read")

    def test(self, node: Node, ctx: Ctx, nest: int, depth: int) -> None:
        """``[[ ]]`` and ``[ ]``: their operators must evaluate no arithmetic and no
        subscript (``-eq`` in ``[[ ]]``, ``-v``, ``-R``)."""
        double = bool(node.children) and node.children[0].type == "[["
        items: list[Word] = []
        self.test_items(node, ctx, nest, depth, double, items)
        problem = None if double else test_words_problem(items)
        if problem is not None:
            self.undecide(problem)

    def test_items(
        self, node: Node, ctx: Ctx, nest: int, depth: int, double: bool, items: list[Word]
    ) -> None:
        """A test's words and operators in order (into ``items``), checked."""
        if depth > MAX_TREE_DEPTH:
            raise ShellError("the command line nests too deeply")
        for child in node.children:
            self.budget.spend()
            kind = child.type
            if kind in ("[", "]", "[[", "]]"):
                continue
            if kind in ("binary_expression", "unary_expression", "parenthesized_expression"):
                self.test_items(child, ctx, nest, depth + 1, double, items)
            elif kind == "test_operator":
                operator = self.src.text(child)
                if operator not in _TEST_OPERATORS and (double or operator in TEST_SUBSCRIPTS):
                    self.undecide("a test that evaluates arithmetic or a subscript")
                items.append(Word.literal(operator))
            elif not child.is_named:
                if kind not in _TEST_TOKENS:
                    self.undecide("a test operator the reader does not read")
                items.append(Word.literal(kind))
            elif kind == "regex":
                if re.search(r"[$`]", self.src.text(child)):
                    self.undecide("a pattern with an expansion the reader does not read")
            elif kind in WORD_TYPES:
                items.append(self.word(child, ctx, nest, depth))
            else:
                self.undecide("a test the reader does not read")

    # Commands -----------------------------------------------------------------

    def command(
        self,
        node: Node,
        ctx: Ctx,
        nest: int,
        depth: int,
        redirects: Sequence[Node],
        more_args: Sequence[Node],
    ) -> str | None:
        name = node.child_by_field_name("name")
        own_redirects = [c for c in node.named_children if c.type in _REDIRECTS]
        parts = self.command_parts(
            node, name, own_redirects, redirects, more_args, ctx, nest, depth
        )
        all_redirects = [*own_redirects, *redirects]
        if name is None:
            here, _, outputs, _ = self.redirections(all_redirects, ctx, nest, depth)
            self.read_output(outputs, ctx.inputs, nest, depth)
            if self.file_writes(all_redirects):
                self.writes.append(-1)
            return None
        start = len(self.found)
        words, writes = self.command_words(parts, ctx, nest, depth)
        fed = feeding(self.found[start:])
        if all_redirects:
            here, more, redirected, own_input = self.redirections(all_redirects, ctx, nest, depth)
            here = Ctx(here.inputs | fed | more, here.stdin, here.text)
            info = RedirectInfo(own_input=own_input, writes=self.file_writes(all_redirects))
        else:
            here = Ctx(ctx.inputs | fed, ctx.stdin, ctx.text) if fed else ctx
            redirected, info = [], _NO_REDIRECTS
        first = len(self.found)
        out = self.simple(words, here, nest, 0, info)
        if writes or redirected:
            self.read_output([*writes, *redirected], feeding(self.found[first:]), nest, depth)
        return out

    def command_parts(
        self,
        node: Node,
        name: Node | None,
        own_redirects: Sequence[Node],
        redirects: Sequence[Node],
        more_args: Sequence[Node],
        ctx: Ctx,
        nest: int,
        depth: int,
    ) -> list[Node]:
        """A command's words in order (its name first; the words the grammar hangs
        on a redirection or a heredoc among them), its assignments read; a part
        the grammar gives that is none of these, or two words it splits where
        bash sees one, undecided."""
        children = node.named_children
        arguments = node.children_by_field_name("argument")
        if own_redirects or more_args:
            arguments = [
                *arguments,
                *(extra for redirect in own_redirects for extra in redirect_extras(redirect)),
                *more_args,
            ]
            arguments.sort(key=lambda n: n.start_byte)
        if len(children) != len(arguments) + (name is not None):
            placed = {(c.start_byte, c.end_byte) for c in arguments}
            if name is not None:
                placed.add((name.start_byte, name.end_byte))
            for child in children:
                if child.type == "variable_assignment":
                    self.assignment(child, ctx, nest, depth)
                elif (
                    child.type not in _REDIRECTS
                    and (child.start_byte, child.end_byte) not in placed
                ):
                    self.undecide("a part of a command the reader does not read")
        parts = [name, *arguments] if name is not None else list(arguments)
        for before, after in itertools.pairwise(parts):
            if before.end_byte == after.start_byte:
                self.undecide("a word the shell parser splits in two")
        starts = {r.start_byte for r in [*own_redirects, *redirects]}
        for part in parts:
            if part.end_byte in starts and _NAMED_FD().fullmatch(self.src.text(part)):
                raise ShellError("a {name}> redirection the shell parser reads as a word")
        return parts

    def command_words(
        self, parts: Sequence[Node], ctx: Ctx, nest: int, depth: int
    ) -> tuple[list[Word], list[Node]]:
        """The words of a command, their substitutions read (they run before it),
        and its output process substitutions (``>(...)``, which read what it
        writes: for the caller to read)."""
        writes: list[Node] = []
        words: list[Word] = []
        for part in parts:
            scan = Scan()
            words.append(self.src.word(part, scan))
            for problem in scan.problems:
                self.undecide(problem)
            for sub in scan.subs:
                if sub.type == "process_substitution" and sub.children[0].type == ">(":
                    writes.append(sub)
                else:
                    self.walk(sub, ctx, nest, depth + 1)
        return words, writes

    def simple(
        self,
        words: Sequence[Word],
        ctx: Ctx,
        nest: int,
        wrapped: int,
        info: RedirectInfo | None = None,
    ) -> str | None:
        """Read one simple command given as words; its output when known."""
        if not words:
            return None
        if wrapped > MAX_WRAPPERS:
            raise ShellError(f"a command passes through more than {MAX_WRAPPERS} wrappers")
        self.budget.spend(COMMAND_STEPS + len(words))
        program = program_name(words[0])
        if program in _RESERVED and words[0].text == program:
            self.undecide("a reserved word where the shell parser expects a command")
            return None
        if program is None:
            why = "a pattern" if words[0].pattern else words[0].why
            self.undecide(f"{why} names the program")
            return None
        args = words[1:]
        flags, computed = command_flags(args)
        values = [w.value for w in words]
        argv = None if any(v is None for v in values) else tuple(v for v in values if v is not None)
        written = tuple(w.text for w in words if w.text or w.why != XARGS_INPUT)
        index = len(self.found)
        self.found.append(Command(program, flags, written, ctx.inputs, argv))
        if computed:
            self.undecide("a computed word may be a flag", program)
        redirect = info or _NO_REDIRECTS
        if redirect.writes:
            self.writes.append(index)
        word0 = words[0].value or words[0].tail
        if "/" in word0 and not word0.startswith(_SYSTEM_DIRS):
            self.file_runs.append(index)
            self.writes.append(index)
        elif program in self.functions and words[0].value == program:
            self.call(program, ctx, nest)
        return run(self, program, args, ctx, nest, wrapped, index, redirect)


#: Bash's reserved words (``time`` and ``coproc`` are read as programs): one as a
#: command's name means the grammar did not see it as bash would (``! ! rm``).
_RESERVED = frozenset(
    [
        "!",
        "{",
        "}",
        "[[",
        "]]",
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "do",
        "done",
        "case",
        "esac",
        "while",
        "until",
        "for",
        "in",
        "select",
        "function",
    ]
)
_Step = Callable[[Reader, "Node", Ctx, int, int], "str | None"]
#: The statements read, by node type (a ``command`` is read apart, a word is
#: evaluated, a comment skipped; any other type is undecided).
_STATEMENTS: dict[str, _Step] = {
    "redirected_statement": Reader.redirected,
    "pipeline": Reader.pipeline_,
    "list": Reader.list_,
    "command_substitution": Reader.substitution,
    "process_substitution": Reader.substitution,
    **{kind: Reader.statements for kind in _CONTAINERS},
    "compound_statement": Reader.group,
    "for_statement": Reader.for_,
    "c_style_for_statement": Reader.c_style_for,
    "function_definition": Reader.function,
    "variable_assignments": Reader.statements,
    "variable_assignment": Reader.assignment,
    "declaration_command": Reader.declaration,
    "unset_command": Reader.unset,
    "test_command": Reader.test,
}
_TEST_TOKENS = frozenset({"&&", "||", "!", "(", ")", "==", "=", "!=", "<", ">", "=~", "-a", "-o"})


def redirect_extras(redirect: Node) -> list[Node]:
    """The words the grammar hangs on a redirection after its target (``rm
    >/dev/null -rf x``): bash takes them as the command's arguments."""
    if redirect.type != "file_redirect":
        return []
    destinations = redirect.children_by_field_name("destination")
    return list(destinations[1:])


_NO_REDIRECTS = RedirectInfo()
_NAMED_FD = LazyPattern(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
_NOTHING: frozenset[str] = frozenset()


def feeding(found: Sequence[Command]) -> frozenset[str]:
    """The programs whose output leaves these commands: theirs and their inputs."""
    if not found:
        return _NOTHING
    out: set[str] = set()
    for c in found:
        out.add(c.program)
        out.update(c.inputs)
    return frozenset(out)


def program_name(word: Word) -> str | None:
    """The program a word names (its base name), or None when the shell computes it;
    ``$HOME/bin/rm`` names ``rm``."""
    if word.pattern:
        return None
    value = word.value
    if value is not None:
        return (value.rsplit("/", 1)[-1] if "/" in value else value) or None
    if "/" in word.tail and word.tail.rsplit("/", 1)[1]:
        return word.tail.rsplit("/", 1)[1]
    return None


def command_flags(args: Sequence[Word]) -> tuple[frozenset[str], bool]:
    """The flags in ``args`` (none after ``--``); whether a computed word may be one."""
    flags: set[str] = set()
    computed = False
    for word in args:
        value = word.value
        if value is None:
            if word.may_be_flag:
                computed = True
                prefix = word.prefix
                if prefix.startswith("-") and not prefix.startswith("--"):
                    flags.update(f"-{c}" for c in prefix[1:])
            continue
        if value == "--":
            break
        if value.startswith("--"):
            flags.add(value.split("=", 1)[0])
        elif value.startswith("-") and len(value) > 1:
            flags.update(f"-{c}" for c in value[1:] if c != "-")
    return frozenset(flags), computed


def read_plain(line: str, budget: Budget | None = None) -> Reading:
    """Read ``line`` in this process (see the package docs)."""
    if len(line) > MAX_LINE:
        raise ShellError(f"the command line is over {MAX_LINE:,} characters")
    reader = Reader(budget or Budget())
    try:
        reader.line(line, Ctx(), 0)
    except RecursionError:  # each re-read string may nest again: bounded as a whole
        raise ShellError("the command line nests too deeply") from None
    return reader.finish()
