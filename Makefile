# subako-runner — the two commands a newcomer needs:
#   make demo   build the runner and call the built-in example package
#   make test   vet, format check and the whole test suite (what CI runs)

GO        ?= go
BIN       := bin/subako-runner
DEMO_PKG  := testdata/packages/greet
GUESTS    := testdata/guests

.PHONY: all build demo test test-short fmt-check vet fixtures bench fuzz clean wasi-testsuite mcp-clients mutants gremlins soak

all: build

build:
	$(GO) build -o $(BIN) ./cmd/subako-runner

# The demo package's module is built from Go source (testdata/guests/greet)
# rather than committed, so the example always matches its source.
$(DEMO_PKG)/module.wasm: $(wildcard $(GUESTS)/greet/*.go) $(GUESTS)/go.mod
	cd $(GUESTS)/greet && GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 GOFLAGS=-mod=mod $(GO) build -trimpath -o ../../../$@ .

demo: build $(DEMO_PKG)/module.wasm
	@echo '$$ subako-runner validate $(DEMO_PKG)'
	@$(BIN) validate $(DEMO_PKG)
	@echo
	@echo '$$ subako-runner discover $(DEMO_PKG)'
	@$(BIN) discover $(DEMO_PKG)
	@echo
	@echo '$$ subako-runner call $(DEMO_PKG) greet '"'"'{"name":"Ada"}'"'"
	@$(BIN) call $(DEMO_PKG) greet '{"name":"Ada"}'

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# Two passes: every test and example, then the race detector over the tests
# (not the examples: they are documentation, each compiling its own guest)
# that do not need a large or slow guest, an external toolchain, a node
# client or the separately built binary (-short). The -race pass reuses the
# machine code compiled by the first pass (the same code, and compiling under
# -race is slow).
# go test starts the test binaries in the order of its arguments, at most
# two at a time on 2 cores: SLOW_TESTS, the packages that run longest, come
# first so that none of them starts last with the other core idle.
# -vet=off: the vet target has already run every check over the same code.
TEST_CACHE := $(CURDIR)/.cache/compiled
SLOW_TESTS := ./runtime ./cmd/subako-runner ./internal/fuel ./wasi

test: fmt-check vet mcp-clients
	@command -v chromium >/dev/null 2>&1 || command -v "$$SUBAKO_CHROMIUM" >/dev/null 2>&1 || \
	  echo '*** chromium is not installed: the browser tests of inspect are SKIPPED (apt-get install chromium; .ci/run installs it, and in CI they fail without it) ***' >&2
	@test -x "$${SUBAKO_ASC:-/tmp/subako-asc-0.28.20/node_modules/.bin/asc}" || \
	  echo '*** no AssemblyScript compiler at $${SUBAKO_ASC:-/tmp/subako-asc-0.28.20/node_modules/.bin/asc}: the build of the AssemblyScript template (init --lang as) is SKIPPED (npm install --prefix /tmp/subako-asc-0.28.20 assemblyscript@0.28.20, or set SUBAKO_ASC; in CI it fails without it) ***' >&2
	SUBAKO_TEST_COMPILATION_CACHE=$(TEST_CACHE) $(GO) test -vet=off -timeout 15m $(SLOW_TESTS) ./...
	# GORACE: a race-built process sleeps a second at exit by default, and
	# every command the CLI's tests run starts (and ends) a race-built worker.
	GORACE=atexit_sleep_ms=0 SUBAKO_TEST_COMPILATION_CACHE=$(TEST_CACHE) $(GO) test -vet=off -race -short -run '^(Test|Fuzz)' -timeout 15m $(SLOW_TESTS) ./...
	# The process layer's own probes (tag subakoprobe: a worker that tries to
	# escape, a guest with metering off), which no release build contains.
	SUBAKO_TEST_COMPILATION_CACHE=$(TEST_CACHE) $(GO) test -vet=off -tags subakoprobe -run '^TestWorker' -timeout 10m ./runtime/

# The real MCP clients the mcp command is tested against (the official
# TypeScript SDK, the Inspector's CLI and the official MCP conformance
# suite), pinned by testdata/mcp's lockfile.
# A failed install does not stop make test: the tests that need the clients
# then fail in CI (CI=true) saying why, and skip loudly elsewhere.
MCP_CLIENTS := testdata/mcp/node_modules/.package-lock.json

mcp-clients: $(MCP_CLIENTS)

$(MCP_CLIENTS): testdata/mcp/package.json testdata/mcp/package-lock.json
	@cd testdata/mcp && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error \
		|| echo "WARNING: npm ci failed in testdata/mcp: the mcp real-client tests cannot run"

test-short: fmt-check vet
	$(GO) test -short ./...

# Rebuild the committed fixtures that need toolchains CI does not have
# (clang + wasi-libc, wabt, rustc wasm32, AssemblyScript): every Makefile
# under testdata/ has a `fixtures` target; see the README beside each.
FIXTURE_DIRS := $(sort $(dir $(shell find testdata -name node_modules -prune -o -name Makefile -print)))

fixtures:
	@for d in $(FIXTURE_DIRS); do $(MAKE) -C $$d fixtures || exit 1; done

# The package set's soak (runtime/soak_set_test.go), as a backend runs it:
# about 260 packages (C, Go, misbehaving), 8 goroutines in a Zipf order, a
# budget that forces evictions, random cancels and tiny deadlines; a table
# of RSS, goroutines, descriptors, outcomes and Observer events per
# window. Not part of make test: SOAK_DURATION long (3m by default) after a
# few minutes of uploads, e.g. make soak SOAK_DURATION=15m SOAK_WINDOW=60.
SOAK_DURATION ?= 3m
SOAK_WINDOW ?= 30
soak:
	SUBAKO_SOAK_DURATION=$(SOAK_DURATION) SUBAKO_SOAK_WINDOW_SECONDS=$(SOAK_WINDOW) SUBAKO_TEST_COMPILATION_CACHE=$(TEST_CACHE) \
	  $(GO) test -count=1 -v -timeout 0 -run '^TestSoakPackageSet$$' ./runtime

# The benchmark table (bench/): ratios measured side by side in one run,
# about five minutes. BENCH_ARGS picks a subset or iteration counts, e.g.
#   make bench BENCH_ARGS='-only latency,fuel -calls 500'
bench:
	$(GO) run ./bench $(BENCH_ARGS)

# The official WASI testsuite (github.com/WebAssembly/wasi-testsuite, the
# prebuilt tests of its prod/testsuite-base branch; never part of this
# repository): every preview-1 test run by `subako-runner run` against its
# .json spec, ending with "N passed, M failed".
#   make wasi-testsuite WASI_TESTSUITE=/path/to/wasi-testsuite
wasi-testsuite: build
	@if [ -z "$(WASI_TESTSUITE)" ]; then echo "set WASI_TESTSUITE to a copy of the wasi-testsuite (its tests/ directory or above)"; exit 2; fi
	$(GO) run ./internal/devtools/wasitestsuite -runner $(BIN) $(WASI_TESTSUITE)

# Mutation testing (internal/devtools/mutants): plants each kept one-line bug in
# the security code (ranges and allowlist, write budget, WASI path and link
# rules, mount prefixes) through go test -overlay and expects its package's
# tests to fail; prints the score and the survivors. About 15 minutes.
#   make mutants MUTANTS=budget     only the mutants whose id contains it
MUTANTS ?= all
mutants:
	SUBAKO_MUTANTS=$(MUTANTS) SUBAKO_TEST_COMPILATION_CACHE=$(TEST_CACHE) $(GO) test -count=1 -v -timeout 90m -run TestMutantsAreKilled ./internal/devtools/mutants

# The generic operator mutants of go-gremlins over limits (the write
# budget), whose whole test suite is fast: about two minutes. Any package
# can be given: make gremlins GREMLINS_PKG=./fsmount (slower: gremlins
# runs the whole suite, not -short, for each mutant).
GREMLINS     := github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0
GREMLINS_PKG ?= ./limits
gremlins:
	$(GO) run $(GREMLINS) unleash --workers 1 $(GREMLINS_PKG)

clean:
	rm -rf bin $(DEMO_PKG)/module.wasm
