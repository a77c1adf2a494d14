# react-torch: every developer and CI entry point. `make help` lists them.
GO      ?= go
BUILD   := build
REACT   := $(BUILD)/react

.PHONY: help demo test test-go vet bench build deps clean

help:
	@echo "make demo   run the main job on its embedded default"
	@echo "make test   install what the tests need, then run every test"
	@echo "make bench  run the Go benchmarks"
	@echo "make build  build the react command into $(BUILD)/"

deps:
	$(GO) mod download

build: deps
	$(GO) build -o $(REACT) ./cmd/react

demo: build
	$(REACT) pattern --op allreduce --algo tree --ranks 16 --format text
	$(REACT) pattern --op allreduce --algo tree --ranks 16 --format json | $(REACT) pattern check -

vet: deps
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

test-go: deps
	$(GO) test -count=1 ./...

test: vet test-go

bench: deps
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/...

clean:
	rm -rf $(BUILD)
