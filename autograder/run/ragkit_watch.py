"""In a grading kernel: every ragkit function counts its own calls.

A task that asks for a piece earns nothing for handing the work to
ragkit's own version of it. To tell, install() patches the standard source
loader of the kernel that runs a student's notebook so that every file in
ragkit's folder compiles with one extra statement at the top of every
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
student's has run then) so that the next import is counted. The file
decides, not the module's name, so a copy of the package under another
name counts as well: `fresh()` (ragkit.reference, public and one line
away for a student), a module loaded by hand from a file in ragkit's
folder (`spec_from_file_location`, a `SourceFileLoader` of its own, a
symlink), and the kernel's private copy that the judge's swaps bind
(judge_kernel._reference_function). The folder's cached .pyc files, which
hold the package without the counting, are refused. A copy counts under the same names as the package,
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
    """SourceFileLoader.get_code: a file of ragkit's folder compiled from its
    source with the counting added (never from a cached .pyc, which holds
    the package without it)."""
    if ours(self.path):
        tree = _Counted().visit(ast.parse(self.get_data(self.path), self.path))
        return compile(tree, self.path, "exec", dont_inherit=True)
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
    """Make this module `_ragkit_watch`, patch the standard file loaders,
    and forget a ragkit imported before (see the docstring)."""
    module = sys.modules[__name__]
    sys.modules[NAME] = module
    if not home:
        spec = importlib.machinery.PathFinder.find_spec(PACKAGE)
        if spec is not None and spec.submodule_search_locations:
            home.append(os.path.realpath(list(spec.submodule_search_locations)[0]))
    for cls, name, fn in PATCHES:
        setattr(cls, name, fn)
    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
        if getattr(sys.modules[name], GLOBAL, None) is not note:
            del sys.modules[name]
