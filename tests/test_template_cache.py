"""autograder/run/template_cache.py: a grading template is reused only for the
very files it was made from, whole, and only from a store of the grader's own."""
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from autograder.run import template_cache  # noqa: E402


def course(where: Path, answer: str = "x = 1") -> Path:
    """A stand-in course folder: a config and one master."""
    (where / "source" / "tiny").mkdir(parents=True)
    (where / "nbgrader_config.py").write_text("c = get_config()\n")
    (where / "source" / "tiny" / "tiny.ipynb").write_text(f'{{"answer": "{answer}"}}')
    return where


def files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def store(tmp_path, monkeypatch):
    folder = tmp_path / "store"
    monkeypatch.setenv("RAG_TEMPLATE_CACHE", str(folder))
    return folder


def test_the_key_follows_every_byte_and_not_the_folder(tmp_path):
    one = template_cache.key(course(tmp_path / "a"))
    assert one == template_cache.key(course(tmp_path / "b"))
    assert one != template_cache.key(course(tmp_path / "c", answer="x = 2"))
    extra = course(tmp_path / "d")
    (extra / "source" / "tiny" / "data.json").write_text("[]")
    assert one != template_cache.key(extra)


def test_a_kept_template_comes_back_whole(tmp_path, store):
    made = course(tmp_path / "made")
    name = template_cache.key(made) + "-tiny"
    (made / "gradebook.db").write_bytes(b"generated")  # what nbgrader adds
    assert not template_cache.fetch(course(tmp_path / "early"), name)
    template_cache.keep(made, name)
    template_cache.keep(made, name)  # twice: still one copy, no error
    assert [p.name for p in store.iterdir()] == [name]
    again = course(tmp_path / "again")
    assert template_cache.fetch(again, name)
    assert files(again) == files(made)
    assert oct(store.stat().st_mode & 0o777) == "0o700"


def test_the_least_recently_used_go_beyond_the_limit(tmp_path, store, monkeypatch):
    made = course(tmp_path / "made")
    for i, name in enumerate(["old", "used", "new"]):
        template_cache.keep(made, name)
        os.utime(store / name, (1000 + i, 1000 + i))
    assert template_cache.fetch(course(tmp_path / "f"), "old")  # used: now the newest
    monkeypatch.setattr(template_cache, "KEEP", 2)
    template_cache.keep(made, "newest")
    assert sorted(p.name for p in store.iterdir()) == ["newest", "old"]


@pytest.mark.parametrize("how", ["others write", "a link"])
def test_a_store_others_could_plant_in_is_not_used(tmp_path, store, how):
    made = course(tmp_path / "made")
    if how == "others write":
        store.mkdir()
        store.chmod(0o777)
    else:
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        store.symlink_to(tmp_path / "elsewhere")
    template_cache.keep(made, "t")
    assert not template_cache.fetch(course(tmp_path / "f"), "t")
    assert list(store.resolve().iterdir()) == []  # nothing was kept there either


def test_made_makes_once_and_then_copies(tmp_path, store):
    """template_cache.made: the first folder is made and kept; a second
    folder of the same files gets the kept one without making it again."""
    calls = []

    def make_in(folder):
        def make():
            calls.append(folder.name)
            (folder / "gradebook.db").write_bytes(b"generated")
        return make

    first, second = course(tmp_path / "first"), course(tmp_path / "second")
    assert not template_cache.made(first, "tiny", make_in(first))
    assert template_cache.made(second, "tiny", make_in(second))
    assert calls == ["first"] and files(second) == files(first)
    other = course(tmp_path / "other", answer="x = 2")
    assert not template_cache.made(other, "tiny", make_in(other))
    assert calls == ["first", "other"]
