# AssetPack — build, test and demo. Every target installs missing system packages itself.
SHELL := /bin/bash
export PATH := /opt/swift/usr/bin:$(PATH)
SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DEMO_DIR ?= $(CURDIR)/.demo
SAMPLE_PASSWORD := assetpack-sample
# Release builds link the Swift runtime and Foundation into the binary (~5 ms less process start on
# every command here: no dynamic loading of them; and the binary runs where no Swift is installed).
# docs/PERFORMANCE.md, "Process start". Every release build uses it, so none relinks another's way.
RELEASE = -c release --static-swift-stdlib
RELEASE_BIN = $(shell $(SWIFT) build $(RELEASE) --show-bin-path)/assetpack
# Every suite is Swift Testing: without XCTest's runner there is no "Executed 0 tests" from its empty run.
SWIFT_TEST = $(SWIFT) test --disable-xctest

.PHONY: deps test-deps build release install test test-full demo fmt lint samples clean tsan asan fuzz portable

## deps: install the C libraries' headers with apt when missing: libzip, zlib, OpenSSL (the AES-ECB keystream),
## libdeflate, libzstd, and libcurl (remote packs).
deps:
	@if ! pkg-config --exists libzip zlib libcrypto libdeflate libzstd libcurl 2>/dev/null; then \
	  echo "installing libzip-dev zlib1g-dev libssl-dev libdeflate-dev libzstd-dev libcurl4-openssl-dev pkg-config"; \
	  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libzip-dev zlib1g-dev libssl-dev libdeflate-dev libzstd-dev libcurl4-openssl-dev pkg-config; \
	fi

## test-deps: what the tests need beyond the libraries: nginx, Apache httpd and lighttpd (remote-pack
## tests against real servers), python3 (the fault-injecting HTTP server) and openssl (the TLS tests' CA).
test-deps: deps
	@if [ ! -x /usr/sbin/nginx ] || [ ! -x /usr/sbin/apache2 ] || [ ! -x /usr/sbin/lighttpd ] \
	  || ! command -v python3 >/dev/null || [ ! -x /usr/bin/openssl ]; then \
	  echo "installing nginx-light apache2 lighttpd python3 openssl"; \
	  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light apache2 lighttpd python3 openssl; \
	fi

build: deps
	$(SWIFT) build

## release: the assetpack binary only (what demo runs; not the fuzz stubs or test helpers).
release: deps
	$(SWIFT) build $(RELEASE) --product assetpack
	@if ldd "$(RELEASE_BIN)" | grep -E '/lib/swift/|libswift|libFoundation|libdispatch|libBlocksRuntime|_FoundationICU'; then \
	  echo "release: $(RELEASE_BIN) loads the above from the toolchain: the Swift runtime was to be linked in"; exit 1; fi

## test: the fast tier: every module's unit tests and an end-to-end slice of the CLI (each command
## run as the built binary), without the suites and tests marked `.slow` (a condition trait,
## Tests/AssetPackTestSupport/TestTier.swift, off when ASSETPACK_TESTS=fast; they show as skipped):
## the seeded, size and byte-flip sweeps, the concurrency stress, the remote suites that start real or
## fault-injecting servers, the interrupt and crash loops, interop with 7-Zip and pyzipper.
## test-full (what .ci/run runs): everything.

## What the tests need, built by name: the two binaries the end-to-end tests run and the test bundle.
## A bare `swift build` or `swift test` also builds every plugin's tool a second time for the host
## (the library chain under PackAssets, ArgumentParser under its plugins): ~40 s of a cold build that
## no test uses.
BUILD_FOR_TESTS = $(SWIFT) build --product assetpack && $(SWIFT) build --product assetpack-pack \
	  && $(SWIFT) build --product AssetPackPackageTests

test: test-deps
	$(BUILD_FOR_TESTS)
	ASSETPACK_TESTS=fast $(SWIFT_TEST) --skip-build

## test-full (what .ci/run runs): every test, as three test processes at once, split by test
## target: the CLI's suites, the remote ones, and the rest (each shard a regular expression over
## test IDs). Measured 2026-11-28 on 2 cores: 226 s, the rest 206 s, the CLI 216 s, remote 46 s;
## the cores are then full: a fourth process (the CLI suites split in two) took 229 s, and the
## three of scripts/slow-tests.py (fast tier, slow tier in two) 239 s. Swift Testing runs as many
## tests at a time as there are cores, and most slow tests wait (on servers, deadlines, child
## processes), so the extra processes keep the cores busy. `swift test` holds a
## lock on the build folder for its whole run, so the three run the built test bundle as `swift
## test` does on Linux (--testing-library swift-testing); the shards' output follows the rest's.
TEST_BUNDLE = $(shell $(SWIFT) build --show-bin-path)/AssetPackPackageTests.xctest
TEST_SHARDS := 'AssetPackCLITests\.' 'AssetPackRemoteTests\.'
test-full: test-deps
	$(BUILD_FOR_TESTS)
	@export ASSETPACK_TESTS=all; logs=$$(mktemp -d); trap 'rm -rf "$$logs"' EXIT; pids=""; k=0; sharded=""; \
	for shard in $(TEST_SHARDS); do \
	  k=$$((k + 1)); \
	  "$(TEST_BUNDLE)" --testing-library swift-testing --filter "^($$shard)" > "$$logs/$$k.log" 2>&1 & pids="$$pids $$!"; \
	  sharded="$$sharded$${sharded:+|}$$shard"; \
	done; \
	echo "== every target but $(TEST_SHARDS) (those run beside it; their output follows)"; \
	"$(TEST_BUNDLE)" --testing-library swift-testing --skip "^($$sharded)"; status=$$?; \
	for pid in $$pids; do wait $$pid || status=1; done; \
	k=0; for shard in $(TEST_SHARDS); do k=$$((k + 1)); echo "== $$shard"; cat "$$logs/$$k.log"; done; \
	exit $$status

## install: the release binary to $(DESTDIR)$(PREFIX)/bin/assetpack (PREFIX /usr/local unless given;
## DESTDIR for staging a package). `make install PREFIX=$$HOME/.local` needs no root.
PREFIX ?= /usr/local
install: release
	install -d "$(DESTDIR)$(PREFIX)/bin"
	install -m 0755 "$(RELEASE_BIN)" "$(DESTDIR)$(PREFIX)/bin/assetpack"
	@echo "installed $(DESTDIR)$(PREFIX)/bin/assetpack"

## demo: build, pack SamplePacks/assets both ways, install privately, read every entry by path.
## A debug build by default: the one make test then reuses, and half the release build's cold time
## (the release build optimises the whole library module by module, one after another, on 2 cores).
## DEMO_CONFIG=release for an optimised build's timings (make perf measures both formats properly).
DEMO_CONFIG ?= debug
# A release demo links as every release build does (RELEASE), so the two do not relink each other.
DEMO_FLAGS = $(if $(filter release,$(DEMO_CONFIG)),$(RELEASE),-c $(DEMO_CONFIG))
DEMO_BIN = $(shell $(SWIFT) build $(DEMO_FLAGS) --show-bin-path)/assetpack
demo: deps
	$(SWIFT) build $(DEMO_FLAGS) --product assetpack
	@rm -rf "$(DEMO_DIR)"; mkdir -p "$(DEMO_DIR)"
	@export ASSETPACK_PASSWORD=$(SAMPLE_PASSWORD) XDG_DATA_HOME="$(DEMO_DIR)/xdg"; set -e; \
	for fmt in zip container; do \
	  echo; echo "== $$fmt: pack SamplePacks/assets"; \
	  "$(DEMO_BIN)" pack SamplePacks/assets --format $$fmt --output "$(DEMO_DIR)/samples.$$fmt"; \
	  echo "== $$fmt: install into the app's private directory"; \
	  installed=$$("$(DEMO_BIN)" install "$(DEMO_DIR)/samples.$$fmt" --app-id com.example.assetpack-demo); \
	  echo "$$installed"; stat -c '%A %n' "$$(dirname "$$installed")" "$$installed"; \
	  echo "== $$fmt: read every entry by path (time per entry, check)"; \
	  "$(DEMO_BIN)" verify "$$installed"; \
	  echo "== $$fmt: cat data/config.json"; \
	  "$(DEMO_BIN)" cat "$$installed" data/config.json; echo; \
	done; \
	echo "(timings from a $(DEMO_CONFIG) build: make demo DEMO_CONFIG=release for an optimised one, make perf to compare the formats)"; \
	echo "the CLI: $(DEMO_BIN) (export PATH=\"$$(dirname "$(DEMO_BIN)"):\$$PATH\" to type assetpack; make install for an optimised one)"

## samples: regenerate SamplePacks/assets and the committed packs built from them.
samples: release
	python3 SamplePacks/make_samples.py
	ASSETPACK_PASSWORD=$(SAMPLE_PASSWORD) "$(RELEASE_BIN)" pack SamplePacks/assets --output SamplePacks/packs/samples.zip
	ASSETPACK_PASSWORD=$(SAMPLE_PASSWORD) "$(RELEASE_BIN)" pack SamplePacks/assets --format container --output SamplePacks/packs/samples.apack

## fmt / lint: format in place, or check (strict: a warning fails) every Swift file we own.
SWIFT_SOURCES := Package.swift Sources Tests Plugins Fuzz Examples Benchmarks
fmt:
	$(SWIFT) format --in-place --recursive --configuration .swift-format $(SWIFT_SOURCES)

lint:
	python3 scripts/check-architecture.py
	$(SWIFT) format lint --strict --recursive --configuration .swift-format $(SWIFT_SOURCES)

clean:
	rm -rf .build "$(DEMO_DIR)"

## cli-doc: docs/CLI.md from the built assetpack's help (CLIReferenceTests fails when they differ).
.PHONY: cli-doc
cli-doc: build
	scripts/cli-doc.sh "$$($(SWIFT) build --show-bin-path)/assetpack" > docs/CLI.md

## update-figures: the update-attack figures docs/SECURITY.md quotes (time to fail against a 4 B/s
## server, bytes written against an endless one, installing v1 over v2), printed by the end-to-end
## tests that assert them.
.PHONY: update-figures
update-figures: test-deps
	$(BUILD_FOR_TESTS)
	@set -o pipefail; $(SWIFT_TEST) --skip-build --filter 'UpdateAttackCLITests|ReleaseCLITests' 2>&1 | grep -E '^figure:|✘|error:'

## perf: release build, then `assetpack perf --corpus standard` (zip vs container, every entry, interleaved);
## the table goes to the terminal and perf-reports/perf.txt, with perf.json, perf.csv and perf.html beside it.
## PERF_ITERATIONS=N for more reads; PERF_BUILD_FLAGS="--scratch-path DIR" to build elsewhere.
PERF_ITERATIONS ?= 5
PERF_BUILD_FLAGS ?=
PERF_DIR ?= perf-reports
.PHONY: perf
perf: deps
	$(SWIFT) build $(RELEASE) $(PERF_BUILD_FLAGS)
	@mkdir -p "$(PERF_DIR)"
	@set -o pipefail; bin="$$($(SWIFT) build $(RELEASE) $(PERF_BUILD_FLAGS) --show-bin-path)/assetpack"; \
	"$$bin" perf --corpus standard --iterations $(PERF_ITERATIONS) --with-libzip \
	  --json "$(PERF_DIR)/perf.json" --csv "$(PERF_DIR)/perf.csv" --html "$(PERF_DIR)/perf.html" \
	  | tee "$(PERF_DIR)/perf.txt"; \
	echo "reports: $(PERF_DIR)/perf.{txt,json,csv,html}"

## soak: the differential suites (Differential*Tests: every format × compression × read path, entry sizes
## around every boundary) over SOAK_SEEDS fresh seeds (default 6, a few minutes); each failure prints its seed,
## replay one with ASSETPACK_SEED=N swift test --filter Differential, or a whole run with SOAK_BASE=<printed base>.
SOAK_SEEDS ?= 6
SOAK_BASE ?=
.PHONY: soak
soak: deps
	$(BUILD_FOR_TESTS)
	ASSETPACK_SOAK_SEEDS=$(SOAK_SEEDS) $(if $(SOAK_BASE),ASSETPACK_SOAK_BASE=$(SOAK_BASE)) \
	  $(SWIFT_TEST) --skip-build --filter 'AssetPackTests.DifferentialTests|AssetPackCLITests.DifferentialCLITests'

## portable: the configuration an iOS or Android app links (Package.swift's SystemLibraries trait
## off: zlib and swift-crypto only, no libzip, libdeflate, libzstd, libcurl or OpenSSL), built in
## .build-portable. Runs every suite that configuration compiles (the reader, installer, format,
## crypto and damage suites; the CLI, remote and perf suites need the default one), then checks
## with ldd that no binary it built (the test bundle, and ReadBench: a program linking only the
## AssetPack product, as an app does) links a library the configuration leaves out.
PORTABLE = --build-path .build-portable --disable-default-traits
PORTABLE_FORBIDDEN = libzip|libdeflate|libzstd|libcurl|libssl|libcrypto|libnettle
portable:
	@pkg-config --exists zlib 2>/dev/null || { $(SUDO) apt-get update -qq \
	  && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zlib1g-dev pkg-config python3; }
	$(SWIFT) build $(PORTABLE) --product AssetPackPackageTests
	$(SWIFT) build $(PORTABLE) --product ReadBench
	$(SWIFT_TEST) $(PORTABLE) --skip-build
	@bin="$$($(SWIFT) build $(PORTABLE) --show-bin-path)"; found=0; \
	for f in $$(find "$$bin" -maxdepth 1 -type f -perm -u+x) "$$bin"/*.xctest; do \
	  [ -f "$$f" ] || continue; \
	  if ldd "$$f" 2>/dev/null | grep -E '$(PORTABLE_FORBIDDEN)'; then echo "$$f links the above"; found=1; fi; \
	done; \
	[ $$found = 0 ] && echo "portable: no binary in $$bin links $(PORTABLE_FORBIDDEN)"

## tsan / asan: the concurrency stress test (and for asan the damage sweeps) under sanitizers. They
## build the test bundle only: none of the tests they run starts the assetpack binary. (The bundle
## links the CLI's module since its usage errors are tested in-process, so ArgumentParser is built
## under each sanitizer too.)
tsan: SANITIZE = --sanitize=thread --scratch-path .build-tsan
## tsan: the stress suite, the concurrent-read tests, a set's packs opened at once, an index's segments
## opened on every core, and the remote tests whose reads cross threads
## (every entry over HTTP, the mirror's streaming window, cancelled opens, reads and installs); the
## rest of the remote suites (faulty servers, attacks) added a minute under ThreadSanitizer and
## cross no thread these do not.
## ThreadSanitizer's reports go to .build-tsan/reports and are printed after the tests' output, so
## the end of a CI log (what is kept of it) holds the race, not the passing tests after it.
tsan: test-deps
	$(SWIFT) build $(SANITIZE) --product AssetPackPackageTests
	@rm -rf .build-tsan/reports && mkdir -p .build-tsan/reports
	ASSETPACK_TESTS=all TSAN_OPTIONS=log_path=$(CURDIR)/.build-tsan/reports/race $(SWIFT_TEST) $(SANITIZE) --skip-build \
	  --filter 'StressTests|concurrentRead|readsFromManyThreads|\.RemoteTests/(largeReadsStream|chunksAsLargeAsTheWindow|everyEntryReadsOverHTTP)|\.UpdateSafetyTests/cancelling|whenSeveralPacksFailTheLowestOnesErrorIsThrown|theRegionIsSealedInSegmentsAndTheDigestsApart' \
	  || { cat .build-tsan/reports/race.* 2>/dev/null; exit 1; }
	@if ls .build-tsan/reports/race.* >/dev/null 2>&1; then cat .build-tsan/reports/race.*; exit 1; fi

asan: SANITIZE = --sanitize=address --scratch-path .build-asan
asan: test-deps
	$(SWIFT) build $(SANITIZE) --product AssetPackPackageTests
	ASSETPACK_TESTS=all LSAN_OPTIONS=suppressions=$(CURDIR)/Tests/lsan.supp $(SWIFT_TEST) $(SANITIZE) --skip-build --filter 'StressTests|HardeningTests|ZipPackReaderTests'

## fuzz: every libFuzzer target for FUZZ_SECONDS (default 60) each; non-zero on any crash.
## libFuzzer refuses a corpus folder that does not exist, and git keeps no empty folder, so a
## target's corpus, seed and regression folders are made when missing.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= FuzzZip FuzzZipStructure FuzzContainer FuzzContainerIndex FuzzSignature FuzzZstd
FUZZ_FLAGS = -c release --scratch-path .build-fuzz -Xswiftc -DFUZZING -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library
fuzz: deps
	$(SWIFT) build
	@for t in $(FUZZ_TARGETS); do $(SWIFT) build $(FUZZ_FLAGS) --product $$t || exit 1; done
	@seeds=$$(mktemp -d); trap 'rm -rf "$$seeds"' EXIT; \
	  bash Fuzz/make-seeds.sh "$$seeds" "$$($(SWIFT) build --show-bin-path)/assetpack"; \
	  for t in $(FUZZ_TARGETS); do \
	    mkdir -p Fuzz/corpus/$$t "$$seeds/$$t" Fuzz/regressions/$$t; \
	    echo "== fuzzing $$t for $(FUZZ_SECONDS) s"; \
	    .build-fuzz/release/$$t -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=4096 -timeout=20 \
	      -artifact_prefix=Fuzz/crashes/ Fuzz/corpus/$$t "$$seeds/$$t" Fuzz/regressions/$$t || exit 1; \
	  done

## pack-assets: the PackAssets plugin's build step for other build systems:
##   make pack-assets SRC=Assets OUT=build/assets.pack [PACK_FORMAT=container|zip] [PACK_COMPRESSION=auto|store|deflate]
## It runs `assetpack pack SRC --output OUT --format … --compression …`. The secret comes from the environment,
## as for the plugin: ASSETPACK_KEY_FILE (raw 32-byte key, container), ASSETPACK_PASSWORD_FILE, or ASSETPACK_PASSWORD.
## PACK_BUILD_FLAGS="--scratch-path DIR" to build assetpack elsewhere.
PACK_FORMAT ?= container
PACK_COMPRESSION ?= auto
PACK_BUILD_FLAGS ?=
.PHONY: pack-assets
pack-assets: deps
	@if [ -z "$(SRC)" ] || [ -z "$(OUT)" ]; then \
	  echo "usage: make pack-assets SRC=asset-folder OUT=file.pack [PACK_FORMAT=container|zip] [PACK_COMPRESSION=auto|store|deflate]" >&2; exit 64; fi
	$(SWIFT) build $(RELEASE) $(PACK_BUILD_FLAGS) --product assetpack
	@set -e; mkdir -p "$$(dirname "$(OUT)")"; secret=(); \
	if [ -n "$${ASSETPACK_KEY_FILE:-}" ]; then secret=(--key-file "$$ASSETPACK_KEY_FILE"); \
	elif [ -n "$${ASSETPACK_PASSWORD_FILE:-}" ]; then secret=(--password-file "$$ASSETPACK_PASSWORD_FILE"); \
	elif [ -z "$${ASSETPACK_PASSWORD:-}" ]; then \
	  echo "pack-assets: set ASSETPACK_PASSWORD (or ASSETPACK_PASSWORD_FILE=path, or ASSETPACK_KEY_FILE=path)" >&2; exit 2; fi; \
	"$$($(SWIFT) build $(RELEASE) $(PACK_BUILD_FLAGS) --show-bin-path)/assetpack" pack "$(SRC)" --output "$(OUT)" \
	  --format $(PACK_FORMAT) --compression $(PACK_COMPRESSION) "$${secret[@]}"

## example: build Examples/HelloAssets (the PackAssets plugin packs its Assets/ folder during `swift build`)
## and run it twice with a throwaway XDG_DATA_HOME: the first run installs the pack, the second copies nothing.
## Then a patch pack of it (assetpack pack --patch-of: one file changed, one removed), read with the
## installed pack as one set (HELLOASSETS_PATCH): the changed entry comes from the patch, the removed one is gone.
## Then the plugin's signing end to end, with a throwaway publisher key made by openssl (its seed and public
## key in assetpack keygen's text forms): a build with ASSETPACK_SIGNING_KEY_FILE whose pack the app opens
## only with that key pinned (HELLOASSETS_PUBLISHER_KEY); a missing key file failing the build with a message
## naming it; and an unsigned build again, which the app, the key pinned, refuses (exit 5).
EXAMPLE_DIR := Examples/HelloAssets
.PHONY: example
example: deps
	@set -e; unset ASSETPACK_KEY_FILE ASSETPACK_PASSWORD ASSETPACK_PASSWORD_FILE ASSETPACK_SIGNING_KEY_FILE HELLOASSETS_PUBLISHER_KEY; \
	export XDG_DATA_HOME="$(CURDIR)/$(EXAMPLE_DIR)/.build/example-xdg"; \
	$(SWIFT) build --product assetpack; \
	cli="$$($(SWIFT) build --show-bin-path)/assetpack"; \
	cd $(EXAMPLE_DIR); \
	echo "== a pack key for the plugin and the app (assetpack keygen --pack-key)"; \
	"$$cli" keygen --pack-key --out "$$PWD/.build/example-packkey/hello" --force; \
	export ASSETPACK_KEY_FILE="$$PWD/.build/example-packkey/hello.packkey"; \
	$(SWIFT) build; \
	bin="$$($(SWIFT) build --show-bin-path)/HelloAssets"; \
	rm -rf "$$XDG_DATA_HOME"; \
	echo; echo "== HelloAssets, first run"; "$$bin"; \
	echo; echo "== HelloAssets, second run"; "$$bin"; \
	patch="$$PWD/.build/example-patch"; rm -rf "$$patch"; mkdir -p "$$patch"; cp -R Sources/HelloAssets/Assets "$$patch/tree"; \
	printf 'Hello from the patch pack!\n' > "$$patch/tree/hello.txt"; rm "$$patch/tree/images/noise.bin"; \
	echo; echo "== a patch pack: hello.txt changed, images/noise.bin removed (assetpack pack --patch-of, the same ASSETPACK_KEY_FILE)"; \
	"$$cli" pack "$$patch/tree" --format container \
	  --patch-of "$$(find "$$(dirname "$$bin")" -path '*HelloAssets*resources/assets.pack' | head -1)" -o "$$patch/patch.pack"; \
	echo; echo "== HelloAssets, base + patch (HELLOASSETS_PATCH)"; HELLOASSETS_PATCH="$$patch/patch.pack" "$$bin" | tee "$$patch/run.out"; \
	grep -q '^hello.txt .* from patch.pack$$' "$$patch/run.out" && grep -q '^images/noise.bin .*deleted by the patch$$' "$$patch/run.out" \
	  && grep -q '^data/config.json .* from assets.pack$$' "$$patch/run.out" && grep -q '^Hello from the patch pack!$$' "$$patch/run.out" \
	  || { echo "example: FAILED: the patch did not override hello.txt and delete images/noise.bin" >&2; exit 1; }; \
	keys="$$PWD/.build/example-keys"; rm -rf "$$keys"; mkdir -p -m 0700 "$$keys"; \
	openssl genpkey -algorithm ed25519 -outform DER -out "$$keys/example.der"; \
	(umask 077; printf 'assetpack-ed25519-key:%s\n' "$$(tail -c 32 "$$keys/example.der" | base64 -w0)" > "$$keys/example.key"); \
	pub="assetpack-ed25519-pub:$$(openssl pkey -inform DER -in "$$keys/example.der" -pubout -outform DER | tail -c 32 | base64 -w0)"; \
	echo; echo "== signed build (ASSETPACK_SIGNING_KEY_FILE), run with the public key pinned"; \
	ASSETPACK_SIGNING_KEY_FILE="$$keys/example.key" $(SWIFT) build; \
	rm -rf "$$XDG_DATA_HOME"; HELLOASSETS_PUBLISHER_KEY="$$pub" "$$bin" > "$$keys/signed.out"; cat "$$keys/signed.out"; \
	grep -q "^signed by publisher key .*: assets version 0, never expires$$" "$$keys/signed.out"; \
	echo; echo "== a signing key that is missing fails the build"; \
	if ASSETPACK_SIGNING_KEY_FILE="$$keys/missing.key" $(SWIFT) build > "$$keys/missing.log" 2>&1; then \
	  cat "$$keys/missing.log"; echo "example: FAILED: the build succeeded without its signing key" >&2; exit 1; fi; \
	grep "ASSETPACK_SIGNING_KEY_FILE names the signing key $$keys/missing.key, which cannot be read" "$$keys/missing.log" \
	  || { cat "$$keys/missing.log"; echo "example: FAILED: the message does not name the key and the setting" >&2; exit 1; }; \
	echo; echo "== unsigned build again: with the key pinned the app refuses it"; \
	$(SWIFT) build; rm -rf "$$XDG_DATA_HOME"; \
	status=0; HELLOASSETS_PUBLISHER_KEY="$$pub" "$$bin" || status=$$?; \
	if [ $$status -ne 5 ]; then echo "example: FAILED: an unsigned pack opened under a pinned key (exit $$status, not 5)" >&2; exit 1; fi; \
	echo "ok: refused (exit 5)"

## docs: DocC documentation of the AssetPack product into .build/docs; DocC warnings fail it.
## The symbol graph is extracted with the re-exported modules (AssetPackCore, AssetPackZip,
## AssetPackContainer) folded in, so every public name an app sees has a page under AssetPack —
## `swift package generate-documentation` (swift-docc-plugin) cannot pass -experimental-allowed-reexported-modules,
## so we run swift-symbolgraph-extract and docc ourselves (both ship with the toolchain).
DOCS_DIR ?= .build/docs
DOCS_BUILD_FLAGS ?=
.PHONY: docs
docs: deps
	$(SWIFT) build $(DOCS_BUILD_FLAGS) --target AssetPack
	@set -e; bin="$$($(SWIFT) build $(DOCS_BUILD_FLAGS) --show-bin-path)"; graphs="$$bin/docs-symbolgraph"; \
	rm -rf "$$graphs" && mkdir -p "$$graphs"; \
	swift-symbolgraph-extract -module-name AssetPack -target "$$($(SWIFT) -print-target-info | python3 -c 'import json,sys; print(json.load(sys.stdin)["target"]["triple"])')" \
	  -I "$$bin/Modules" $(foreach c,CLibzip CZlib CLibcrypto CLibdeflate CZstd,-I Sources/$(c)) -I Sources/CMemoryHints/include \
	  -minimum-access-level public -experimental-allowed-reexported-modules=AssetPackCore,AssetPackZip,AssetPackContainer \
	  -output-dir "$$graphs"; \
	rm -rf "$(DOCS_DIR)"; \
	docc convert Sources/AssetPack/AssetPack.docc --additional-symbol-graph-dir "$$graphs" \
	  --fallback-display-name AssetPack --fallback-bundle-identifier AssetPack \
	  --output-path "$(DOCS_DIR)" --transform-for-static-hosting --warnings-as-errors
	@echo "documentation: $(DOCS_DIR) (python3 -m http.server -d $(DOCS_DIR), then open /documentation/assetpack)"

## bench-pack: packing time and bytes against 7-Zip (Benchmarks/bench-pack.sh, hyperfine, medians):
## 7zz -mx1 and -mx5 AES-256 zips, both formats at --fast and the default level, zip packs at each
## libdeflate level of BENCH_LEVELS (the zip rows are levels 10 and 2), then bytes by category (text entries, media, the rest) and, on
## the perf corpus, an incremental re-pack after one 4 KiB file changed. BENCH_TREE: corpus (the
## ~151 MiB perf corpus, Benchmarks/make-pack-corpus.py), game (Battle for Wesnoth's data from
## Debian's wesnoth-1.16-data, ~40 MB, Benchmarks/make-game-tree.sh) or any folder's path.
BENCH_DIR ?= .build/bench-pack
BENCH_RUNS ?= 5
BENCH_TREE ?= corpus
BENCH_LEVELS ?= 1 6 9 12
.PHONY: bench-pack
## bench-remote: remote packs over a real nginx on loopback (Benchmarks/bench-remote.sh): bytes and
## requests for one 4 KiB read and for an update after one file changed, throughput against curl, and
## the HTTP client itself against curl and a bare URLSession (Benchmarks/Sources/TransportBench).
.PHONY: bench-remote
bench-remote: release test-deps
	@command -v hyperfine >/dev/null || $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hyperfine
	$(SWIFT) build $(RELEASE) --product TransportBench
	Benchmarks/bench-remote.sh "$(RELEASE_BIN)" .build/bench-remote

## bench-chunks: the content-defined chunker's sizes chosen by measurement (Benchmarks/Sources/ChunkBench):
## per candidate min/avg/max, chunk count, index size, cut speed, bytes in changed chunks after three
## edits of a 64 MiB entry, and per-chunk compression (docs/PERFORMANCE.md, "Content-defined chunking").
.PHONY: bench-chunks
bench-chunks:
	$(SWIFT) run $(RELEASE) ChunkBench

## bench-delta-peers: the bytes zsync and casync download for the same edits of the same 64 MiB files
## and of the benchmark tree, from nginx on loopback (Benchmarks/delta-peers.sh; installs the tools).
.PHONY: bench-delta-peers
bench-delta-peers: test-deps
	@command -v zsync >/dev/null && command -v casync >/dev/null \
	  || $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zsync casync
	Benchmarks/delta-peers.sh .build/bench-delta-peers

## bench-delta: chunk-level deltas of a container (issue 26): a generated 64 MiB entry edited four ways
## (1 byte changed, 4 KiB inserted, 1 MiB appended, nothing), re-packed to the same output (time, bytes
## written, chunks re-sealed) and its installed copy updated from nginx on loopback (bytes downloaded):
## random bytes signed and unsigned, compressible text signed; then the peers zsync and casync on the
## same edits (bench-delta-peers).
.PHONY: bench-delta
bench-delta: release bench-delta-peers
	Benchmarks/bench-delta.sh "$(RELEASE_BIN)" .build/bench-delta

## bench-zstd: the zstd level table of docs/PERFORMANCE.md ("zstd levels"): bytes, compression and decode
## speed per container chunk of zstd levels against libdeflate, then 7-Zip's zip of the same files, on the
## perf corpus's and a Debian game data package's compressible files (Benchmarks/zstd-levels.sh).
ZSTD_BENCH_DEB ?= wesnoth-1.16-data
.PHONY: bench-zstd
bench-zstd: deps
	@command -v 7zz >/dev/null || $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq 7zip
	@command -v bc >/dev/null || $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bc
	Benchmarks/zstd-levels.sh .build/bench-zstd $(ZSTD_BENCH_DEB)

## bench-sets: a 4 KiB read through a PackSet of 10 packs x 1,000 entries against the same read from
## the one pack that serves it, and opening the set against opening its 10 packs one by one (medians).
## bench-portable: whole-entry reads of the same packs (a container with deflate chunks, a WinZip
## AES zip) through the library built in each configuration, alternately (docs/PERFORMANCE.md).
.PHONY: bench-portable
bench-portable: release
	$(SWIFT) build $(RELEASE) --product ReadBench
	$(SWIFT) build $(RELEASE) $(PORTABLE) --product ReadBench
	Benchmarks/bench-portable.sh "$$($(SWIFT) build $(RELEASE) --show-bin-path)/ReadBench" \
	  "$$($(SWIFT) build $(RELEASE) $(PORTABLE) --show-bin-path)/ReadBench" "$(RELEASE_BIN)" .build/bench-portable

.PHONY: bench-sets
bench-sets:
	$(SWIFT) run $(RELEASE) SetsBench .build/bench-sets

## bench-scale: opening packs of 1,000, 10,000, 100,000 and 1,000,000 entries (zips to 100,000) and
## a set of 10 packs x 100,000, in-process (Benchmarks/Sources/ScaleBench: open, lookup and 4 KiB
## read medians), then the whole-process peak memory of `assetpack cat` reading one entry of each,
## over the process's own (Benchmarks/bench-scale.sh; docs/PERFORMANCE.md, "Opening at scale").
## SCALE_SIZES picks the sizes; the packs stay in .build/bench-scale for re-runs.
SCALE_SIZES ?= 1000 10000 100000 1000000
.PHONY: bench-scale
bench-scale: release
	$(SWIFT) build $(RELEASE) --product ScaleBench
	"$$($(SWIFT) build $(RELEASE) --show-bin-path)/ScaleBench" .build/bench-scale $(SCALE_SIZES)
	Benchmarks/bench-scale.sh "$(RELEASE_BIN)" .build/bench-scale

bench-pack: release
	@command -v hyperfine >/dev/null || $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hyperfine
	@command -v 7zz >/dev/null || $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq 7zip
	$(SWIFT) build $(RELEASE) --product ZipLevelBench
	Benchmarks/bench-pack.sh "$(RELEASE_BIN)" "$$($(SWIFT) build $(RELEASE) --show-bin-path)/ZipLevelBench" \
	  "$(BENCH_DIR)" "$(BENCH_TREE)" $(BENCH_RUNS) "$(BENCH_LEVELS)"
