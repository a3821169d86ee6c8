# SPDX-License-Identifier: MIT
# The commands people type. CMake does the building and ctest the testing;
# this file only strings them together.
#
#   make run     install what is missing, build, start idmintd on 127.0.0.1
#   make test    install what is missing, build, run every test: plain,
#                without the optional backends, under ASan+UBSan, under
#                TSan, and the fuzz targets
#   make bench   build optimised and run the benchmarks (never fails on speed)
#   make bench-pg  the PostgreSQL extension's benchmark and B-tree study:
#                rewrites the figures and plots of docs/btree.md
#   make soak    the whole-system fault suite, long: a fleet under a nemesis
#                for SOAK_SECONDS (and at least SOAK_FAULTS faults), seeded
#                by SOAK_SEED, at least SOAK_IDS ids checked; the checker's
#                report goes to SOAK_REPORT
#   make install build and install the libraries (idmint, idmint_lease,
#                idmint_segment), headers, .pc files, idmint, idmintd, man,
#                and the PostgreSQL extension (into the server's directories)

BUILD    ?= build
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
PREFIX   ?= /usr/local
CMAKE_FLAGS ?=
SOAK_SEED    ?= 1
SOAK_SECONDS ?= 900
SOAK_FAULTS  ?= 200
SOAK_IDS     ?= 100000000
SOAK_RATE    ?= 15000
SOAK_REPORT  ?= soak-report.txt

.PHONY: all deps build run test test-plain test-asan test-tsan bench bench-pg soak install clean

all: build

deps:
	@bash scripts/deps.sh

# Build output goes to $(BUILD)/build.log and is shown only if the build fails.
build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) >$(BUILD)/build.log 2>&1 || { cat $(BUILD)/build.log; exit 1; }
	@echo "built idmint in $(BUILD)/"

run: build
	@bash scripts/demo.sh $(BUILD)

test: deps
	@bash scripts/test.sh $(JOBS)

bench: deps
	@bash scripts/deps.sh bench
	@cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DIDM_TESTS=OFF >/dev/null
	@cmake --build build-release -j $(JOBS)
	@bash bench/run.sh build-release
	@bash bench/node/run.sh build-release
	@python3 bench/python/bindings.py build-release

bench-pg: build
	@$(MAKE) -s -C $(BUILD)/pg -f $(CURDIR)/pg/Makefile install
	@bash bench/pg/run.sh

soak: deps
	@cmake -S . -B build-plain -DCMAKE_BUILD_TYPE=Release -DIDM_BENCH=OFF >/dev/null
	@cmake --build build-plain -j $(JOBS) >build-plain/build.log 2>&1 || { cat build-plain/build.log; exit 1; }
	@python3 tests/system/fleet.py --build build-plain --seed $(SOAK_SEED) \
	  --seconds $(SOAK_SECONDS) --min-faults $(SOAK_FAULTS) --min-ids $(SOAK_IDS) \
	  --rate $(SOAK_RATE) --report $(SOAK_REPORT)

install: build
	@cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) build-plain build-asan build-tsan build-fuzz build-release
