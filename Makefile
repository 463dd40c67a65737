# One entry point for students, instructors and CI. Every target sets up .venv
# first (from environment.yml, the only dependency list) and does nothing more
# for set-up when environment.yml has not changed.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SANDBOX := $(VENV)/.bwrap
SUBMISSIONS ?= submitted
GRADES ?= grades

.PHONY: course test build lab grade sample-class clean-work

$(STAMP): environment.yml pyproject.toml tools/requirements.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python tools/requirements.py > $(VENV)/requirements.txt
	$(BIN)/python -m pip install --disable-pip-version-check -q -r $(VENV)/requirements.txt
	@# the repo on the venv's path makes `import ragkit` work like an editable install
	$(BIN)/python -c "import site, pathlib; pathlib.Path(site.getsitepackages()[0], 'rag-course.pth').write_text('$(CURDIR)\n')"
	@touch $(STAMP)

# the grader runs student code under bubblewrap (a Debian package)
$(SANDBOX): $(STAMP)
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap; \
	  else echo "grading needs bubblewrap: sudo apt-get install bubblewrap" >&2; exit 1; fi; }
	@touch $(SANDBOX)

## main job: rebuild release/ and notebooks/, grade the sample class, print grades
course: $(SANDBOX)
	$(BIN)/python tools/build.py
	$(BIN)/python autograder/grade.py --submissions autograder/sample_class --out autograder/work/sample_class

## every test: package, notebooks (nbval), nbgrader validate, staleness, grading, originality
test: $(SANDBOX)
	$(BIN)/python -m pytest

## regenerate release/ (nbgrader generate_assignment) and notebooks/ (executed masters)
build: $(STAMP)
	$(BIN)/python tools/build.py

## students: open JupyterLab on the student notebooks
lab: $(STAMP)
	$(BIN)/jupyter lab release/lab

## instructors: grade real submissions laid out as SUBMISSIONS/<student>/lab/*.ipynb
grade: $(SANDBOX)
	$(BIN)/python autograder/grade.py --submissions $(SUBMISSIONS) --out $(GRADES)

## rebuild the sample class of submissions from release/ and the masters
sample-class: $(STAMP)
	$(BIN)/python autograder/make_sample_class.py
