"""In a grading kernel: every ragkit function counts its own calls.

A task that asks for a piece earns nothing for handing the work to
ragkit's own version of it. To tell, the kernel that runs a student's
notebook imports ragkit through the finder below, which compiles each of
the package's modules with one extra statement at the top of every
function body (after the docstring, on the line of the first statement,
so tracebacks keep the package's line numbers):

    _ragkit_note("<the function's name>")

where `_ragkit_note`, a global the loader gives each module, is `note`,
which adds one to `calls[name]` (0.16 microseconds a call here).
judge_kernel._call compares the counts of the names a judged call must not
reach (the function under test and its twins, twins.TWINS) before and
after the call. The count is part of
the function's code, not of a hook around it, so calling the twin through
an alias, `importlib`, a reloaded module, a renamed code object or a
thread started earlier still counts; and no trace function runs, which
made every judged call about a third slower.

This file is run as source (never imported under its own name): by
kernel_sandbox.py, before the kernel or its zygote imports anything, and
by judge.LOAD in a kernel that did not start in the sandbox. Both call
`install()`, which drops a ragkit imported before it (nothing of the
student's has run then) so that the next import goes through the finder.
A copy of the package under another name counts as well: `fresh()`
(ragkit.reference, public and one line away for a student), a module
loaded by hand from a file in ragkit's folder (`spec_from_file_location`,
a `SourceFileLoader` of its own), and the kernel's private copy that the
judge's swaps bind (judge_kernel._reference_function). install() makes
every SourceFileLoader compile a file of ragkit's folder as Loader does,
and refuses to load one of its cached .pyc files, which hold the package
without the counting. A copy counts under the same names as the package,
so a task's function that reaches its twin through any of them is told
apart the same way; a reference piece the judge swaps in counts under its
own names, which are never the ones the task under test must not reach.

What this cannot see: the student's kernel is theirs, so code that
replaces `note`, empties `calls` or loads the package's source some other
way can hide a call. judge_kernel checks the pieces below are the ones
`install()` made after every judged call (and fails the test with
CountingTurnedOff when not), which catches the plain ways of doing that.
"""
import ast
import importlib.machinery
import os
import sys

NAME = "_ragkit_watch"
PACKAGE = "ragkit"
GLOBAL = "_ragkit_note"  # the name `note` has in each of ragkit's modules
calls: dict = {}  # function name -> how many times a body of that name began
home: list = []  # ragkit's folder (its real path), found by install()


def note(name: str) -> None:
    calls[name] = calls.get(name, 0) + 1


class _Counted(ast.NodeTransformer):
    """Put the counting statement first in every function body."""

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        body = node.body
        first = body[0]
        skip = int(isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                   and isinstance(first.value.value, str) and len(body) > 1)
        where = body[skip]
        statement = ast.Expr(ast.Call(func=ast.Name(GLOBAL, ast.Load()),
                                      args=[ast.Constant(node.name)], keywords=[]))
        for part in ast.walk(statement):
            ast.copy_location(part, where)
        body.insert(skip, statement)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef


class Loader(importlib.machinery.SourceFileLoader):
    """A ragkit module compiled from its source with the counting added
    (never from a cached .pyc, which holds the package without it)."""

    def get_code(self, fullname):
        source = self.get_data(self.path)
        tree = _Counted().visit(ast.parse(source, self.path))
        return compile(tree, self.path, "exec", dont_inherit=True)

    def exec_module(self, module):
        module.__dict__[GLOBAL] = note
        super().exec_module(module)


class Finder:
    """sys.meta_path's first entry: ragkit and its submodules, by Loader."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        if fullname != PACKAGE and not fullname.startswith(PACKAGE + "."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and type(spec.loader) is importlib.machinery.SourceFileLoader:
            spec.loader = Loader(spec.loader.name, spec.loader.path)
        return spec


def ours(path) -> bool:
    """Whether `path` is a file in ragkit's folder, by whatever name."""
    return bool(home) and os.path.dirname(os.path.realpath(path)) == home[0]


_SOURCE = importlib.machinery.SourceFileLoader
_SOURCELESS = importlib.machinery.SourcelessFileLoader


def _plain(cls, name):
    """cls.name as the standard library defines it (this file may run twice)."""
    fn = getattr(cls, name)
    return getattr(fn, "plain", fn)


PLAIN = (_plain(_SOURCE, "get_code"), _plain(_SOURCE, "exec_module"),
         _plain(_SOURCELESS, "get_code"))


def source_get_code(self, fullname):
    """SourceFileLoader.get_code: a file of ragkit's folder as Loader compiles it."""
    if ours(self.path):
        return Loader.get_code(self, fullname)
    return PLAIN[0](self, fullname)


def source_exec_module(self, module):
    """SourceFileLoader.exec_module: a module from ragkit's folder gets `note`."""
    if ours(self.path):
        module.__dict__[GLOBAL] = note
    return PLAIN[1](self, module)


def sourceless_get_code(self, fullname):
    """SourcelessFileLoader.get_code: never ragkit's cached, uncounted code."""
    if ours(self.path):
        raise ImportError("in a grading kernel ragkit loads from its source files, "
                          f"not from {os.path.basename(self.path)}", name=fullname)
    return PLAIN[2](self, fullname)


PATCHES = ((_SOURCE, "get_code", source_get_code),
           (_SOURCE, "exec_module", source_exec_module),
           (_SOURCELESS, "get_code", sourceless_get_code))
for _cls, _name, _fn in PATCHES:
    _fn.plain = _plain(_cls, _name)


def install() -> None:
    """Make this module `_ragkit_watch` and its finder the first on
    sys.meta_path; forget a ragkit imported before (see the docstring)."""
    module = sys.modules[__name__]
    sys.modules[NAME] = module
    if not home:
        spec = importlib.machinery.PathFinder.find_spec(PACKAGE)
        if spec is not None and spec.submodule_search_locations:
            home.append(os.path.realpath(list(spec.submodule_search_locations)[0]))
    for cls, name, fn in PATCHES:
        setattr(cls, name, fn)
    if not any(f is Finder for f in sys.meta_path):
        sys.meta_path.insert(0, Finder)
    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
        loader = getattr(sys.modules[name], "__loader__", None)
        if type(loader) is not Loader:
            del sys.modules[name]
