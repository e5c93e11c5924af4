# ferry: the two commands a fresh machine needs are `make demo` and `make test`.
# Every target installs what it needs first (scripts/install-deps.sh is idempotent and quick
# when nothing is missing).

JOBS ?= 2
FUZZ_RUNS ?= 100000
FUZZ_VARIANTS ?= 500
FUZZ_SECONDS ?= 300
DEMO_IMAGES ?= 2000

.PHONY: all deps build build-python build-dev wheel test bench-full fuzz-build fuzz-smoke fuzz reliability soak demo bench format format-check clean

all: build

deps:
	@./scripts/install-deps.sh

# Release build: the ferry CLI, the benchmark tools and the image generator.
build: deps
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j$(JOBS)

# What the Python tests need from the release build: the module, the ferry command and the tools
# the scenario runner's smoke test drives.
build-python: deps
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j$(JOBS) --target _ferry ferry ferry-wan ferry-fetch-bench \
	  ferry-make-images

build-dev: deps
	@cmake --preset dev >/dev/null
	@cmake --build --preset dev -j$(JOBS)

# Clang's lock checks, unit, compatibility, CLI and integration tests (against loopback S3/Azure
# and identity servers) under ASan+UBSan with, beside the latter on servers of their own, the
# Python package's tests (release build of the module), then the
# fuzz targets' seeds and fixed variants of them, in the same sanitized build; between them, the
# wheel and the C++ library installed and used from outside the repository. Formatting is
# checked first, as CI checks it.
test: build-dev build-python
	@$(MAKE) --no-print-directory format-check
	@./scripts/check-thread-safety.py
	@./scripts/run-tests.sh dev
	@./scripts/check-install.sh --build-dir build/release
	@./scripts/run-fuzzers.sh --replay $(FUZZ_VARIANTS)

# The wheel of the release build (docs/install.md), into dist/: no second compile.
wheel: build
	@FERRY_CMAKE_BUILD_DIR=build/release /usr/bin/python3 -m pip wheel --quiet --no-build-isolation \
	  --no-deps -w dist .
	@ls -l dist/ferry-*.whl

fuzz-build: deps
	@cmake --preset fuzz >/dev/null
	@cmake --build --preset fuzz -j$(JOBS)

fuzz-smoke: fuzz-build
	@./scripts/run-fuzzers.sh --runs $(FUZZ_RUNS)

fuzz: fuzz-build
	@./scripts/run-fuzzers.sh --seconds $(FUZZ_SECONDS)

# The reliability suites at full strength (kill, race, hostile input, fuzzing, secrets); writes
# docs/reliability.md.
reliability: build-dev build-python fuzz-build
	@./scripts/reliability.sh

# The soak (scripts/soak.sh): 20 minutes (SOAK_SECONDS) of four jobs under faults, throttling
# and kills; not part of `make test`. `make reliability` runs a 2-minute version.
soak: build-python
	@./scripts/soak.sh

demo: build
	@./scripts/demo.sh --images $(DEMO_IMAGES)

bench: build
	@./bench/run.sh

# The whole cross-cloud grid (bench/scenarios/run.py --grid full): tens of minutes.
bench-full: build
	@/usr/bin/python3 bench/scenarios/run.py --grid full

format:
	@git ls-files --cached --others --exclude-standard '*.h' '*.cc' | xargs clang-format -i

format-check:
	@git ls-files --cached --others --exclude-standard '*.h' '*.cc' | xargs clang-format --dry-run --Werror

clean:
	@rm -rf build
