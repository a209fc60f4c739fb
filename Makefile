# Liftoff: `make demo` records the bundled demo app; `make test` runs every test.
# Both install what a fresh Debian machine lacks before building: libunwind-dev for the sampler,
# libdw-dev (elfutils) for source lines and inlined frames, libc6-dbg, whose separate debug
# file names libc's internal functions, and zlib1g-dev (pprof's gzip);
# `make test` also installs Chromium with chromium-driver and python3-selenium (to load the HTML
# report headless and drive it as a user would) and python3-jsonschema (to check profiles and
# speedscope output against their schemas), and golang-go (Go's pprof reads the pprof export).

SWIFT ?= swift
# The test-only Python packages (opentelemetry-proto).
TEST_VENV ?= .build/test-venv
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DEMO_OUT ?= Reports/demo

.PHONY: pprof-proto all assets deps test-deps build build-tests demo install uninstall test-install docs test test-under-load examples test-server-example fuzz fuzz-smoke bench bench-agent bench-observer bench-spread bench-history bench-sampler bench-cache bench-reports bench-counts perf-agreement changepoint-vectors clean

all: build

deps:
	@missing=""; \
	pkg-config --exists libunwind 2>/dev/null || missing="$$missing libunwind-dev pkg-config"; \
	[ -f /usr/include/elfutils/libdw.h ] || missing="$$missing libdw-dev"; \
	dpkg -s libc6-dbg >/dev/null 2>&1 || missing="$$missing libc6-dbg"; \
	[ -f /usr/include/zlib.h ] || missing="$$missing zlib1g-dev"; \
	[ -f /usr/include/lzma.h ] || missing="$$missing liblzma-dev"; \
	if [ -n "$$missing" ]; then \
		echo "Installing$$missing (the sampler, source lines, names for libc's internal functions and for MiniDebugInfo)..."; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	@# OpenTelemetry's own classes read the OTLP files the tests write (PyPI, test-only).
	@$(TEST_VENV)/bin/python -c "import opentelemetry.proto.profiles.v1development" 2>/dev/null || { \
		python3 -c "import ensurepip" 2>/dev/null || { $(SUDO) apt-get update -qq && \
			$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv; }; \
		rm -rf $(TEST_VENV) && python3 -m venv $(TEST_VENV) && \
		$(TEST_VENV)/bin/pip install --quiet opentelemetry-proto==1.45.2; }

test-deps: deps
	@missing=""; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v chromedriver >/dev/null 2>&1 || missing="$$missing chromium-driver"; \
	/usr/bin/python3 -c "import selenium" >/dev/null 2>&1 || missing="$$missing python3-selenium"; \
	python3 -c "import jsonschema" >/dev/null 2>&1 || missing="$$missing python3-jsonschema"; \
	command -v go >/dev/null 2>&1 || missing="$$missing golang-go"; \
	command -v valgrind >/dev/null 2>&1 || missing="$$missing valgrind"; \
	command -v objcopy >/dev/null 2>&1 || missing="$$missing binutils"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	if [ -n "$$missing" ]; then \
		echo "Installing$$missing (the tests drive the HTML report in a browser, validate JSON files, read pprof with Go's pprof, count launches with valgrind and keep a launch history in PostgreSQL)..."; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

# The HTML pages' CSS and JavaScript live in Sources/LiftoffReports/Assets; this embeds them into
# Sources/LiftoffReports/Generated/HTMLReportAssets.swift (a test fails while that file is stale).
assets:
	python3 scripts/embed_assets.py

# The command line and the agent it injects: a plain `swift build` would also build the tools of
# the dependencies (swift-protobuf's protoc, ArgumentParser's generators), which nothing here runs.
build: deps
	$(SWIFT) build --product liftoff
	$(SWIFT) build --product LiftoffAgent
	$(SWIFT) build --product LiftoffAudit
	$(SWIFT) build --product LiftoffCount

demo: build
	$(SWIFT) run --skip-build liftoff demo --plan both --out $(DEMO_OUT)

# `make install PREFIX=/usr/local` (DESTDIR for a staged install): bin/liftoff, built in release
# with the Swift runtime linked in (it runs where no Swift toolchain is), lib/liftoff/ with the
# agent and the audit library it injects, the counted launches' preload and the demo's resources (liftoff finds them from its own
# folder, so the installation can be moved), the man page (ArgumentParser's generate-manual) and
# the bash, zsh and fish completions. `make uninstall PREFIX=...` removes exactly those files.
PREFIX ?= /usr/local
INSTALL_ROOT = $(DESTDIR)$(PREFIX)
INSTALL_SCRATCH := .build-install
INSTALL_BUILD := $(SWIFT) build -c release --scratch-path $(INSTALL_SCRATCH)
INSTALL_PRODUCTS := $(INSTALL_SCRATCH)/release
INSTALLED_FILES = bin/liftoff lib/liftoff share/man/man1/liftoff.1 share/bash-completion/completions/liftoff \
	share/zsh/site-functions/_liftoff share/fish/vendor_completions.d/liftoff.fish
install: deps
	$(INSTALL_BUILD) --product LiftoffAgent
	$(INSTALL_BUILD) --product LiftoffAudit
	$(INSTALL_BUILD) --product LiftoffCount
	$(INSTALL_BUILD) --product generate-manual
	$(INSTALL_BUILD) --static-swift-stdlib --product liftoff
	@set -e; root="$(INSTALL_ROOT)"; products="$(INSTALL_PRODUCTS)"; \
	install -d "$$root/bin" "$$root/lib/liftoff" "$$root/share/man/man1" "$$root/share/bash-completion/completions" \
		"$$root/share/zsh/site-functions" "$$root/share/fish/vendor_completions.d"; \
	objcopy --strip-debug "$$products/liftoff" "$$root/bin/.liftoff.new"; \
	chmod 755 "$$root/bin/.liftoff.new"; mv -f "$$root/bin/.liftoff.new" "$$root/bin/liftoff"; \
	install -m 755 "$$products/libLiftoffAgent.so" "$$products/libLiftoffAudit.so" "$$products/libLiftoffCount.so" "$$root/lib/liftoff/"; \
	rm -rf "$$root/lib/liftoff/Liftoff_LiftoffDemo.resources"; \
	cp -R "$$products/Liftoff_LiftoffDemo.resources" "$$root/lib/liftoff/"; \
	manual=$$(mktemp -d); "$$products/generate-manual" "$$products/liftoff" --output-directory "$$manual"; \
	install -m 644 "$$manual/liftoff.1" "$$root/share/man/man1/liftoff.1"; rm -rf "$$manual"; \
	"$$root/bin/liftoff" --generate-completion-script bash > "$$root/share/bash-completion/completions/liftoff"; \
	"$$root/bin/liftoff" --generate-completion-script zsh > "$$root/share/zsh/site-functions/_liftoff"; \
	"$$root/bin/liftoff" --generate-completion-script fish > "$$root/share/fish/vendor_completions.d/liftoff.fish"; \
	echo "Installed liftoff $$("$$root/bin/liftoff" --version) in $$root (bin/liftoff, lib/liftoff/, the man page, completions)."

uninstall:
	@cd "$(INSTALL_ROOT)" 2>/dev/null || { echo "Nothing to uninstall: $(INSTALL_ROOT) does not exist."; exit 0; }; \
	for file in $(INSTALLED_FILES); do rm -rf "$(INSTALL_ROOT)/$$file"; done; \
	echo "Removed liftoff from $(INSTALL_ROOT)."

# make install into a temporary prefix, then moved, used from elsewhere with no Swift toolchain in
# sight, its man page and completions checked, and make uninstall (CI runs it after make test).
test-install:
	scripts/test-install.sh

# The DocC catalogs (every Sources/*/Documentation.docc, the modules .spi.yml names), built with
# swift-docc-plugin into .build-docs/plugins/Swift-DocC/outputs/, warnings counted as errors.
DOC_TARGETS := $(patsubst Sources/%/Documentation.docc,%,$(wildcard Sources/*/Documentation.docc))
docs: deps
	$(SWIFT) package --scratch-path .build-docs generate-documentation --warnings-as-errors $(addprefix --target ,$(DOC_TARGETS))
	@echo "The documentation archives are in .build-docs/plugins/Swift-DocC/outputs/ (docc preview, or any static host)."

# What `make test` runs, and nothing more: the package's tests (one product, LiftoffPackageTests;
# they replay the fuzz targets' corpus) and what they run (the command line, the agent and the
# audit library), then the examples (but the server). `swift build --build-tests` would also build
# the tools of the dependencies' plugins (swift-protobuf's protoc-gen-swift, ArgumentParser's
# generate-manual, DocC's snippet-extract), which no test runs. The libFuzzer builds are
# `make fuzz-smoke` and `make fuzz`.
build-tests: deps
	$(SWIFT) build --product LiftoffPackageTests
	$(SWIFT) build --product liftoff
	$(SWIFT) build --product LiftoffAgent
	$(SWIFT) build --product LiftoffAudit
	$(SWIFT) build --product LiftoffCount

# A test process that crashes prints every thread's stack, unwound through the C library's frames
# (which keep no frame pointer) by their unwind tables.
TEST_BACKTRACE := SWIFT_BACKTRACE=enable=yes,unwind=precise,limit=128
test: test-deps build-tests
	$(TEST_BACKTRACE) $(SWIFT) test --skip-build
	$(MAKE) examples

# The unit tests with both cores kept busy by `stress`: timing-sensitive tests must still pass.
# TEST_RUNS (1 by default) runs them that many times in a row and stops at the first failure;
# each run's time is printed.
TEST_RUNS ?= 1
test-under-load: test-deps build-tests
	@command -v stress >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq stress; }
	@setsid stress --cpu 2 --quiet & load=$$!; status=0; \
	for run in $$(seq 1 $(TEST_RUNS)); do \
		start=$$(date +%s); \
		$(TEST_BACKTRACE) $(SWIFT) test --skip-build; status=$$?; \
		echo "== under load, run $$run of $(TEST_RUNS): exit $$status after $$(( $$(date +%s) - start )) s"; \
		[ $$status -eq 0 ] || break; \
	done; \
	kill -- -$$load; wait $$load 2>/dev/null; exit $$status

# libFuzzer targets (Fuzz/): the profile loader with every renderer, the scenario parser, the
# --baseline command-line splitter and the callgrind reader. Built with -sanitize=fuzzer and linked with lld.
FUZZ_TARGETS := FuzzProfile FuzzScenario FuzzShellWords FuzzCallgrind FuzzHistory
FUZZ_SECONDS ?= 600
FUZZ_BUILD := $(SWIFT) build --package-path Fuzz --scratch-path Fuzz/.build-fuzz \
	-Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING -Xswiftc -use-ld=lld

# Each target for FUZZ_SECONDS (10 minutes by default), starting from the committed corpus; new
# inputs go to Fuzz/findings/NAME, crashes to Fuzz/crashes/ (add each as a regression test).
fuzz: deps
	$(FUZZ_BUILD)
	@mkdir -p Fuzz/crashes
	@for target in $(FUZZ_TARGETS); do \
		name=$$(echo $$target | sed 's/^Fuzz//' | tr A-Z a-z); \
		mkdir -p Fuzz/findings/$$name; \
		echo "== $$target for $(FUZZ_SECONDS) s"; \
		Fuzz/.build-fuzz/debug/$$target Fuzz/findings/$$name Fuzz/Corpus/$$name -max_total_time=$(FUZZ_SECONDS) \
			-max_len=65536 -artifact_prefix=Fuzz/crashes/$$name- -print_final_stats=1 || exit 1; \
	done

# What CI runs after `make test`: the targets built with libFuzzer, the committed corpus replayed,
# then a few seconds of fuzzing per target.
fuzz-smoke: deps
	$(FUZZ_BUILD)
	@for target in $(FUZZ_TARGETS); do \
		name=$$(echo $$target | sed 's/^Fuzz//' | tr A-Z a-z); \
		scratch=$$(mktemp -d); \
		echo "== $$target"; \
		Fuzz/.build-fuzz/debug/$$target $$scratch Fuzz/Corpus/$$name -max_total_time=5 -max_len=65536 \
			-artifact_prefix=$$scratch/ || { rm -rf $$scratch; exit 1; }; \
		rm -rf $$scratch; \
	done

# Regenerates Sources/LiftoffPprof/Generated/pprof.pb.swift from Proto/pprof.proto with protoc
# (Debian's protobuf-compiler) and swift-protobuf's protoc-gen-swift, built once from the
# package store (it takes minutes; the generated file is committed, so builds never need it).
pprof-proto:
	@command -v protoc >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq protobuf-compiler; }
	@[ -d .build/swift-protobuf ] || git clone -q https://github.com/apple/swift-protobuf .build/swift-protobuf
	cd .build/swift-protobuf && git checkout -q 1.39.0 && $(SWIFT) build --product protoc-gen-swift
	protoc --plugin=protoc-gen-swift=.build/swift-protobuf/.build/debug/protoc-gen-swift --swift_out=Sources/LiftoffPprof/Generated \
		--swift_opt=Visibility=Public -I Sources/LiftoffPprof/Proto Sources/LiftoffPprof/Proto/pprof.proto \
		Sources/LiftoffPprof/Proto/otlp_profiles.proto

# Every package in Examples/ depends on this checkout by path: build it and run its tests. They
# share one scratch folder, so this package's modules, built as their dependency, compile once for
# all of them. The server example builds Hummingbird and SwiftNIO, minutes on two cores: it has
# its own target, test-server-example, which CI runs after make test.
EXAMPLES_SCRATCH := $(CURDIR)/.build-examples
SERVER_EXAMPLE := Examples/Server/
EXAMPLES := $(filter-out $(SERVER_EXAMPLE),$(dir $(wildcard Examples/*/Package.swift)))
EXAMPLE_TEST = (cd $(1) && $(SWIFT) build --build-tests --scratch-path $(EXAMPLES_SCRATCH) && \
	$(SWIFT) test --skip-build --scratch-path $(EXAMPLES_SCRATCH))
examples: deps
	@for package in $(EXAMPLES); do \
		echo "== $$package"; \
		$(call EXAMPLE_TEST,$$package) || exit 1; \
	done

# The server example's test records and compares its launches with this package's liftoff. Its
# suites run one after another: the throughput suite keeps both cores busy, and a suite beside it
# that compares samples with CPU time would measure that contention instead of the sampler.
test-server-example: deps build
	@echo "== $(SERVER_EXAMPLE)"
	@cd $(SERVER_EXAMPLE) && $(SWIFT) build --build-tests --scratch-path $(EXAMPLES_SCRATCH) && \
		$(SWIFT) test --skip-build --no-parallel --scratch-path $(EXAMPLES_SCRATCH)

# The launch benchmarks run the release `liftoff` binary.
bench: deps
	$(SWIFT) build -c release --product liftoff
	$(SWIFT) build -c release --product LiftoffAgent
	$(SWIFT) build -c release --product LiftoffAudit
	$(SWIFT) build -c release --product LiftoffCount
	rm -rf Reports/benchmarks/raw && mkdir -p Reports/benchmarks/raw
	cd Benchmarks && LIFTOFF_BINARY=../.build/release/liftoff $(SWIFT) package --allow-writing-to-package-directory \
		benchmark --skip 'interleaved: observer.*' --format histogramSamples --path ../Reports/benchmarks/raw --no-progress
	$(MAKE) bench-observer
	python3 scripts/perf_agreement.py .build/release/liftoff Reports/benchmarks/perf-agreement.md --slowdown 1000% || { rm -f Reports/benchmarks/perf-agreement.md; echo "perf is unavailable: sampler.md has no agreement section"; }
	python3 Benchmarks/report.py Reports/benchmarks/raw Reports/benchmarks

# The agent's benchmarks alone: the launch of /bin/true, the audit library and the process trees
# beside perf (agent.md), without the hour the whole set takes.
bench-agent: deps
	$(SWIFT) build -c release --product liftoff
	$(SWIFT) build -c release --product LiftoffAgent
	$(SWIFT) build -c release --product LiftoffAudit
	$(SWIFT) build -c release --product LiftoffCount
	rm -rf Reports/benchmarks/raw-agent && mkdir -p Reports/benchmarks/raw-agent
	cd Benchmarks && LIFTOFF_BINARY=../.build/release/liftoff $(SWIFT) package --allow-writing-to-package-directory \
		benchmark --target CompareBenchmarks --filter 'paired agent.*|paired audit.*|interleaved: process tree.*' \
		--format histogramSamples --path ../Reports/benchmarks/raw-agent --no-progress
	python3 Benchmarks/report.py --only agent Reports/benchmarks/raw-agent Reports/benchmarks

# The observer effect on a launch, three runs in a row (observer.md reports the worst), beside perf.
OBSERVER_RUNS ?= 1 2 3
bench-observer: deps
	for run in $(OBSERVER_RUNS); do \
		rm -rf Reports/benchmarks/raw/observer-$$run && mkdir -p Reports/benchmarks/raw/observer-$$run && \
		(cd Benchmarks && LIFTOFF_BINARY=../.build/release/liftoff $(SWIFT) package \
			--allow-writing-to-package-directory benchmark --target CompareBenchmarks --filter 'interleaved: observer.*' \
			--format histogramSamples --path ../Reports/benchmarks/raw/observer-$$run --no-progress) || exit 1; \
	done

# The sampler, scheduler and launch targets three times in a row: the spread between runs.
SPREAD_RUNS ?= 1 2 3
bench-spread: deps
	$(SWIFT) build -c release --product liftoff
	for run in $(SPREAD_RUNS); do \
		rm -rf Reports/benchmarks/spread/raw-$$run && mkdir -p Reports/benchmarks/spread/raw-$$run && \
		(cd Benchmarks && LIFTOFF_BINARY=../.build/release/liftoff $(SWIFT) package \
			--allow-writing-to-package-directory benchmark --target SamplerBenchmarks --target SchedulerBenchmarks \
			--target CompareBenchmarks --filter 'paired.*|interleaved.*' --format histogramSamples \
			--path ../Reports/benchmarks/spread/raw-$$run --no-progress) || exit 1; \
	done
	python3 Benchmarks/report.py --spread Reports/benchmarks $(foreach run,$(SPREAD_RUNS),Reports/benchmarks/spread/raw-$(run))

# The launch history: analyzing 1,000 commits of 50 metrics, and adding one commit, each paired
# with a baseline (reading the entries; loading the runs) in the same run.
# Reading a 50 MB callgrind output (counts.md).
bench-counts:
	rm -rf Reports/benchmarks/raw-counts && mkdir -p Reports/benchmarks/raw-counts
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark --target CountBenchmarks \
		--format histogramSamples --path ../Reports/benchmarks/raw-counts --no-progress
	python3 Benchmarks/report.py --only counts Reports/benchmarks/raw-counts Reports/benchmarks

# Every report format, explain, and the path to ready with coverage, on 1,000,000 samples (reports.md).
bench-reports:
	rm -rf Reports/benchmarks/raw-reports && mkdir -p Reports/benchmarks/raw-reports
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark --target ReportBenchmarks \
		--format histogramSamples --path ../Reports/benchmarks/raw-reports --no-progress
	python3 Benchmarks/report.py --only reports Reports/benchmarks/raw-reports Reports/benchmarks

# The sampler alone (sampler.md): what sampling costs a running thread beside bare signals, idle
# threads, one sample, walks.
bench-sampler:
	rm -rf Reports/benchmarks/raw-sampler && mkdir -p Reports/benchmarks/raw-sampler
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark --target SamplerBenchmarks \
		--format histogramSamples --path ../Reports/benchmarks/raw-sampler --no-progress
	python3 Benchmarks/report.py --only sampler Reports/benchmarks/raw-sampler Reports/benchmarks

# Evicting and checking a 100 MB file set for --cache cold (cache.md), beside the kernel's eviction alone.
bench-cache:
	rm -rf Reports/benchmarks/raw-cache && mkdir -p Reports/benchmarks/raw-cache
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark --target CacheBenchmarks \
		--format histogramSamples --path ../Reports/benchmarks/raw-cache --no-progress
	python3 Benchmarks/report.py --only cache Reports/benchmarks/raw-cache Reports/benchmarks

bench-history:
	rm -rf Reports/benchmarks/raw-history && mkdir -p Reports/benchmarks/raw-history
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark --target HistoryBenchmarks \
		--format histogramSamples --path ../Reports/benchmarks/raw-history --no-progress
	python3 Benchmarks/report.py --only history Reports/benchmarks/raw-history Reports/benchmarks

# One demo launch recorded by perf and by Liftoff at once; their leaf-function distributions compared.
perf-agreement: build
	python3 scripts/perf_agreement.py .build/debug/liftoff Reports/benchmarks/perf-agreement.md --slowdown 1000%

# The change-point test vectors (Tests/LiftoffHistoryTests/ChangePointVectors.swift) from Apache
# Otava itself, in a virtual environment of its own: its change-point code needs only NumPy and
# SciPy (Debian's python3-numpy and python3-scipy), so its service clients are not installed.
OTAVA_VENV ?= .build/otava-venv
changepoint-vectors:
	python3 -c "import numpy, scipy" 2>/dev/null || $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-numpy python3-scipy
	test -x $(OTAVA_VENV)/bin/python || python3 -m venv --system-site-packages $(OTAVA_VENV)
	$(OTAVA_VENV)/bin/pip install --quiet --no-deps apache-otava==0.8.0
	$(OTAVA_VENV)/bin/python scripts/changepoint_vectors.py

clean:
	rm -rf .build .build-install .build-docs Benchmarks/.build .build-examples $(addsuffix .build,$(EXAMPLES) $(SERVER_EXAMPLE)) Fuzz/.build Fuzz/.build-fuzz
