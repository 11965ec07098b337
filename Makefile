# AssetPack — build, test and demo. Every target installs missing system packages itself.
SHELL := /bin/bash
export PATH := /opt/swift/usr/bin:$(PATH)
SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DEMO_DIR ?= $(CURDIR)/.demo
SAMPLE_PASSWORD := assetpack-sample
RELEASE_BIN = $(shell $(SWIFT) build -c release --show-bin-path)/assetpack

.PHONY: deps build release test demo fmt samples clean

## deps: install libzip-dev (and zlib, OpenSSL headers) with apt when missing.
deps:
	@if ! pkg-config --exists libzip zlib libcrypto 2>/dev/null; then \
	  echo "installing libzip-dev zlib1g-dev libssl-dev pkg-config"; \
	  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libzip-dev zlib1g-dev libssl-dev pkg-config; \
	fi

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

## test: the whole suite, including end-to-end tests that run the built assetpack binary.
test: deps
	$(SWIFT) build
	$(SWIFT) test

## demo: build, pack SamplePacks/assets both ways, install privately, read every entry by path.
demo: release
	@rm -rf "$(DEMO_DIR)"; mkdir -p "$(DEMO_DIR)"
	@export ASSETPACK_PASSWORD=$(SAMPLE_PASSWORD) XDG_DATA_HOME="$(DEMO_DIR)/xdg"; set -e; \
	for fmt in zip container; do \
	  echo; echo "== $$fmt: pack SamplePacks/assets"; \
	  "$(RELEASE_BIN)" pack SamplePacks/assets --format $$fmt --output "$(DEMO_DIR)/samples.$$fmt"; \
	  echo "== $$fmt: install into the app's private directory"; \
	  installed=$$("$(RELEASE_BIN)" install "$(DEMO_DIR)/samples.$$fmt" --app-id com.example.assetpack-demo); \
	  echo "$$installed"; stat -c '%A %n' "$$(dirname "$$installed")" "$$installed"; \
	  echo "== $$fmt: read every entry by path (time per entry, check)"; \
	  "$(RELEASE_BIN)" verify "$$installed"; \
	  echo "== $$fmt: cat data/config.json"; \
	  "$(RELEASE_BIN)" cat "$$installed" data/config.json; echo; \
	done

## samples: regenerate SamplePacks/assets and the committed packs built from them.
samples: release
	python3 SamplePacks/make_samples.py
	ASSETPACK_PASSWORD=$(SAMPLE_PASSWORD) "$(RELEASE_BIN)" pack SamplePacks/assets --output SamplePacks/packs/samples.zip
	ASSETPACK_PASSWORD=$(SAMPLE_PASSWORD) "$(RELEASE_BIN)" pack SamplePacks/assets --format container --output SamplePacks/packs/samples.apack

fmt:
	$(SWIFT) format --in-place --recursive --configuration .swift-format Package.swift Sources Tests

clean:
	rm -rf .build "$(DEMO_DIR)"
