# Liftoff: `make demo` records the bundled demo app; `make test` runs every test.
# Both install what a fresh Debian machine lacks (libunwind-dev) before building.

SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DEMO_OUT ?= Reports/demo

.PHONY: all deps build demo test bench clean

all: build

deps:
	@if ! pkg-config --exists libunwind 2>/dev/null; then \
		echo "Installing libunwind-dev (needed by the sampler)..."; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libunwind-dev pkg-config; \
	fi

build: deps
	$(SWIFT) build

demo: build
	$(SWIFT) run liftoff demo --plan both --out $(DEMO_OUT)

test: build
	$(SWIFT) test

bench: deps
	rm -rf Reports/benchmarks/raw && mkdir -p Reports/benchmarks/raw
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark \
		--format histogramSamples --path ../Reports/benchmarks/raw --no-progress
	python3 Benchmarks/report.py Reports/benchmarks/raw Reports/benchmarks

clean:
	rm -rf .build Benchmarks/.build
