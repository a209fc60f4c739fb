# Liftoff: `make demo` records the bundled demo app; `make test` runs every test.
# Both install what a fresh Debian machine lacks before building: libunwind-dev for the sampler;
# `make test` also installs Chromium (to load the HTML report headless) and python3-jsonschema
# (to check speedscope output against speedscope's schema).

SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DEMO_OUT ?= Reports/demo

.PHONY: all deps test-deps build demo test bench clean

all: build

deps:
	@if ! pkg-config --exists libunwind 2>/dev/null; then \
		echo "Installing libunwind-dev (needed by the sampler)..."; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libunwind-dev pkg-config; \
	fi

test-deps: deps
	@missing=""; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	python3 -c "import jsonschema" >/dev/null 2>&1 || missing="$$missing python3-jsonschema"; \
	if [ -n "$$missing" ]; then \
		echo "Installing$$missing (the tests load the HTML report in a browser and validate speedscope files)..."; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

build: deps
	$(SWIFT) build

demo: build
	$(SWIFT) run liftoff demo --plan both --out $(DEMO_OUT)

test: test-deps build
	$(SWIFT) test

bench: deps
	rm -rf Reports/benchmarks/raw && mkdir -p Reports/benchmarks/raw
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark \
		--format histogramSamples --path ../Reports/benchmarks/raw --no-progress
	python3 Benchmarks/report.py Reports/benchmarks/raw Reports/benchmarks

clean:
	rm -rf .build Benchmarks/.build
