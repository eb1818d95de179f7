# agenthost build, run and test entry points. See README.md.
SHELL := /bin/bash
GO ?= go
BIN := bin
PLUGINS := agenthost-engine-mock agenthost-engine-native agenthost-engine-opencode agenthost-sandbox-local agenthost-sandbox-bwrap agenthost-toolpack-patch agenthost-toolpack-contract
PROTO_DIR := sdk/proto
PB_OUT := sdk/internal/pb

GOBIN := $(shell $(GO) env GOPATH)/bin
STATICCHECK_VERSION := v0.7.0
# A count, not a duration: Go 1.26's fuzz coordinator can report a spurious
# "context deadline exceeded" when a duration expires on a loaded machine
# (go.dev/issue/75804, fixed in Go 1.27); a count has no deadline to race.
FUZZTIME ?= 20000x

.PHONY: build tools ts run test cross bench fuzz proto lint clean soak

# Release builds: no symbol tables or DWARF (-s -w: the native engine drops
# from 96 MB), no local paths (-trimpath), and the version stamped from git.
# Tests build their binaries through host/internal/testenv without these.
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
BUILD_FLAGS := -trimpath -ldflags "-s -w -X github.com/agenthost/agenthost/host/version.Version=$(VERSION)"

# Platforms besides Linux the host, SDK and plugins must build for (make
# cross). The bwrap sandbox builds there too but only prints that it needs
# Linux (cmd/agenthost-sandbox-bwrap/main_other.go).
CROSS_PLATFORMS := darwin/amd64 darwin/arm64

# The OpenCode engine drives the real opencode binary, from the npm package
# opencode-ai at a pinned version, installed into tools/ (never globally).
# tools/opencode/bin/opencode links to this platform's binary.
OPENCODE_VERSION := 1.18.33
# zod for the seeded custom tools' arguments: the version
# @opencode-ai/plugin $(OPENCODE_VERSION) pins, bundled into one file
# (tools/opencode/zod.mjs) by the opencode binary's own Bun (BUN_BE_BUN).
ZOD_VERSION := 4.1.8
OPENCODE_STAMP := tools/opencode/.installed-$(OPENCODE_VERSION)-zod-$(ZOD_VERSION)
OPENCODE_ARCH := $(shell uname -m | sed -e 's/x86_64/x64/' -e 's/aarch64/arm64/')

tools: $(OPENCODE_STAMP)

$(OPENCODE_STAMP):
	@if ! command -v npm >/dev/null 2>&1; then \
	  echo "npm not found: the OpenCode engine stays unavailable (apt-get install npm, then make tools)"; exit 0; fi; \
	set -e; rm -rf tools/opencode; mkdir -p tools/opencode; \
	echo "installing opencode-ai@$(OPENCODE_VERSION) into tools/opencode"; \
	cd tools/opencode && npm install --no-audit --no-fund --ignore-scripts --no-save --loglevel=error --prefix . opencode-ai@$(OPENCODE_VERSION) zod@$(ZOD_VERSION); \
	mkdir -p bin; ln -sf ../node_modules/opencode-linux-$(OPENCODE_ARCH)/bin/opencode bin/opencode; \
	test "$$(./bin/opencode --version)" = "$(OPENCODE_VERSION)"; \
	printf 'export { z } from "zod";\n' > zod-entry.mjs; \
	BUN_BE_BUN=1 ./bin/opencode build --target=bun --format=esm --minify zod-entry.mjs --outfile zod.mjs >/dev/null; \
	test -s zod.mjs; touch $(notdir $(OPENCODE_STAMP))

build: tools ts
	$(GO) build $(BUILD_FLAGS) -o $(BIN)/agenthost ./cmd/agenthost
	@mkdir -p $(BIN)/plugins
	@for p in $(PLUGINS); do $(GO) build $(BUILD_FLAGS) -o $(BIN)/plugins/$$p ./cmd/$$p || exit 1; done

# The TypeScript SDK (sdk/typescript) and its echo engine example, built
# with their pinned npm dependencies (npm ci from each package-lock.json,
# again only when a lock changes) and bundled into one file in the plugin
# dir: examples/engine-echo-ts/echo-ts.hcl launches it with node. Without
# npm the Go side still builds; the TypeScript tests then skip (CI fails).
TS_PACKAGES := sdk/typescript examples/engine-echo-ts

ts:
	@if ! command -v npm >/dev/null 2>&1; then 	  echo "npm not found: the TypeScript SDK and example are not built (apt-get install npm, then make build)"; exit 0; fi; 	set -e; for d in $(TS_PACKAGES); do 	  if [ ! -f $$d/node_modules/.ci-stamp ] || [ $$d/package-lock.json -nt $$d/node_modules/.ci-stamp ]; then 	    echo "npm ci in $$d"; (cd $$d && npm ci --no-audit --no-fund --loglevel=error) && touch $$d/node_modules/.ci-stamp; fi; 	  (cd $$d && npm run --silent build); 	done; 	mkdir -p $(BIN)/plugins; cp examples/engine-echo-ts/dist/agenthost-engine-echo-ts.js $(BIN)/plugins/

# A local token for the quick start; the host listens on 127.0.0.1 only by
# default. Set your own (or none) for anything shared.
AGENTHOST_BOOTSTRAP_TOKEN ?= dev-token
export AGENTHOST_BOOTSTRAP_TOKEN

run: build
	@# The native engine is off by policy unless enabled; a local host
	@# enables it (it still needs a model: see the README).
	APPS_CODING_AGENT_NATIVE_ENABLED=$${APPS_CODING_AGENT_NATIVE_ENABLED:-1} $(BIN)/agenthost serve

test: build cross
	@# Every module go.mod lists, into the module cache: the scaffold test
	@# builds new plugin modules against this checkout with no network.
	$(GO) mod download
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 20m ./...
	@# The runs API suite again with the bubblewrap sandbox swapped in for
	@# local, as an operator swaps it (needs Linux and bwrap; .ci/run
	@# installs it).
	@if command -v bwrap >/dev/null 2>&1; then \
	  echo "runs API suite on the bwrap sandbox:"; \
	  AGENTHOST_TEST_SANDBOX=bwrap $(GO) test -count=1 -timeout 10m ./host/api/; \
	else echo "bwrap not installed: the runs API suite on bwrap is skipped (.ci/run installs it)"; fi
	@echo "store tests per dialect (PostgreSQL runs when TEST_DATABASE_URL is set):"
	@$(GO) test -count=1 -v -run 'TestMigrations|TestEventLog$$' ./host/store/ | grep -E -- '--- (PASS|FAIL|SKIP).*/(sqlite|postgres)'

# Every command for each of CROSS_PLATFORMS (compiled and linked, then
# discarded), and go vet there, which also type-checks the test files. Cheap
# once the build cache is warm: links are never cached, and -s -w (no DWARF)
# makes them about a third faster.
cross:
	@set -e; for p in $(CROSS_PLATFORMS); do \
	  echo "build and vet for $$p"; \
	  GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -ldflags "-s -w" ./cmd/...; \
	  GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet ./...; \
	done

# Every benchmark BENCHCOUNT times (benchstat wants several runs), written
# to bench.txt, then issue 16's targets as ratios to the floors measured in
# the same run (host/internal/benchratio: medians over the runs). BENCH
# narrows the benchmarks (a go test -bench pattern), BENCHPKGS the packages;
# the table is printed even when a benchmark failed, and the failure is
# still the exit status. -p 1 runs one package's benchmarks at a time:
# go test otherwise runs packages' test binaries side by side (and links
# the next ones meanwhile), so on a 2-core machine one package's benchmark
# shared the cores with another's and every figure was off (a tool call
# measured 1.74 ms beside the others, 1.11 ms alone).
BENCHCOUNT ?= 6
BENCH ?= .
BENCHPKGS ?= ./...

bench: build
	@set -o pipefail; \
	$(GO) test -p 1 -run '^$$' -bench '$(BENCH)' -benchmem -count $(BENCHCOUNT) -timeout 30m $(BENCHPKGS) | tee bench.txt; status=$$?; \
	echo; $(GO) run ./host/internal/benchratio bench.txt || status=$$?; exit $$status

# The soak test (host/soak): a real host per database dialect, side by
# side, each kept busy for SOAK_DURATION by 20 chat sessions of mock turns
# with tool calls; it fails on any error, or when a host's or a plugin's
# memory or file descriptors, or a host's goroutines, end more than 10%
# from where they were after warm-up. PostgreSQL needs TEST_DATABASE_URL.
# The test builds its own binaries (TestMain). The timeout is the duration
# plus 10m: units written one after the other add up in a Go duration
# (2m10m is 12m, 1h10m is 1h10m).
SOAK_DURATION ?= 2m

soak:
	$(GO) test ./host/soak/ -run Soak -count=1 -timeout $(SOAK_DURATION)10m -v -args -soak.duration=$(SOAK_DURATION)

# The generators at the versions that wrote sdk/internal/pb (see the
# headers there), installed into tools/bin from the Go module proxy;
# protoc itself comes from the system (apt-get install protobuf-compiler).
PROTOC_GEN_GO_VERSION := v1.36.10
PROTOC_GEN_GO_GRPC_VERSION := v1.5.1
PROTO_TOOLS := $(CURDIR)/tools/bin

proto:
	GOBIN=$(PROTO_TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$(PROTO_TOOLS) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	protoc -I $(PROTO_DIR) \
	  --plugin=protoc-gen-go=$(PROTO_TOOLS)/protoc-gen-go --plugin=protoc-gen-go-grpc=$(PROTO_TOOLS)/protoc-gen-go-grpc \
	  --go_out=. --go_opt=module=github.com/agenthost/agenthost \
	  --go-grpc_out=. --go-grpc_opt=module=github.com/agenthost/agenthost \
	  $$(find $(PROTO_DIR) -name '*.proto')

# Each fuzz target for FUZZTIME (go test -fuzz takes one target at a time).
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzResolvePath$$' -fuzztime $(FUZZTIME) ./sdk/workspace/dirfs/
	$(GO) test -run '^$$' -fuzz '^FuzzPathPolicy$$' -fuzztime $(FUZZTIME) ./plugins/toolpack-patch/
	$(GO) test -run '^$$' -fuzz '^FuzzParseScript$$' -fuzztime $(FUZZTIME) ./plugins/engine-mock/
	$(GO) test -run '^$$' -fuzz '^FuzzParseConfig$$' -fuzztime $(FUZZTIME) ./host/pluginmgr/
	$(GO) test -run '^$$' -fuzz '^FuzzCheck$$' -fuzztime $(FUZZTIME) ./host/toolinput/
	$(GO) test -run '^$$' -fuzz '^FuzzOutline$$' -fuzztime $(FUZZTIME) ./plugins/toolpack-patch/internal/outline/
	$(GO) test -run '^$$' -fuzz '^FuzzRank$$' -fuzztime $(FUZZTIME) ./plugins/toolpack-patch/internal/outline/
	$(GO) test -run '^$$' -fuzz '^FuzzParseUnified$$' -fuzztime $(FUZZTIME) ./plugins/toolpack-patch/internal/diffpatch/
	$(GO) test -run '^$$' -fuzz '^FuzzParseBeginPatch$$' -fuzztime $(FUZZTIME) ./plugins/toolpack-patch/internal/diffpatch/

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt: $$out"; exit 1; fi
	$(GO) vet ./...
	@test -x $(GOBIN)/staticcheck || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(GOBIN)/staticcheck ./...

clean:
	rm -rf $(BIN) sdk/typescript/dist sdk/typescript/src/generated examples/engine-echo-ts/dist
