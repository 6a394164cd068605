# The two commands of slowpipe's contract:
#   make demo   install missing dependencies, build (Release), run the default experiment
#   make test   the same set-up, then the whole test suite (all but the `long` label;
#               make test-long runs those full-strength variants)
# Other targets: build, bench, format, clean, and the instrumented builds, each in
# its own directory:
#   make fuzz       libFuzzer targets (clang, ASan, UBSan) in build-fuzz/, each run
#                   FUZZ_SECONDS seconds (default 60): make fuzz FUZZ_SECONDS=300
#   make sanitize   the whole test suite built with ASan and UBSan in build-sanitize/
#   make lint       clang-tidy over every source under .clang-tidy (build-lint/, nothing
#                   built; any finding fails)
#   make reproduce  the source papers' findings, one sweep each (experiments/reproduce/);
#                   make reproduce-a1 (a1, a2, r1, r23, r4, p1, p1m, t1, b1, rb1, m1) runs one; SCALE=K for longer runs;
#                   DTYPE=bf16 trains in bf16 and compares with the committed fp32 results
#                   make reproduce-a1-long / reproduce-a1-long-lr: A1 at 10 epochs (~1 CPU-hour each)
#                   make reproduce-ladder: the model-size ladder, d_model 64 and 256 (docs/scale.md,
#                   ~6 CPU-hours; or reproduce-a1-scale, -a1-long-scale, -t1-scale, -p1m-scale,
#                   -rb1-scale, -m1-scale)
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
FUZZ_SECONDS ?= 60
SCALE ?= 1
DTYPE ?= fp32
REPRODUCTIONS := a1 a2 r1 r23 r4 p1 p1m t1 b1 rb1 m1
LONG_REPRODUCTIONS := a1-long a1-long-lr ladder a1-scale a1-long-scale t1-scale p1m-scale rb1-scale m1-scale

.PHONY: deps configure build demo test test-long bench format lint clean fuzz sanitize reproduce \
	$(addprefix reproduce-,$(REPRODUCTIONS) $(LONG_REPRODUCTIONS))

deps:
	@./scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	@./scripts/demo.sh $(BUILD_DIR)

reproduce: build
	@SCALE=$(SCALE) DTYPE=$(DTYPE) JOBS=$(JOBS) ./scripts/reproduce.sh $(BUILD_DIR)

$(addprefix reproduce-,$(REPRODUCTIONS) $(LONG_REPRODUCTIONS)): reproduce-%: build
	@SCALE=$(SCALE) DTYPE=$(DTYPE) JOBS=$(JOBS) ./scripts/reproduce.sh $(BUILD_DIR) $*

test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -LE long

# The full-strength variants the default suite leaves out (ctest label `long`).
test-long: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j 1 -L long

bench: build
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target benches
	@./scripts/bench.sh $(BUILD_DIR)

fuzz:
	@./scripts/install-deps.sh --fuzz
	@FUZZ_SECONDS=$(FUZZ_SECONDS) JOBS=$(JOBS) ./scripts/fuzz.sh

sanitize: deps
	@JOBS=$(JOBS) ./scripts/sanitize.sh build-sanitize

lint:
	@./scripts/install-deps.sh --lint
	@JOBS=$(JOBS) ./scripts/lint.sh build-lint

format:
	@git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean:
	@rm -rf $(BUILD_DIR) build-fuzz build-sanitize build-lint
