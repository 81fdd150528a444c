# stax build. `make` builds bin/stax and the JIT Profiling API collector beside it.
GO ?= go
BIN := bin

.PHONY: all build demo test test-unit fuzz bench screenshots clean

all: build

build:
	$(GO) build -o $(BIN)/stax ./cmd/stax
	collector/build.sh $(BIN)
	$(GO) build -o $(BIN)/toyjit ./examples/toyjit

# Record the bundled toy JIT (two loops generated at run time, 1:2 work) and show its
# functions by name.
demo: build
	$(BIN)/stax record -q -- $(BIN)/toyjit -cpu 3s
	$(BIN)/stax top -n 10
	$(BIN)/stax flame -d 8

test:
	$(GO) test -race -count=1 -timeout 60m ./...

# The unit tests alone: no root, no perf_event_open, no browser, no end-to-end runs.
test-unit:
	$(GO) test -short -count=1 -timeout 10m $$($(GO) list ./... | grep -v /internal/e2e)

# Each fuzz target of the packages changed in the last day, FUZZTIME (30s) apiece.
fuzz:
	.ci/fuzz-changed

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Refresh the web UI's screenshots in docs/ from the browser tests.
screenshots:
	STAX_SCREENSHOTS=$(CURDIR)/docs $(GO) test -count=1 -run 'TestWebShowsToyJIT|TestWebTimelineSelectsAPhase|TestWebLinkDrawsWhatFlameSays|TestWebDiffColoursGrowth|TestWebTracepointFields' ./internal/e2e

clean:
	rm -rf $(BIN)
