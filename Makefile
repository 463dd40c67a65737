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

.PHONY: course test build lab check grade sheet formgrader student-bundle sample-class bench mutants site bench-grading hostile

$(STAMP): environment.yml pyproject.toml tools/requirements.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python tools/requirements.py > $(VENV)/requirements.txt
	$(BIN)/python -m pip install --disable-pip-version-check -q -r $(VENV)/requirements.txt
	$(BIN)/python tools/requirements.py --no-deps | $(BIN)/python -m pip install --disable-pip-version-check -q --no-deps -r /dev/stdin
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

# the browser tests (tests/test_browser.py, tests/test_formgrader_browser.py)
# drive JupyterLab, nbgrader's formgrader and the site in Debian's chromium
# through its chromedriver; nothing is downloaded at run time
BROWSER := $(VENV)/.chromium
$(BROWSER): $(STAMP)
	@{ command -v chromium && command -v chromedriver; } >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; \
	  else echo "the browser tests need chromium: sudo apt-get install chromium chromium-driver" >&2; exit 1; fi; }
	@touch $(BROWSER)

## main job: rebuild release/ and notebooks/, grade the sample class's lab,
## quiz and project, print one table (autograded, manual, total, band)
course: $(SANDBOX)
	$(BIN)/python tools/build.py
	$(BIN)/python autograder/course.py grade --submissions autograder/sample_class --out autograder/work/sample_class

## every test: package, notebooks (nbval), nbgrader validate, staleness, grading, originality
test: $(SANDBOX) $(BROWSER)
	$(BIN)/python -m pytest

## regenerate release/ (nbgrader generate_assignment) and notebooks/ (executed masters)
build: $(STAMP)
	$(BIN)/python tools/build.py

## the reading edition as a static HTML site in site/ (generated, not
## committed): open site/index.html in a browser
site: $(STAMP)
	$(BIN)/python tools/site.py --out site

## students: copy the student notebooks of every assignment (release/lab,
## release/quiz, release/project) to my-work/<assignment>/ (never over your
## own copies) and open JupyterLab in my-work; kernels get encrypted
## transport, as in autograder/nbgrader_config.py, so they start without a warning
lab: $(STAMP)
	@for a in release/*/; do a=$$(basename $$a); mkdir -p my-work/$$a; \
	  for f in release/$$a/*.ipynb; do \
	    test -e my-work/$$a/$$(basename $$f) || cp $$f my-work/$$a/; done; done
	cd my-work && $(CURDIR)/$(BIN)/jupyter lab --KernelManager.transport_encryption=auto \
	  $(if $(filter 0,$(shell id -u)),--allow-root)

## students: run the visible tests of every notebook in my-work/lab (or
## my-work/$(ASSIGNMENT): ASSIGNMENT=quiz, ASSIGNMENT=project) and print
## points per part; hidden tests run at grading. DETAILS=1 adds tracebacks.
check: $(STAMP)
	@$(BIN)/python autograder/validate.py $(if $(DETAILS),--details) my-work/$(or $(ASSIGNMENT),lab)

## instructors: grade real submissions laid out as
## SUBMISSIONS/<student>/<lab|quiz|project>/ into GRADES/, with one grade sheet
grade: $(SANDBOX)
	$(BIN)/python autograder/course.py grade --submissions $(SUBMISSIONS) --out $(GRADES)

## instructors: mark the project's written answers in nbgrader's formgrader
## (GRADES=autograder/work/sample_class for the sample class after make course)
formgrader: $(STAMP)
	$(BIN)/python autograder/course.py formgrader --out $(GRADES)

## instructors: the grade sheet again, with the manual grades entered so far
sheet: $(STAMP)
	$(BIN)/python autograder/course.py sheet --out $(GRADES)

## instructors of graded courses: dist/rag-course-student.zip, the student's
## copy of the course (release/, ragkit, data, guide, the check tooling, a
## student Makefile and README) without any solution or hidden test; hand
## this out, not the repository. OUT=path writes it elsewhere
student-bundle: $(STAMP)
	$(BIN)/python tools/student_bundle.py $(if $(OUT),--out $(OUT))

## rebuild the sample class of submissions from release/ and the masters
sample-class: $(STAMP)
	$(BIN)/python autograder/make_sample_class.py

## speed of ragkit against rank_bm25, bm25s and faiss, as ratios measured in
## one run (a few minutes; QUICK=1 for a small run); not a test
bench: $(STAMP)
	$(BIN)/python tools/bench.py $(if $(QUICK),--quick)

## grading speed: a class of 40 from the sample class, plain sequential
## `nbgrader autograde` against grade.py with 1 and 2 workers, as ratios, and
## where the time goes (long; QUICK=1 grades 6 students); not a test
bench-grading: $(SANDBOX)
	$(BIN)/python tools/bench_grading.py $(if $(QUICK),--quick)

## every plausible mistake of autograder/mistakes/ graded for real: a table of
## points kept, then the rules checked (make test grades a sample of 20)
mutants: $(STAMP)
	$(BIN)/python autograder/mutants.py
	RAGKIT_ALL_MUTANTS=1 $(BIN)/python -m pytest -o addopts="-p no:cacheprovider" tests/test_mutants.py

## every case of the hostile class (autograder/hostile/) graded in one batch;
## make test grades a sample of 12 of them
hostile: $(SANDBOX)
	RAGKIT_ALL_HOSTILE=1 $(BIN)/python -m pytest -o addopts="-p no:cacheprovider" tests/test_hostile.py
