# The README's two commands: `make run` and `make test` (plus `make build`).
# Both install what is missing (Debian packages), configure and build first.
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)
OUT ?= p2pscope-out
CMAKE_FLAGS ?=
WERROR ?= $(if $(CI),ON,OFF)

.PHONY: deps deps-run configure configure-run build build-p2pscope run test test-fast test-asan fuzz clean

# make run installs what building and running need; make test adds the test tools
# (GoogleTest, iperf3, chromium, ...).
deps:
	@bash scripts/install-deps.sh test

deps-run:
	@bash scripts/install-deps.sh run

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -G Ninja -DP2PSCOPE_WERROR=$(WERROR) $(CMAKE_FLAGS)

configure: deps
	cmake -S . -B $(BUILD) -G Ninja -DP2PSCOPE_WERROR=$(WERROR) -DBUILD_TESTING=ON $(CMAKE_FLAGS)

# Without the tests: GoogleTest need not be installed to run.
configure-run: deps-run
	cmake -S . -B $(BUILD) -G Ninja -DP2PSCOPE_WERROR=$(WERROR) -DBUILD_TESTING=OFF $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The binary alone: `make run` needs no test executable (on 2 cores they are most of
# the build). `make test` builds everything.
build-p2pscope: configure-run
	cmake --build $(BUILD) -j $(JOBS) --target p2pscope

run: build-p2pscope
	$(BUILD)/p2pscope run --out $(OUT)

# The whole suite: the normal build, then the unit tests again under ASan+UBSan.
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	$(MAKE) test-asan

test-fast: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE slow

# Sanitizers on host code (no CUDA: the sanitizers do not see device memory).
test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DP2PSCOPE_SANITIZE=ON -DP2PSCOPE_WITH_CUDA=OFF \
	  -DP2PSCOPE_WERROR=$(WERROR) -DCMAKE_BUILD_TYPE=Debug $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) -LE "gpu|nosan"

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
