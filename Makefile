# ipclab entry points. The README names two: `make run` and `make test`.
#
#   make run            host kernel: build the engine, run the quick `seeds` suite, write a report
#   make test           every test tier: engine, conformance, Python, kernel lab
#   make engine         build bench/ipcbench
#   make conformance    build and run the pipe/mqueue conformance suite (KTAP)
#   make test-python    the Python tests and the lab's tests that boot nothing (tests/lab)
#   make test-kernel    kernel tier only, on mainline: build its kernels, boot them, run tests inside
#   make test-lts       the kernel tier on the 6.12 base instead (not part of `make test`)
#   make test-bisect    bisect tier: the seeds series as six commits, bisected to its culprit
#   make test-arm64     arm64 tier alone (make test runs it beside the others): mainline and two
#                       lab variants cross-built and booted (icount)
#   make test-arm64-census  the census on arm64 (opt-in: one more arm64 boot)
#   make test-arm64-faults  arm64 fault runs of the series' debug build (not in `make test`)
#   make test-slurm     ab through a one-node Slurm cluster started here (opt-in; `make test`
#                       runs the executor's cluster tests, without kernels)
#   make test-kernel-slurm  the kernel tier with IPCLAB_EXECUTOR=slurm: its builds and boots as
#                       jobs of a one-node cluster started here (KTESTS= narrows it to files)
#   make test-flaky     reruns the Python tier FLAKY_N times (20) under `stress-ng --cpu 2` and the
#                       kernel tier's A/A tests FLAKY_K times (5); prints every test that failed
#   make test-fresh     `make test` as a new user runs it: a fresh clone, empty caches, no venv
#   make engine-checks  the engine's acceptance figures (timing overhead, CV, ladder vs peers)

VENV   := .venv
PY     := $(VENV)/bin/python
SUITE  ?= seeds

.PHONY: all deps lab-deps reference-deps engine conformance run test test-engine \
	test-conformance test-python test-kernel test-lts test-bisect test-arm64 test-arm64-census \
	test-arm64-faults test-census test-smp test-slurm test-kernel-slurm test-flaky test-fresh engine-checks clean

all: engine

deps:
	@scripts/install-deps.sh host

lab-deps:
	@scripts/install-deps.sh lab

# Booting Debian's own kernel (`--kernel debian`) needs a virtiofsd: not part of `make test`.
reference-deps: lab-deps
	@scripts/install-deps.sh reference

engine:
	@$(MAKE) --no-print-directory -C bench

conformance:
	@$(MAKE) --no-print-directory -C conformance run

run: deps engine
	$(VENV)/bin/ipclab run $(SUITE) --quick

engine-checks: deps engine
	$(PY) scripts/engine-checks

test-engine: engine
	@$(MAKE) --no-print-directory -C bench test

test-conformance: conformance

test-python: deps engine
	$(PY) -m pytest -q tests --ignore=tests/kernel

test-kernel: lab-deps engine
	@$(MAKE) --no-print-directory -C conformance
	$(PY) -m pytest -q tests/kernel

# `make test` boots mainline only (CI's time budget); the 6.12 series is checked there to
# apply, and here built and booted like mainline's.
test-lts: lab-deps engine
	@$(MAKE) --no-print-directory -C conformance
	IPCLAB_TEST_BASE=lts $(PY) -m pytest -q tests/kernel

# Too slow for `make test`: builds and boots several kernels (tests/README.md says how long).
test-bisect: lab-deps engine
	IPCLAB_TEST_BISECT=1 $(PY) -m pytest -q tests/kernel/test_lab_bisect.py

# Opt-in: a one-node Slurm cluster started here (slurm-wlm, munge), and the same deterministic
# `ab` locally and through it (docs/lab.md, Slurm). `make test` runs the first file but for its
# time-limit test.
test-slurm: lab-deps engine
	IPCLAB_TEST_SLURM=1 $(PY) -m pytest -q tests/kernel/test_lab_slurm_cluster.py \
		tests/kernel/test_lab_slurm.py

# The tier's own commands choose Slurm by the environment, as a user sets it once; what Slurm
# may not run (conformance, -- CMD, fault runs, a timed bisect) boots here and says so.
KTESTS ?= tests/kernel
test-kernel-slurm: lab-deps engine
	@$(MAKE) --no-print-directory -C conformance
	IPCLAB_EXECUTOR=slurm $(PY) -m pytest -q -rfEs $(KTESTS)

# The SMP known answer alone (it is also part of `make test`); its two-vCPU half needs a host
# with two idle cores for the guest's vCPU threads and skips without (docs/lab.md, SMP).
test-smp: lab-deps engine
	$(PY) -m pytest -q -s tests/kernel/test_lab_smp.py

# The census's known answers alone (they are also part of `make test`).
test-census: lab-deps engine
	@$(MAKE) --no-print-directory -C conformance
	$(PY) -m pytest -q tests/kernel/test_lab_census.py

# The arm64 tier alone; `make test` runs it beside the other tiers (tests/tier_beside.py).
test-arm64: lab-deps engine
	IPCLAB_TEST_ARM64=1 $(PY) -m pytest -q tests/kernel/test_lab_arm64.py

# Opt-in, in neither `make test` nor `make test-arm64` (their budgets): the census on arm64,
# one deterministic boot with a known answer and a bound.
test-arm64-census: lab-deps engine
	IPCLAB_TEST_ARM64_CENSUS=1 $(PY) -m pytest -q tests/kernel/test_lab_arm64_census.py

# In neither `make test` nor `make test-arm64`: a cold arm64 debug build of its own and two
# boots (docs/lab.md, "Fault runs on arm64").
test-arm64-faults: lab-deps engine
	IPCLAB_TEST_ARM64_FAULTS=1 $(PY) -m pytest -q tests/kernel/test_lab_arm64_faults.py

# The Python and kernel tiers run last, in one pytest session, so the run ends on its summary
# (every failure and error by name, the reason of every skip), after one line of time per tier (tests/conftest.py). The
# Python tests run first, with the kernel tier's first build beside them (.test-first-build.log).
# The arm64 tier runs beside the kernel tier, in a pytest process of its own that logs to
# .test-arm64.log; one test of the session checks it.
TIMES := .test-times
test: lab-deps
	@rm -f $(TIMES)
	@t=$$(date +%s); $(MAKE) --no-print-directory test-engine && \
		echo "engine $$(( $$(date +%s) - t ))" >> $(TIMES)
	@t=$$(date +%s); $(MAKE) --no-print-directory test-conformance && \
		echo "conformance $$(( $$(date +%s) - t ))" >> $(TIMES)
	@$(MAKE) --no-print-directory -C conformance
	IPCLAB_TEST_TIMES=$(TIMES) IPCLAB_TEST_ARM64=beside $(PY) -m pytest -q -rfEs tests

# Flakiness, measured (scripts/test-flaky says how): a test that failed once is listed.
test-flaky: lab-deps engine
	@$(MAKE) --no-print-directory -C conformance
	$(PY) scripts/test-flaky

# `make test` from a fresh clone, empty caches, no venv (scripts/test-fresh; 35+ min).
# TEST_FRESH_TARGET=test-engine tries it on a short target.
test-fresh:
	@scripts/test-fresh

clean:
	@$(MAKE) --no-print-directory -C bench clean
	@$(MAKE) --no-print-directory -C conformance clean
