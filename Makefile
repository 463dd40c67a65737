# One entry point for students, instructors and CI. Every target but `help`
# sets up .venv first (from environment.yml, the only dependency list) and
# does nothing more for set-up when environment.yml has not changed; `help`
# needs only awk. Plain `make` prints the list of targets.
#
# A target is documented by the `## ` lines right above it. The first one is
# its line in `make help` and starts with its audience: [students],
# [instructors] or [maintainers] (people who edit the pack); the lines after
# it say more, for readers of this file.
.DEFAULT_GOAL := help
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SANDBOX := $(VENV)/.bwrap
SUBMISSIONS ?= submitted
GRADES ?= grades

.PHONY: help course test build lab check collect grade sheet formgrader feedback student-bundle sample-class bench mutants site bench-grading hostile hub hub-user release collect-exchange grader-access release-feedback

$(STAMP): environment.yml pyproject.toml tools/requirements.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python tools/requirements.py > $(VENV)/requirements.txt
	$(BIN)/python -m pip install --disable-pip-version-check -q --no-compile -r $(VENV)/requirements.txt
	$(BIN)/python tools/requirements.py --no-deps | $(BIN)/python -m pip install --disable-pip-version-check -q --no-compile --no-deps -r /dev/stdin
	@# the .pyc files, on every core (pip makes them one at a time: 50 s here);
	@# sandboxed kernels read the venv read-only, so each module needs its .pyc
	@# now. Like pip, a file that does not compile (a template) is skipped
	$(BIN)/python -m compileall -q -j 0 "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" > /dev/null || true
	@# the pack's own packages (ragkit, autograder: pyproject.toml), installed
	@# editable, so every script and test imports them as packages from this
	@# folder. compat mode makes the install one .pth line naming the folder,
	@# with no import hook, which sandboxed kernels and graders read as any
	@# .pth; the hand-written line older set-ups made goes
	@rm -f "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/rag-course.pth"
	$(BIN)/python -m pip install --disable-pip-version-check -q --no-deps -e . --config-settings editable_mode=compat
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

# the course on a JupyterHub (hub/): configurable-http-proxy from npm into
# .venv/node (it needs node 20 or newer), and the students' environment
# under /opt/rag-course-hub, built from a Python every account can run
# (hub/hubctl.py); tests/test_hub.py runs a hub on them
PROXY := $(VENV)/node/node_modules/.bin/configurable-http-proxy
HUB_RUNTIME := $(VENV)/.hub-runtime
PORT ?= 8000
EXCHANGE ?= /srv/nbgrader/exchange
GRADER ?= rag-grader
$(PROXY): $(STAMP)
	@$(BIN)/python hub/hubctl.py check-node
	@# --prefix would also move npm's global config (the machine's CA file, a
	@# registry mirror) to .venv/node/etc/npmrc: keep the machine's own
	npm install --prefix $(VENV)/node --globalconfig "$$(npm config get globalconfig)" \
	  --no-audit --no-fund --loglevel=error configurable-http-proxy@5.3.0
	@touch $(PROXY)
$(HUB_RUNTIME): $(STAMP) $(PROXY) hub/hubctl.py hub/student_submit.py
	$(BIN)/python hub/hubctl.py runtime
	@touch $(HUB_RUNTIME)

# the list of targets, read from this file: each documented target's first
# `## ` line, under its audience; a line without a known [audience] lands
# under "other", and tests/test_make_help.py fails until it gets one
help:
	@awk 'BEGIN { n = split("students instructors maintainers other", order, " "); \
	    head["students"] = "Students:"; head["instructors"] = "Instructors:"; \
	    head["maintainers"] = "Maintainers (editing the pack):"; \
	    head["other"] = "Other (give its ## line an [audience]):"; \
	    for (i = 1; i <= 3; i++) known[order[i]] = 1 } \
	  /^## / { if (doc == "") doc = substr($$0, 4); next } \
	  /^[A-Za-z0-9_.-]+:/ && doc != "" { \
	    name = $$0; sub(/:.*/, "", name); group = ""; \
	    if (match(doc, /^\[[a-z]+\] /)) group = substr(doc, 2, RLENGTH - 3); \
	    if (group in known) doc = substr(doc, RLENGTH + 1); else group = "other"; \
	    lines[group] = lines[group] sprintf("  make %-15s %s\n", name, doc) } \
	  { doc = "" } \
	  END { print "Usage: make TARGET [NAME=value ...]; plain make prints this list."; \
	    for (i = 1; i <= n; i++) if (order[i] in lines) \
	      printf "\n%s\n%s", head[order[i]], lines[order[i]] }' $(firstword $(MAKEFILE_LIST))

## [instructors] the main job: set up, rebuild, grade the sample class
## rebuild release/ and notebooks/, grade the sample class's lab, quiz and
## project, print one table (autograded, manual, total, band)
course: $(SANDBOX)
	$(BIN)/python tools/build.py
	$(BIN)/python autograder/commands/course.py grade --submissions autograder/testbed/sample_class --out autograder/work/sample_class

## [maintainers] every test, as CI runs it (.ci/run)
## package, notebooks (nbval), nbgrader validate, staleness, grading,
## originality
test: $(SANDBOX) $(BROWSER) $(HUB_RUNTIME)
	$(BIN)/python -m pytest

## [maintainers] rebuild release/ and notebooks/ after editing a master
## (release/ by nbgrader generate_assignment, notebooks/ by running the
## masters). CORE=1 releases the lab's core path only (32 points; the
## extensions come worked and ungraded); make grade then grades that edition
build: $(STAMP)
	$(BIN)/python tools/build.py $(if $(filter 1,$(CORE)),--core)

## [students] copy the assignments to my-work/ and open JupyterLab
## the files of release/lab, release/quiz and release/project go to
## my-work/<assignment>/ and the reading guide to my-work/guide/, where the
## notebooks' ../guide/ links look for it, never over your own copies
## (tools/student_bundle/copy_release.py, as the student bundle's make lab);
## kernels get encrypted transport, as in autograder/run/nbgrader_config.py, so
## they start without a warning
lab: $(STAMP)
	@$(BIN)/python tools/student_bundle/copy_release.py --release release --guide guide --work my-work
	cd my-work && $(CURDIR)/$(BIN)/jupyter lab --KernelManager.transport_encryption=auto \
	  $(if $(filter 0,$(shell id -u)),--allow-root)

## [students] run the visible tests in my-work/lab, points per part
## (my-work/$(ASSIGNMENT) with ASSIGNMENT=quiz or ASSIGNMENT=project); hidden
## tests run at grading. NB=07 (a number or a name, e.g. NB=quiz) checks one
## notebook of my-work/ in seconds. DETAILS=1 adds tracebacks.
check: $(STAMP)
	@$(BIN)/python autograder/check/validate.py $(if $(DETAILS),--details) \
	  $(if $(NB),--nb '$(NB)' my-work/$(ASSIGNMENT),my-work/$(or $(ASSIGNMENT),lab))

## [students] the course as a static site in site/, solutions folded
## for self-learners: open site/index.html. STUDENT=1 builds the graded
## course's site instead, in dist/student-site/: tasks blank, no solution,
## no hidden test, no quiz key. Generated, never committed.
site: $(STAMP)
	$(BIN)/python tools/build_site.py $(if $(STUDENT),--student --out dist/student-site,--out site)

## [instructors] unpack an LMS download ZIP=file into SUBMISSIONS=dir
## through the intake gate, by Canvas's file names (flat files or each
## student's hand-in.zip; the newest upload of a file wins); every file of
## the zip and what became of it goes to SUBMISSIONS/lms_collected.csv;
## exit status 1 when some student's files were refused
collect: $(STAMP)
	@test -n "$(ZIP)" || { echo "make collect needs ZIP=path/to/the/LMS/download.zip" >&2; exit 2; }
	$(BIN)/python autograder/commands/lms_collect.py --zip $(ZIP) --submissions $(SUBMISSIONS)

## [instructors] grade SUBMISSIONS=dir into GRADES=dir, one grade sheet
## real submissions laid out as SUBMISSIONS/<student>/<lab|quiz|project>/;
## DEADLINES=file.toml applies due dates, extensions and a late policy
## (autograder/intake/deadlines.py; kept in GRADES for make sheet);
## TIMEOUT=seconds per cell and JOBS=students at once go to grade.py, and
## GRADE_OPTIONS="..." passes any other of its options (grade.py --help)
grade: $(SANDBOX)
	$(BIN)/python autograder/commands/course.py grade --submissions $(SUBMISSIONS) --out $(GRADES) \
	  $(if $(DEADLINES),--deadlines $(DEADLINES)) $(if $(TIMEOUT),--timeout $(TIMEOUT)) \
	  $(if $(JOBS),--jobs $(JOBS)) $(GRADE_OPTIONS)

## [instructors] mark the project's written answers (GRADES=dir)
## in nbgrader's formgrader (GRADES=autograder/work/sample_class for the
## sample class after make course)
formgrader: $(STAMP)
	$(BIN)/python autograder/commands/course.py formgrader --out $(GRADES)

## [instructors] the grade sheet again, with the manual marks so far
## (GRADES=dir; LMS=canvas also writes grade_sheet_canvas.csv for Canvas's
## gradebook import, ROSTER=csv with student,name,sis_id,section)
sheet: $(STAMP)
	$(BIN)/python autograder/commands/course.py sheet --out $(GRADES) $(if $(LMS),--lms $(LMS)) $(if $(ROSTER),--roster $(ROSTER)) \
	  $(if $(DEADLINES),--deadlines $(DEADLINES))

## [instructors] feedback pages again, with the manual marks (GRADES=dir)
## the project's pages (and any assignment with a mark a person entered) go
## to GRADES/<assignment>/feedback/, replacing the autograde-time pages
feedback: $(STAMP)
	$(BIN)/python autograder/commands/course.py feedback --out $(GRADES)

## [instructors] dist/rag-course-student.zip: the copy students get
## in a graded course (hand this out, not the repository): release/, ragkit,
## data, guide, the check tooling, a student Makefile and README, without any
## solution or hidden test. OUT=path writes it elsewhere
student-bundle: $(STAMP)
	$(BIN)/python tools/build_bundle.py $(if $(OUT),--out $(OUT))

## [maintainers] rebuild the sample class from release/ and the masters
sample-class: $(STAMP)
	$(BIN)/python autograder/testbed/make_sample_class.py

## [maintainers] ragkit's speed against rank_bm25, bm25s and faiss
## as ratios measured in one run (a few minutes; QUICK=1 for a small run);
## not a test
bench: $(STAMP)
	$(BIN)/python tools/bench.py $(if $(QUICK),--quick)

## [maintainers] grading speed against plain nbgrader (long; QUICK=1)
## a class of 40 from the sample class, plain sequential `nbgrader
## autograde` against grade.py with 1 and 2 workers, as ratios, and where
## the time goes (QUICK=1 grades 6 students; PROFILE=1 instead grades the
## complete student alone both ways under py-spy: seconds per process); not a test
bench-grading: $(SANDBOX)
	$(BIN)/python tools/bench_grading.py $(if $(QUICK),--quick) $(if $(PROFILE),--profile)

## [maintainers] grade every plausible mistake of the testbed for real
## (autograder/testbed/mistakes/): a table of points kept, then the rules checked (make test
## grades a sample of them)
mutants: $(STAMP)
	$(BIN)/python autograder/testbed/mutants.py
	RAGKIT_ALL_MUTANTS=1 $(BIN)/python -m pytest -o addopts="-p no:cacheprovider" tests/test_mutants.py

## [maintainers] grade every case of the hostile class in one batch
## (autograder/testbed/hostile/); make test grades a sample of them
hostile: $(SANDBOX)
	RAGKIT_ALL_HOSTILE=1 $(BIN)/python -m pytest -o addopts="-p no:cacheprovider" tests/test_hostile.py

## [instructors] the course on a JupyterHub, 127.0.0.1:PORT (as root)
## checks and fixes first (a Python every account runs, home folders 0700,
## the repository closed to every other account, the exchange EXCHANGE=dir
## with sticky folders, the proxy from npm, the grader account GRADER=name,
## the port), then prints the address; each student's server runs capped
## (memory, processes, CPU), each home and the exchange on a disk image of
## a fixed size; formgrader is a hub service on GRADES=dir.
## AUTH=shared: one password (RAG_HUB_SHARED_PASSWORD) for a workshop.
## See hub/README.md
hub: $(HUB_RUNTIME)
	$(BIN)/python hub/hubctl.py start --port $(PORT) --exchange $(EXCHANGE) \
	  --grader $(GRADER) --grades $(GRADES) $(if $(AUTH),--auth $(AUTH))

## [instructors] add a student account U=name for the hub (as root)
## home 0700, in the group rag-students that may log in; then `passwd name`
hub-user: $(STAMP)
	@test -n "$(U)" || { echo "make hub-user needs U=account-name" >&2; exit 2; }
	$(BIN)/python hub/hubctl.py add-user $(U)

## [instructors] release A=assignment to the hub's exchange (as root)
## nbgrader release_assignment from release/$(A); students fetch it in
## JupyterLab's Assignments panel
release: $(STAMP)
	@test -n "$(A)" || { echo "make release needs A=lab, A=quiz or A=project" >&2; exit 2; }
	$(BIN)/python hub/hubctl.py release $(A) --exchange $(EXCHANGE)

## [instructors] collect A=assignment from the exchange into submitted/
## through the intake gate: the newest submission each student owns, timed
## by when it was received (exchange_collected.csv); exits 1 when one was
## refused (named for another student, dated ahead, over 20 MB) or held a
## link, pipe or device (left out); then
## make grade SUBMISSIONS=submitted
collect-exchange: $(STAMP)
	@test -n "$(A)" || { echo "make collect-exchange needs A=lab, A=quiz or A=project" >&2; exit 2; }
	$(BIN)/python hub/hubctl.py collect $(A) --exchange $(EXCHANGE)

## [instructors] hand GRADES=dir/formgrader to the hub's grader
## (GRADER=name; its formgrader service marks there), the rest of GRADES
## closed to other accounts (as root)
grader-access: $(STAMP)
	$(BIN)/python hub/hubctl.py grader-access --grades $(GRADES) --grader $(GRADER)

## [instructors] release A=assignment's feedback pages from GRADES=dir
## to the exchange; students fetch them in the Assignments panel
release-feedback: $(STAMP)
	@test -n "$(A)" || { echo "make release-feedback needs A=lab, A=quiz or A=project" >&2; exit 2; }
	$(BIN)/python hub/hubctl.py release-feedback $(A) --grades $(GRADES) --exchange $(EXCHANGE)
