"""The student's side of the judge: answers as plain data, nothing more.

grade.py runs a notebook's graded test cells outside the student's kernel
(autograder/run/judge.py). When a test needs something of the student's, a
function to call or a value to read, the judge asks the kernel through this
module, which it loads into the kernel as `_rag_judge` before the first cell.
Whatever comes back crosses as JSON made of plain types (`to_plain`), so an
object that lies about equality, a hook in the kernel or a patched reference
cannot reach the judge's verdict: at worst a student's code sends wrong
answers, and wrong answers fail.

The same file gives the judge its half of the wire format (`to_plain` and
`from_plain` are symmetric), so the two never drift apart.

The kernel's ragkit counts the calls of each of its functions
(ragkit_watch.py). If a ragkit function with the name of the piece the task
asks for begins during a judged call (`maxsim` calling
`ragkit.rerank.maxsim`, however it was reached), the call reports
`delegated` and the judge fails the test.
"""
from __future__ import annotations

import array
import base64
import dataclasses
import json
import math
import sys

MAX_DEPTH = 60
_SCALARS = (type(None), bool, int, float, str)
# what one answer may hold, checked before anything is built from it: the
# JSON text, the values in it, and the memory one array (or column of
# strings) may take once decoded
MAX_BYTES = 32 * 2 ** 20
MAX_VALUES = 2_000_000
MAX_ARRAY_BYTES = 128 * 2 ** 20
# a batch of answers (_calls) stops growing here; the judge asks for the rest
BATCH_BYTES = MAX_BYTES // 4
# numpy dtypes an array may cross in (raw little-endian bytes), and pandas
# dtypes an index or a column may name: anything else crosses as objects
ARRAY_DTYPES = frozenset({"<f8", "<f4", "<f2", "<i8", "<i4", "<i2", "|i1",
                          "<u8", "<u4", "<u2", "|u1", "|b1"})
PANDAS_DTYPES = frozenset({"int64", "int32", "float64", "float32", "bool", "object",
                           "str", "string", "Int64", "Int32", "Float64", "boolean"})
# the value types of ragkit that cross as themselves, by the name they cross
# under; the module and class to build are read from this table, never from
# the answer (a name that is not here is refused)
VALUE_TYPES = {
    "ragkit.answer:Answer": ("ragkit.answer", "Answer"),
    "ragkit.answer:Match": ("ragkit.answer", "Match"),
    "ragkit.chunking:Chunk": ("ragkit.chunking", "Chunk"),
    "ragkit.corpus:Document": ("ragkit.corpus", "Document"),
    "ragkit.corpus:Question": ("ragkit.corpus", "Question"),
    "ragkit.corpus:Unanswerable": ("ragkit.corpus", "Unanswerable"),
    "ragkit.squad:SquadQuestion": ("ragkit.squad", "SquadQuestion"),
}
# the reference classes the judge sends as a recipe (`$rkobj`: the class's
# name and its constructor's arguments, as data) instead of as a handle the
# kernel would call back for every use: the kernel builds one from its own
# private copy of ragkit (_build). Only classes whose state is a function of
# those arguments alone belong here (judge.RECIPES reads them back from an
# object, and says why a copy the student spoils costs only the student)
REBUILT = frozenset({"ragkit.retrieval:Retriever"})
ASK = "\x00rag-judge\x00"  # an input() prompt that carries a callback
RESULT = "\x00rag-judge-result\x00"  # one that answers the judge's nested request


class NotPlain(TypeError):
    """A value that cannot cross to the judge as plain data."""


class TooLarge(ValueError):
    """JSON text over MAX_BYTES: neither side sends it, and neither reads it."""


def too_large(text: str) -> bool:
    return len(text) > MAX_BYTES


# the exceptions an error crosses back as, by the name of its built-in base;
# the ones that would stop the receiver itself arrive as RuntimeError
EXCEPTIONS = {name: kind for name, kind in vars(__import__("builtins")).items()
              if isinstance(kind, type) and issubclass(kind, BaseException)
              and kind not in (KeyboardInterrupt, SystemExit, GeneratorExit)}


def _qualified(cls) -> str | None:
    """'module.Class' for a class of ragkit (or of a fresh() copy of it)."""
    module = getattr(cls, "__module__", "") or ""
    if module.startswith("_ragkit_reference_"):
        module = "ragkit" + module[module.index(".") :] if "." in module else "ragkit"
    if module == "ragkit" or module.startswith("ragkit."):
        return f"{module}:{cls.__qualname__}"
    return None


def to_plain(value, handle=None, depth: int = 0, known=None):
    """`value` as JSON-ready plain data; `handle(obj)` names what is not data
    (a function, an index object) and may raise NotPlain instead; `known(obj)`
    may name an object first (one that crossed before goes back as itself)."""
    if depth > MAX_DEPTH:
        raise NotPlain("the answer is nested too deeply")
    again = lambda v: to_plain(v, handle, depth + 1, known)  # noqa: E731
    t = type(value)
    if value is None or t is bool:
        return value
    if known is not None and t not in (int, float, str):
        named = known(value)
        if named is not None:
            return named
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        number = float.__float__(value)
        return number if math.isfinite(number) else {"$float": repr(number)}
    if isinstance(value, str):
        return str.__str__(value)
    np = sys.modules.get("numpy")
    pd = sys.modules.get("pandas")
    if np is not None:
        if isinstance(value, np.ndarray):
            arr = np.asarray(value)
            if arr.dtype.kind in "biuf":
                wire_type = arr.dtype.newbyteorder("<") if arr.dtype.byteorder == ">" \
                    else arr.dtype
                if wire_type.str not in ARRAY_DTYPES:
                    raise NotPlain(f"a numpy array of dtype {arr.dtype} is not plain data")
                raw = np.ascontiguousarray(arr, dtype=wire_type).tobytes()
                return {"$nd": wire_type.str, "shape": [int(n) for n in arr.shape],
                        "b64": base64.b64encode(raw).decode()}
            if arr.dtype.kind in "UO":
                return {"$nd": "O", "shape": list(arr.shape),
                        "data": [again(x) for x in arr.ravel().tolist()]}
            raise NotPlain(f"a numpy array of dtype {arr.dtype} is not plain data")
        if isinstance(value, np.generic):
            if value.dtype.kind not in "biufU":
                raise NotPlain(f"a numpy {value.dtype} is not plain data")
            return {"$np": value.dtype.str, "v": again(value.item())}
    if pd is not None:
        if isinstance(value, pd.DataFrame):
            return {"$df": {"columns": again(value.columns), "index": again(value.index),
                            "data": [again(value.iloc[:, i]) for i in range(value.shape[1])]}}
        if isinstance(value, pd.Series):
            return {"$series": {"values": again(list(value.to_numpy().tolist())),
                                "dtype": _pandas_dtype(value.dtype),
                                "index": again(value.index), "name": again(value.name)}}
        if isinstance(value, pd.MultiIndex):
            return {"$mindex": {"tuples": again(list(value)), "names": again(list(value.names))}}
        if isinstance(value, pd.Index):
            return {"$index": {"values": again(value.tolist()),
                               "dtype": _pandas_dtype(value.dtype), "name": again(value.name)}}
    if isinstance(value, BaseException):
        return {"$exc": _exception(value)}
    name = _qualified(t)
    if name and dataclasses.is_dataclass(value):
        return {"$obj": name, "fields": {f.name: again(getattr(value, f.name))
                                         for f in dataclasses.fields(value)}}
    if name and isinstance(value, tuple) and hasattr(t, "_fields"):
        return {"$obj": name, "fields": {f: again(v) for f, v in
                                         zip(t._fields, tuple.__iter__(value))}}
    # a subclass of a container crosses as the plain container, read through
    # the base type's own methods (never the subclass's)
    if isinstance(value, dict):
        return {"$dict": [[again(k), again(v)] for k, v in dict.items(value)]}
    if isinstance(value, list):
        items = list(list.__iter__(value))
        if len(items) > 8 and all(type(v) is float for v in items):
            # a row of numbers: its bytes, not 640 decimal strings
            return {"$f8": base64.b64encode(array.array("d", items).tobytes()).decode()}
        return [again(v) for v in items]
    if isinstance(value, tuple):
        return {"$tuple": [again(v) for v in tuple.__iter__(value)]}
    if isinstance(value, (set, frozenset)):
        kind = "$frozenset" if isinstance(value, frozenset) else "$set"
        items = [again(v) for v in (frozenset.__iter__(value) if kind == "$frozenset"
                                    else set.__iter__(value))]
        return {kind: sorted(items, key=lambda x: json.dumps(x, sort_keys=True))}
    if handle is None:
        raise NotPlain(f"a {t.__name__} is not plain data")
    return handle(value)


def _exception(err: BaseException) -> dict:
    base = next((c for c in type(err).__mro__
                 if c.__module__ == "builtins" and issubclass(c, BaseException)), Exception)
    try:
        message = BaseException.__str__(err)
    except Exception:  # noqa: BLE001 (anything a hostile exception does)
        message = ""
    return {"name": str.__str__(type(err).__name__)[:100], "base": base.__name__,
            "message": str.__str__(message)[:2000]}


def _pandas_dtype(dtype) -> str:
    """The name a pandas dtype crosses under: one of PANDAS_DTYPES."""
    name = str(dtype)
    return name if name in PANDAS_DTYPES else "object"


class Decoder:
    """Builds the values an answer describes, and nothing else.

    Plain JSON types, the tagged containers `to_plain` writes, numpy arrays
    of ARRAY_DTYPES, pandas frames with PANDAS_DTYPES and the ragkit value
    types of VALUE_TYPES. A handle (`$ref`, `$jref`, `$rkfn`) goes to
    `resolve`; `on_object(made, jid)` hears of each ragkit value built. Every
    limit is checked before the memory it guards is taken: the number of
    values (MAX_VALUES), the depth (MAX_DEPTH) and the bytes of each array
    (MAX_ARRAY_BYTES). Anything else raises ValueError.

    `kept` (the kernel's, never the judge's) is where a value the judge
    sends once (`$keep`) waits for the next time it is sent (`$again`): a
    container of values that cannot change, so a fresh copy of the kept one
    is the value sent. `build(name, jid, args, kwargs)` (the kernel's, never
    the judge's) makes the object of a recipe (`$rkobj`, REBUILT); without
    it, as in the judge, a recipe is refused like any tag it does not know."""

    def __init__(self, resolve=None, on_object=None, max_values: int = MAX_VALUES,
                 kept: dict | None = None, build=None):
        self.resolve = resolve
        self.on_object = on_object
        self.left = max_values
        self.kept = kept
        self.build = build

    def __call__(self, data, depth: int = 0):
        if depth > MAX_DEPTH:
            raise ValueError("the answer is nested too deeply")
        self.left -= 1
        if self.left < 0:
            raise ValueError(f"the answer holds more than {MAX_VALUES} values")
        if data is None or type(data) in (bool, int, float, str):
            return data
        if type(data) is list:
            self._spend(len(data))
            return [v if type(v) in _SCALARS else self(v, depth + 1) for v in data]
        if type(data) is not dict or len(data) == 0:
            raise ValueError(f"not an answer: {type(data).__name__}")
        tag = next(iter(data))
        if type(tag) is not str or not tag.startswith("$"):
            raise ValueError("not an answer: an untagged mapping")
        build = self._TAGS.get(tag)
        if build is not None:
            return build(self, data[tag], data, depth + 1)
        if tag in ("$ref", "$jref", "$rkfn") and self.resolve is not None:
            return self.resolve(tag, data[tag])
        raise ValueError(f"not an answer: {tag[:40]!r}")

    def _spend(self, count: int) -> None:
        self.left -= count
        if self.left < 0:
            raise ValueError(f"the answer holds more than {MAX_VALUES} values")

    def _items(self, value, depth: int) -> list:
        if type(value) is not list:
            raise ValueError("not an answer: a container without a list")
        self._spend(len(value))
        return [self(v, depth) for v in value]

    def _list(self, value, depth: int) -> list:
        """A list, however it crossed (a row of floats crosses as `$f8`)."""
        got = self(value, depth)
        if type(got) is not list:
            raise ValueError("not an answer: a list was expected")
        return got

    def _float(self, value, data, depth):
        if value not in ("nan", "inf", "-inf"):
            raise ValueError("bad float")
        return float(value)

    def _f8(self, value, data, depth):
        raw = self._bytes(value, len(value) * 3 // 4 if type(value) is str else 0)
        if len(raw) % 8:
            raise ValueError("bad numbers")
        self._spend(len(raw) // 8)
        return array.array("d", raw).tolist()

    @staticmethod
    def _bytes(text, size: int) -> bytes:
        if type(text) is not str:
            raise ValueError("bad bytes")
        if size > MAX_ARRAY_BYTES:
            raise ValueError(f"an array larger than {MAX_ARRAY_BYTES} bytes")
        return base64.b64decode(text, validate=True)

    def _tuple(self, value, data, depth):
        return tuple(self._items(value, depth))

    def _dict(self, value, data, depth):
        pairs = self._items(value, depth)
        if not all(type(p) is list and len(p) == 2 for p in pairs):
            raise ValueError("bad mapping")
        return {_key(k): v for k, v in pairs}

    def _set(self, value, data, depth):
        items = {_key(v) for v in self._items(value, depth)}
        return items if "$set" in data else frozenset(items)

    @staticmethod
    def _shape(shape) -> tuple[list[int], int]:
        if type(shape) is not list or len(shape) > 32 or \
                not all(type(n) is int and 0 <= n for n in shape):
            raise ValueError("bad array shape")
        count = 1
        for n in shape:
            count *= n
        return shape, count

    def _array(self, value, data, depth):
        import numpy as np
        shape, count = self._shape(data.get("shape"))
        if value in ARRAY_DTYPES:
            dtype = np.dtype(value)
            size = count * dtype.itemsize
            if size > MAX_ARRAY_BYTES:
                raise ValueError(f"an array larger than {MAX_ARRAY_BYTES} bytes")
            text = data.get("b64")
            if type(text) is not str or len(text) > (size + 2) // 3 * 4:
                raise ValueError("bad array bytes")
            raw = self._bytes(text, size)
            if len(raw) != size:
                raise ValueError("bad array bytes")
            self._spend(count)
            return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
        if value != "O":
            raise ValueError("not an array this grader takes")
        items = self._items(data.get("data"), depth)
        if len(items) != count:
            raise ValueError("bad array shape")
        dtype = np.dtype(object)
        if all(type(v) is str for v in items):
            longest = max([1] + [len(v) for v in items])
            if count * longest * 4 <= MAX_ARRAY_BYTES:
                dtype = np.dtype(f"<U{longest}")
        arr = np.empty(count, dtype=dtype)
        arr[:] = items
        return arr.reshape(shape)

    def _scalar(self, value, data, depth):
        import numpy as np
        if value not in ARRAY_DTYPES and not (type(value) is str and value.startswith("<U")
                                              and value[2:].isdigit() and len(value) < 12):
            raise ValueError("not a numpy scalar this grader takes")
        item = self(data.get("v"), depth)
        if type(item) not in (bool, int, float, str):
            raise ValueError("bad numpy scalar")
        if value.startswith("<U"):
            return np.str_(item)
        return np.dtype(value).type(item)

    @staticmethod
    def _dtype(name):
        if name not in PANDAS_DTYPES:
            raise ValueError("not a pandas dtype this grader takes")
        return name

    def _index(self, value, data, depth):
        import pandas as pd
        if type(value) is not dict:
            raise ValueError("bad index")
        return pd.Index(self._list(value.get("values"), depth),
                        dtype=self._dtype(value.get("dtype")), name=self(value.get("name"), depth))

    def _mindex(self, value, data, depth):
        import pandas as pd
        if type(value) is not dict:
            raise ValueError("bad index")
        return pd.MultiIndex.from_tuples(self._list(value.get("tuples"), depth),
                                         names=self._list(value.get("names"), depth))

    def _series(self, value, data, depth):
        import pandas as pd
        if type(value) is not dict:
            raise ValueError("bad series")
        return pd.Series(self._list(value.get("values"), depth),
                         index=self(value.get("index"), depth),
                         name=self(value.get("name"), depth),
                         dtype=self._dtype(value.get("dtype")))

    def _frame(self, value, data, depth):
        import pandas as pd
        if type(value) is not dict:
            raise ValueError("bad frame")
        columns = self._list(value.get("data"), depth)
        index = self(value.get("index"), depth)
        frame = pd.concat(columns, axis=1) if columns else pd.DataFrame(index=index)
        frame.columns = self(value.get("columns"), depth)
        frame.index = index
        return frame

    def _object(self, value, data, depth):
        entry = VALUE_TYPES.get(value) if type(value) is str else None
        if entry is None:
            raise ValueError("not one of the ragkit value types this grader takes")
        cls = value_type(entry)
        fields = data.get("fields")
        if type(fields) is not dict or set(fields) != set(_field_names(cls)):
            raise ValueError(f"bad fields for {value}")
        made = cls(**{k: self(v, depth) for k, v in fields.items()})
        if self.on_object is not None and "jid" in data:
            self.on_object(made, data["jid"])
        return made

    def _keep(self, value, data, depth):
        if self.kept is None or type(value) is not int:
            raise ValueError("not an answer: '$keep'")
        made = self(data.get("v"), depth)
        self.kept[value] = type(made)(made) if type(made) in (list, dict) else made
        return made

    def _again(self, value, data, depth):
        if self.kept is None or type(value) is not int or value not in self.kept:
            raise ValueError("not an answer: '$again'")
        made = self.kept[value]
        if type(made) in (list, dict):
            self._spend(len(made))
            return type(made)(made)
        return made

    def _recipe(self, value, data, depth):
        """A reference object the judge built, to build again here: the
        arguments come the first time it is sent in a loop, and only its
        `jid` after (the kernel keeps what it built)."""
        if self.build is None or type(value) is not str or value not in REBUILT \
                or type(data.get("jid")) is not int:
            raise ValueError("not an answer: '$rkobj'")
        if "args" not in data:
            return self.build(value, data["jid"], None, None)
        args, kwargs = self(data["args"], depth), self(data.get("kwargs"), depth)
        if type(args) is not list or type(kwargs) is not dict or \
                not all(type(k) is str for k in kwargs):
            raise ValueError(f"bad arguments for {value}")
        return self.build(value, data["jid"], args, kwargs)

    def _exc(self, value, data, depth):
        if type(value) is not dict:
            raise ValueError("bad exception")
        return {k: str(value.get(k, ""))[:2000] for k in ("name", "base", "message")}

    _TAGS = {"$float": _float, "$f8": _f8, "$tuple": _tuple, "$dict": _dict,
             "$set": _set, "$frozenset": _set, "$nd": _array, "$np": _scalar,
             "$index": _index, "$mindex": _mindex, "$series": _series, "$df": _frame,
             "$obj": _object, "$exc": _exc, "$keep": _keep, "$again": _again,
             "$rkobj": _recipe}


def value_type(entry: tuple[str, str]):
    """The class of an entry of VALUE_TYPES (a module and class of ours)."""
    import importlib
    module, name = entry
    return vars(importlib.import_module(module))[name]


def _field_names(cls) -> tuple[str, ...]:
    if dataclasses.is_dataclass(cls):
        return tuple(f.name for f in dataclasses.fields(cls))
    return tuple(getattr(cls, "_fields", ()))


def from_plain(data, resolve=None, on_object=None):
    """The values `data` describes (see Decoder)."""
    return Decoder(resolve, on_object)(data)


def loads(text: str):
    """JSON text of at most MAX_BYTES as Python data (ValueError otherwise,
    TooLarge for text over MAX_BYTES)."""
    if type(text) is not str:
        raise ValueError("an answer that is not text")
    if too_large(text):
        raise TooLarge(f"an answer larger than {MAX_BYTES} bytes")
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("the answer is nested too deeply") from None


def _key(value):
    """A decoded dict key or set item: lists (from tuples of lists) stay hashable."""
    return tuple(value) if isinstance(value, list) else value


# --- what runs in the kernel --------------------------------------------------

_objects: dict[int, object] = {}   # handles the judge holds to kernel objects
_bound: dict[int, tuple] = {}      # names `using` swapped, to put back


def _handle(obj):
    _objects[id(obj)] = obj
    return {"$ref": id(obj)}


class JudgeObject:
    """Stands in the kernel for one of the judge's objects (a reference
    function that `using` swapped in): using it asks the judge."""

    __slots__ = ("_judge_id",)

    def __init__(self, ident):
        object.__setattr__(self, "_judge_id", ident)

    def __call__(self, *args, **kwargs):
        return _ask({"op": "call", "ref": self._judge_id,
                     "args": to_plain(list(args), _handle, known=_known),
                     "kwargs": to_plain(kwargs, _handle, known=_known)})

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return _ask({"op": "getattr", "ref": self._judge_id, "name": name})

    def __len__(self):
        return _ask({"op": "len", "ref": self._judge_id})

    def __iter__(self):
        return iter(_ask({"op": "list", "ref": self._judge_id}))

    def __getitem__(self, key):
        return _ask({"op": "getitem", "ref": self._judge_id,
                     "key": to_plain(key, _handle)})


_from_judge: dict[int, tuple] = {}  # id(kernel copy) -> (copy, judge's id)
_kept: dict[int, object] = {}  # what the judge sent once in this loop (Decoder.kept)
_built: dict[int, object] = {}  # judge's id -> what _build made of it, in this loop


def _known(value):
    """A copy of one of the judge's objects goes back as that object."""
    entry = _from_judge.get(id(value))
    if entry is not None and entry[0] is value:
        return {"$jref": entry[1]}
    return None


_reference = []  # the kernel's own private copy of ragkit, made before any student code


def _reference_function(name: str):
    """'text:stem' (a function, or a class of REBUILT) in the kernel's own
    reference copy of ragkit."""
    if not _reference:
        _reference.append(_fresh())
    target = _reference[0]
    module, _, qualname = name.partition(":")
    for part in [p for p in module.split(".")[1:] if p] + qualname.split("."):
        target = getattr(target, part)
    return target


def _resolve(tag, value):
    if tag == "$rkfn":
        return _reference_function(str(value))
    if tag == "$jref":
        return JudgeObject(int(value))
    if tag == "$ref":
        return _objects[int(value)]
    raise ValueError(f"unknown handle {tag}")


def _remember(made, jid) -> None:
    """A ragkit value the judge sent: it goes back as the judge's own."""
    _from_judge[id(made)] = (made, jid)


def _build(name: str, jid: int, args, kwargs):
    """The object of a recipe the judge sent (Decoder._recipe): built from
    the kernel's private reference copy of ragkit (never the student's
    `ragkit`, which the student may have patched), once per judge object and
    loop, so the same object of the judge is one object here too, and goes
    back to the judge as that object. Without arguments, the one built."""
    if args is None:
        if jid not in _built:
            raise ValueError("not an answer: a recipe that was never sent")
        return _built[jid]
    made = _built[jid] = _reference_function(name)(*args, **kwargs)
    _remember(made, jid)
    return made


def _input(prompt: str) -> str:
    """input(), without its flush of stdout and stderr first: each is a
    round trip to the kernel's output thread, about half the time of a call
    to the judge, and what a judged call prints is not shown anyway (it goes
    out under the judge's request, which the notebook's client ignores)."""
    out, err = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = None
    try:
        return input(prompt)
    finally:
        sys.stdout, sys.stderr = out, err


def _from_judge_data(data):
    """What the judge sent, built in the kernel."""
    return Decoder(_resolve, _remember, kept=_kept, build=_build)(data)


def _ask(request: dict):
    """Ask the judge to use one of its objects. While it does, the judge may
    ask back (a reference piece that calls the student's function): each
    such request is answered with another input() until the judge's own
    answer comes."""
    text = json.dumps(request)
    if too_large(text):  # (the judge would refuse it unread)
        raise NotPlain(f"too large to send to the judge ({len(text)} bytes of JSON, "
                       f"more than {MAX_BYTES})")
    text = _input(ASK + text)
    while True:
        reply = loads(text)
        if "call" not in reply:
            break
        text = _input(RESULT + _answer(reply["call"]))
    if "raise" in reply:
        exc = reply["raise"]
        raise EXCEPTIONS.get(exc["base"], RuntimeError)(exc["message"])
    return _from_judge_data(reply["value"])


_fresh = None
_RAGKIT_FILES: frozenset = frozenset()  # the names of the files in ragkit's folder
_WATCH = None  # the kernel's ragkit_watch.py, and the pieces of it a call relies on
if __name__ == "_rag_judge":  # in the kernel (judge.LOAD), not the grader's import
    _WATCH = sys.modules.get("_ragkit_watch")
    if _WATCH is not None:
        _WATCH_PARTS = (_WATCH, _WATCH.note, _WATCH.note.__code__, _WATCH.calls,
                        tuple((cls, name, fn, fn.__code__) for cls, name, fn in _WATCH.PATCHES),
                        _WATCH.ours, _WATCH.ours.__code__, tuple(_WATCH.home))
    try:  # taken when this module loads, before the student's first cell
        from ragkit.reference import fresh as _fresh
    except ImportError:  # (a course without ragkit)
        pass
    if _WATCH is not None and _WATCH.home:
        import os as _os

        _RAGKIT_FILES = frozenset(_os.listdir(_WATCH.home[0]))


_RAGKIT_MODULES = [-1, ()]  # len(sys.modules) when last listed, and ragkit's (name, module)


def _watch_intact() -> bool:
    """The counting of ragkit's calls (ragkit_watch.py) is as it was set
    up before the student's first cell: the same module, function, code and
    counts, the same patches of the standard loaders, and every module
    loaded from a file in ragkit's folder, under any name (`ragkit.text`,
    a fresh() copy's, one loaded by hand), holding its `note` and loaded by
    the patched standard loader (a module loaded some other way, say after
    the patches were undone, would count nothing). sys.modules is listed anew only when it has grown or shrunk,
    or one of ragkit's entries changed: a judged call checks in
    microseconds, not the milliseconds that reading 1800 entries takes."""
    module, note, code, calls, patches, ours, ours_code, home = _WATCH_PARTS
    if (sys.modules.get(module.NAME) is not module or module.note is not note
            or note.__code__ is not code or module.calls is not calls
            or module.ours is not ours or ours.__code__ is not ours_code
            or tuple(module.home) != home
            or any(getattr(cls, name, None) is not fn or fn.__code__ is not fn_code
                   for cls, name, fn, fn_code in patches)):
        return False
    size, listed = _RAGKIT_MODULES
    if size != len(sys.modules) or any(sys.modules.get(n) is not m for n, m in listed):
        listed = tuple((n, m) for n, m in list(sys.modules.items())
                       if n == "ragkit" or n.startswith("ragkit.")
                       or _from_ragkit(m, ours))
        _RAGKIT_MODULES[:] = [len(sys.modules), listed]
    loader = patches[0][0]  # importlib.machinery.SourceFileLoader, patched
    return all(type(getattr(m, "__loader__", None)) is loader
               and getattr(m, module.GLOBAL, None) is note for _, m in listed)


_FROM_RAGKIT: dict = {}  # id(module) -> (module, its __file__, whether that is ragkit's)


def _from_ragkit(module, ours) -> bool:
    """Whether a module in sys.modules was loaded from a file in ragkit's
    folder. Each module's answer is kept while its __file__ stays: the real
    path of 1600 modules' files takes about 60 ms to find, and sys.modules
    grows during a notebook's run."""
    try:
        path = getattr(module, "__file__", None)
        seen = _FROM_RAGKIT.get(id(module))
        if seen is not None and seen[0] is module and seen[1] == path:
            return seen[2]
        # (only a file named as one of ragkit's can be one: the real path of
        # a module named otherwise was taken when the loader counted it)
        found = (isinstance(path, str) and path.rpartition("/")[2] in _RAGKIT_FILES
                 and ours(path))
        _FROM_RAGKIT[id(module)] = (module, path, found)
        return found
    except Exception:  # noqa: BLE001 (an odd entry in sys.modules is not ragkit's)
        return False


def _call(fn, args, kwargs, forbid: set[str]):
    """fn(*args, **kwargs), noting whether a ragkit function named in
    `forbid` began during it (ragkit_watch.py), and whether the counting
    was tampered with."""
    if _WATCH is None:  # a kernel without the counting: nothing to tell
        return {"value": fn(*args, **kwargs)}
    calls = _WATCH_PARTS[3]
    before = {name: calls.get(name, 0) for name in forbid}
    result = fn(*args, **kwargs)
    if not _watch_intact():
        return {"tampered": True}
    twins = sorted(name for name in forbid if calls.get(name, 0) != before[name])
    if twins:
        return {"delegated": twins}
    return {"value": result}


def _calls(fn, cases: list, forbid: set[str]) -> dict:
    """fn(*case) for the cases in order, as _call runs one: the answers,
    until a case raises, runs a twin or turns the counting off (which the
    reply then says after them), or the answers reach BATCH_BYTES of JSON
    (the judge decodes each answer with the limits of one call's, and asks
    for the cases left again)."""
    values, size = [], 0
    for args in cases:
        try:
            out = _call(fn, args, {}, forbid)
            if "value" in out:
                out["value"] = to_plain(out["value"], _handle, known=_known)
        except BaseException as err:  # noqa: BLE001 (the student's error is the answer)
            return {"values": values, "raise": _exception(err)}
        if "value" not in out:
            return {"values": values, **out}
        more = len(json.dumps(out["value"]))
        if values and size + more > MAX_BYTES - 4096:
            break  # (the reply would be too long: the judge asks for it again)
        values.append(out["value"])
        size += more
        if size >= BATCH_BYTES:
            break
    return {"values": values}


def _answer(request: dict) -> str:
    """The answer to one request of the judge, as JSON text."""
    try:
        answer = _serve(request)
    except BaseException as err:  # noqa: BLE001 (the student's error is the answer)
        answer = {"raise": _exception(err)}
    try:
        text = json.dumps(answer)
    except (TypeError, ValueError, RecursionError) as err:
        return json.dumps({"raise": _exception(NotPlain(str(err)))})
    # the judge would refuse it unread: it says so at once, by the size
    return json.dumps({"too_large": len(text)}) if too_large(text) else text


def _read(text: str):
    """A message of the judge's, or, when it cannot be read, what to answer
    instead (a loop that stopped on it would leave the judge waiting for an
    answer that never comes, until the cell's time limit)."""
    try:
        return loads(text), None
    except BaseException as err:  # noqa: BLE001 (said to the judge, never dropped)
        return None, RESULT + json.dumps({"raise": _exception(err)})


def loop(nonce: str = "") -> None:
    """Answer the judge's requests one after another through input(), until
    it says the test is over: one execute request per test cell instead of
    one per call (each is a whole IPython cell run, a few milliseconds).
    The first input() says `nonce`, so the judge knows this loop's requests
    from any an interrupted loop left unanswered."""
    _kept.clear()
    _built.clear()
    text = _input(RESULT + json.dumps({"ready": nonce}))
    while True:
        reply, unread = _read(text)
        if unread is not None:
            text = _input(unread)
        elif type(reply) is not dict or "call" not in reply:
            return
        else:
            text = _input(RESULT + _answer(reply["call"]))


def _serve(req: dict) -> dict:
    from IPython import get_ipython
    ns = get_ipython().user_ns
    op = req["op"]
    if op == "lookup":
        if req["name"] not in ns:
            return {"missing": True}
        value = ns[req["name"]]
        try:
            return {"value": to_plain(value)}
        except NotPlain:
            return {"value": _handle(value), "callable": callable(value)}
    if op == "call":
        fn = _objects[int(req["ref"])]
        args = _from_judge_data(req["args"])
        kwargs = _from_judge_data(req["kwargs"])
        out = _call(fn, args, kwargs, set(req.get("forbid", ())))
        if "value" in out:
            value = out["value"]
            try:
                out["value"] = to_plain(value, _handle, known=_known)
            except NotPlain as err:
                return {"raise": _exception(err)}
        return out
    if op == "calls":  # ragkit.reference.each, batched (judge.Judge.each)
        return _calls(_objects[int(req["ref"])], _from_judge_data(req["cases"]),
                      set(req.get("forbid", ())))
    if op == "getattr":
        obj = _objects[int(req["ref"])]
        if req["name"].startswith("_"):
            raise AttributeError(req["name"])
        return {"value": to_plain(getattr(obj, req["name"]), _handle, known=_known)}
    if op == "bind":
        name = req["name"]
        _bound[len(_bound)] = (name, ns[name] if name in ns else _bound)
        ns[name] = _from_judge_data(req["value"])
        return {"value": len(_bound) - 1}
    if op == "unbind":
        name, old = _bound.pop(int(req["token"]))
        if old is _bound:
            ns.pop(name, None)
        else:
            ns[name] = old
        return {"value": None}
    if op == "forget":
        _objects.clear()
        _from_judge.clear()
        _kept.clear()
        _built.clear()
        return {"value": None}
    raise ValueError(f"unknown request {op!r}")
