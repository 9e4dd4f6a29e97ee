# Every entry point of the project, in one place. Each target runs the one
# script that does the job (the scripts stay runnable by hand; README.md's
# two commands are `make demo` and `make test`). `make ci` is what CI runs.
.PHONY: help demo test ci lint bench bench-quick build-all vm fuzz browser ui-real contract

help:
	@sed -n 's/^\([a-z-]*\):.*## \(.*\)/  make \1\t\2/p' $(MAKEFILE_LIST) | expand -t 24

demo: ## mock assisted-service + the agent on fixture roots
	./scripts/demo.sh

test: ## installs what the tests need (apt), then cargo test --workspace --locked
	./scripts/test

ci: ## everything CI runs, each step timed (.ci/run)
	./.ci/run

lint: ## fmt, clippy -D warnings, import circles, one feature set
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --locked -- -D warnings
	scripts/import-cycles
	scripts/feature-drift

bench: ## every figure of docs/benchmarks.md (release builds, minutes)
	bench/run

bench-quick: ## the benchmarks' smoke run (debug builds, small sizes)
	bench/run --quick

build-all: ## static release binaries for the four arches, size budget, first boots
	packaging/build-all

vm: ## the whole host lifecycle in a real systemd VM (qemu, no KVM needed)
	tests/vm/run

fuzz: ## every fuzz target, 60 s each (nightly; FUZZ_BUILD=--dev for a quick build)
	fuzz/run 60

browser: ## the mock's page in headless Chromium during a real agent run
	cargo build --workspace --bins --locked
	cd tests/browser && npm ci --no-audit --no-fund && npm test

ui-real: ## the real assisted UI library (ui-lib) fed by the mock, in headless Chromium
	tests/ui-real/run.sh

contract: ## the official Python client against the mock; requests against the API definition
	cargo build --workspace --bins --locked
	bash tests/contract/run.sh
