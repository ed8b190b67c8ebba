# Developer shortcuts; CI runs .ci/run.
.PHONY: build test fmt fmt-check lint bench

build:
	cargo build --release --locked

test:
	cargo test --workspace --locked

fmt:
	cargo fmt --all

fmt-check:
	cargo fmt --all -- --check

lint:
	cargo clippy --workspace --all-targets --locked -- -D warnings

bench:
	cargo bench --workspace
	bench/startup.sh
