# Recall — two commands on a fresh machine:
#   make run    builds, remembers the sample documents into the embedded default, prints recalls
#   make test   runs every test (unit, conformance, end to end)

CARGO ?= cargo
# Outside the clone, so repeated CI runs build incrementally.
export CARGO_TARGET_DIR ?= /var/tmp/recall-target
DATA_DIR ?= .recall-demo
# Small chunks, so the demo shows chunk-level hits in short documents.
RECALL = RECALL_CHUNK_SIZE=40 $(CARGO_TARGET_DIR)/debug/recall --data-dir $(DATA_DIR)

.PHONY: run test build deps lint fmt clean-demo bench bench-http soak bench-scale

# LanceDB's build needs protoc.
deps:
	@command -v protoc >/dev/null 2>&1 || { \
	  echo "installing protobuf-compiler (protoc, needed by LanceDB)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq protobuf-compiler >/dev/null; }

# `make run` builds what `make test` builds: the test build (dev-dependencies
# and all) also produces the `recall` binary, so one never recompiles the
# dependencies for the other (a plain `cargo build -p recall` unifies other
# features and rebuilt LanceDB for minutes).
build: deps
	$(CARGO) test --workspace --all-targets --no-run

run: build
	@rm -rf $(DATA_DIR)
	$(RECALL) remember --dataset samples samples/
	@echo
	$(RECALL) datasets
	@echo
	@echo '$$ recall recall "How do I keep a sourdough starter alive?" --top-k 2'
	@$(RECALL) recall "How do I keep a sourdough starter alive?" --top-k 2
	@echo
	@echo '$$ recall recall "Which planet is the largest?" --top-k 2'
	@$(RECALL) recall "Which planet is the largest?" --top-k 2
	@echo
	@echo '$$ recall recall "What does the borrow checker enforce?" --top-k 1 --json'
	@$(RECALL) recall "What does the borrow checker enforce?" --top-k 1 --json
	@echo
	@echo '$$ recall recall "waggle dance" --type CHUNKS_LEXICAL --top-k 1'
	@$(RECALL) recall "waggle dance" --type CHUNKS_LEXICAL --top-k 1
	@echo
	@echo '$$ recall recall "What does a sourdough starter need?" --type GRAPH_COMPLETION --top-k 3 --only-context'
	@$(RECALL) recall "What does a sourdough starter need?" --type GRAPH_COMPLETION --top-k 3 --only-context

test: deps
	@pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null || echo "NOTE: PostgreSQL is unreachable at 127.0.0.1:5432: the Postgres suites will be SKIPPED"
	@[ -n "$$NEO4J_URI" ] || echo "NOTE: NEO4J_URI is unset: the Neo4j suites will be SKIPPED (eval \"\$$(FALKOR_SHIM_UPSTREAM=resp ../shared/tools/falkordb-bolt/falkordb-bolt.sh start)\" to run them)"
	@[ -n "$$RECALL_TEST_S3_ENDPOINT" ] || echo "NOTE: RECALL_TEST_S3_ENDPOINT is unset: the LanceDB-on-S3 suites will be SKIPPED (moto_server -H 127.0.0.1 -p 5055 & export RECALL_TEST_S3_ENDPOINT=http://127.0.0.1:5055)"
	$(CARGO) test --workspace --all-targets

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

clean-demo:
	rm -rf $(DATA_DIR)

# Benchmarks build release (a cold release build takes 40–75 minutes on 2 cores).
bench: deps
	$(CARGO) run --release -p recall-bench --bin recall-bench -- --chunks 2400 --queries 200

# The HTTP server under load (recall serve, separate process, loopback, keep-alive)
# on a 10k-chunk store, built once and kept in BENCH_DIR.
BENCH_DIR ?= /var/tmp/recall-bench-10k
bench-http: deps
	$(CARGO) build --release -p recall --bin recall -p recall-bench --bins
	$(CARGO_TARGET_DIR)/release/recall-bench --chunks 10000 --queries 20 --data-dir $(BENCH_DIR)
	$(CARGO_TARGET_DIR)/release/recall-http-bench --data-dir $(BENCH_DIR) --seconds 10

# The soak (docs/reliability.md, "Soak over HTTP"): 16 clients mixing recalls and
# remembers against `recall serve` for 10 minutes, on a copy of the bench store.
SOAK_SECONDS ?= 600
soak: deps
	$(CARGO) build --release -p recall --bin recall -p recall-bench --bins
	$(CARGO_TARGET_DIR)/release/recall-bench --chunks 10000 --queries 20 --data-dir $(BENCH_DIR)
	rm -rf $(BENCH_DIR)-soak && cp -r $(BENCH_DIR) $(BENCH_DIR)-soak
	$(CARGO_TARGET_DIR)/release/recall-http-bench --data-dir $(BENCH_DIR)-soak --soak $(SOAK_SECONDS) --clients 16

# The scale run (docs/scale.md, "One million chunks"): SCALE_CHUNKS chunks into a
# fresh SCALE_DIR, then 40 queries per type, with the graph search's stage
# timings (scripts/stage_times.py). On 2 cores a million chunks take about
# 90 minutes of ingestion, after the release build. SCALE_FLAGS adds
# recall-bench flags (say --chunks-per-batch 2000).
SCALE_CHUNKS ?= 1000000
SCALE_DIR ?= /var/tmp/recall-scale
bench-scale: deps
	$(CARGO) build --release -p recall-bench --bin recall-bench
	rm -rf $(SCALE_DIR)
	RUST_LOG=recall_retrievers=debug,recall_lancedb=debug $$(command -v /usr/bin/time >/dev/null && echo /usr/bin/time -v) \
	  $(CARGO_TARGET_DIR)/release/recall-bench --chunks $(SCALE_CHUNKS) --queries 40 --increments 0 --export 0 \
	  --data-dir $(SCALE_DIR) $(SCALE_FLAGS) > $(SCALE_DIR).log 2>&1
	@grep -aE '^(ingest|graph|recall |CHUNKS|GRAPH| *peak)|Maximum resident|Elapsed|File system outputs' $(SCALE_DIR).log
	python3 scripts/stage_times.py $(SCALE_DIR).log
	du -sm $(SCALE_DIR)/recall.db $(SCALE_DIR)/lancedb
