# Autofuse developer entry points. Two commands do everything on a fresh Debian 12/13 machine:
#   make demo    set up, build, run the demo          make test    set up, build (release + ASan/UBSan), run all tests
# Everything is incremental: set-up is a stamp check, CMake/Ninja rebuild only what changed.
# Build directories: build/release (CLI, tests, Python extension), build/asan (sanitized tests), build/fuzz (clang).

SHELL := /bin/bash
JOBS ?= 2
# The virtual environment: this checkout's .venv, else (in a git worktree) the main checkout's, else .venv (created).
VENV ?= $(shell if [ -x .venv/bin/python ]; then echo .venv; else \
          d=$$(git rev-parse --path-format=absolute --git-common-dir 2>/dev/null); \
          if [ -n "$$d" ] && [ -x "$$(dirname $$d)/.venv/bin/python" ]; then echo "$$(dirname $$d)/.venv"; \
          else echo .venv; fi; fi)
export VENV
PY := $(VENV)/bin/python
# Each checkout imports its own python/autofuse (and the _core built into it), whatever the venv's .pth says.
export PYTHONPATH := $(CURDIR)/python$(if $(PYTHONPATH),:$(PYTHONPATH))
CMAKE_COMMON := -G Ninja -DPython_EXECUTABLE=$(abspath $(PY))
RELEASE := build/release
ASAN := build/asan
FUZZ := build/fuzz
FUZZ_SECONDS ?= 60
PYTEST_ARGS ?=
CLANG_FORMAT ?= clang-format
FORMAT_FILES = $(shell git ls-files '*.h' '*.cpp')

.PHONY: all setup build build-asan dev-install test test-cpp test-asan test-python demo fuzz fuzz-kernels \
        conformance hard-inputs bench format format-check clean help

all: build

help:
	@echo "make demo | test | setup | build | build-asan | test-cpp | test-asan | test-python | fuzz | fuzz-kernels"
	@echo "     conformance | hard-inputs | bench | format | format-check | clean"

# Debian packages and the project-local .venv; a no-op of a fraction of a second once done (stamp keyed by the script).
setup:
	@bash scripts/setup.sh

$(RELEASE)/build.ninja:
	cmake -S . -B $(RELEASE) $(CMAKE_COMMON) -DCMAKE_BUILD_TYPE=Release -DAUTOFUSE_BUILD_PYTHON=ON \
	  -DAUTOFUSE_PYTHON_OUTPUT_DIR=$(abspath python/autofuse)

$(ASAN)/build.ninja:
	cmake -S . -B $(ASAN) $(CMAKE_COMMON) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAUTOFUSE_SANITIZE=ON \
	  -DAUTOFUSE_BUILD_CLI=OFF

$(FUZZ)/build.ninja:
	CXX=clang++ cmake -S . -B $(FUZZ) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAUTOFUSE_FUZZ=ON \
	  -DAUTOFUSE_BUILD_TESTS=OFF -DAUTOFUSE_BUILD_CLI=OFF -DAUTOFUSE_WERROR=OFF

# The release build: library, CLI, gtest binary, and the extension written into python/autofuse/.
build: setup $(RELEASE)/build.ninja
	cmake --build $(RELEASE) -j $(JOBS)
	@$(MAKE) --no-print-directory dev-install

build-asan: setup $(ASAN)/build.ninja
	cmake --build $(ASAN) -j $(JOBS)

# Register the package in the .venv once, in editable form (source: python/autofuse), so `import autofuse` and the
# torch_dynamo_backends entry point work. scripts/dev_install.sh skips pip when pyproject.toml has not changed.
dev-install:
	@bash scripts/dev_install.sh

test: build build-asan
	@$(MAKE) --no-print-directory test-cpp test-asan test-python

test-cpp:
	$(RELEASE)/autofuse_tests --gtest_brief=1
	@# The host probe picks the widest ISA the CPU has (avx512 or avx2); the kernel, math and tiling suites again with
	@# the avx2 and scalar helpers (af_kernel.inc), so that every width is tested whatever the machine.
	for isa in avx2 scalar; do AUTOFUSE_ISA=$$isa AUTOFUSE_FUZZ_GRAPHS=40 $(RELEASE)/autofuse_tests --gtest_brief=1 \
	  --gtest_filter='KernelFuzz.*:KernelTransposeTile.*:KernelShortRows.*:KernelRowLoop.*:KernelColumnReduce.*:KernelPipeline.*:KernelConcat*:Kernel.*:SoftmaxBounds.*:CastStore.*:KernelTanh.*:KernelErf.*:TilingThreads.*:KernelExp*:KernelDivByRowValue.*:KernelBf16Store.*:KernelStreamStores.*:KernelRowUnroll.*' || exit 1; done

test-asan:
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 $(ASAN)/autofuse_tests --gtest_brief=1

# pytest on $(JOBS) workers when pytest-xdist is installed (checked when the recipe runs: set-up may have just added it).
PYTEST_PAR = $$($(PY) -c 'import xdist' 2>/dev/null && echo "-n $(JOBS)")

test-python:
	$(PY) -m pytest -q $(PYTEST_PAR) tests/python tests/conformance $(PYTEST_ARGS)

demo: build
	@if $(PY) -c 'import importlib.util, sys; sys.exit(0 if importlib.util.find_spec("autofuse.demo") else 1)'; then \
	  $(PY) -m autofuse.demo; \
	else \
	  echo "make demo: the demo (python/autofuse/demo.py, owned by the torch front end) is not written yet."; \
	  echo "make demo: the build is ready; try:  build/release/autofuse help"; exit 1; \
	fi

fuzz: setup $(FUZZ)/build.ninja
	@test -f fuzz/parser_fuzz.cpp || { echo "make fuzz: fuzz/parser_fuzz.cpp is missing (the IR parser's fuzz body)"; exit 1; }
	cmake --build $(FUZZ) -j $(JOBS) --target parser_fuzz
	mkdir -p $(FUZZ)/corpus
	$(FUZZ)/parser_fuzz -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 $(FUZZ)/corpus $(wildcard tests/ir)

# Targets owned by other stages: each delegates to its script and fails with a clear message when it is absent.
fuzz-kernels: build
	@test -f scripts/fuzz_kernels.sh || { echo "make fuzz-kernels: scripts/fuzz_kernels.sh is not written yet (codegen)"; exit 1; }
	bash scripts/fuzz_kernels.sh

conformance: build
	@test -d tests/conformance || { echo "make conformance: tests/conformance/ is not written yet (conformance)"; exit 1; }
	AUTOFUSE_CONFORMANCE=full $(PY) -m pytest -q $(PYTEST_PAR) tests/conformance $(PYTEST_ARGS)

# The long run of the hard-input property suite (tests/python/test_hard_inputs.py): HARD_CASES cases, seed printed.
HARD_CASES ?= 10000
hard-inputs: build
	AUTOFUSE_HARD_CASES=$(HARD_CASES) $(PY) -m pytest -q $(PYTEST_PAR) tests/python/test_hard_inputs.py $(PYTEST_ARGS)

bench: build
	@if $(PY) -c 'import importlib.util, sys; sys.exit(0 if importlib.util.find_spec("autofuse.bench") else 1)'; then \
	  $(PY) -m autofuse.bench; \
	else \
	  echo "make bench: autofuse.bench (python/autofuse/bench, benchmarks) is not written yet."; exit 1; \
	fi

format:
	$(CLANG_FORMAT) -i $(FORMAT_FILES)

format-check:
	$(CLANG_FORMAT) --dry-run --Werror $(FORMAT_FILES)

clean:
	rm -rf build python/autofuse/_core*.so
