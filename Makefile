# hindsight: `make run` serves the embedded backend on 127.0.0.1; `make test` runs every test.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
.PHONY: run test lint install install-run bench synth preflight opensearch opensearch-stop clean

# Two stamps: `make run` installs what serving needs (the server and the SDK with its CLI);
# `make test` adds the test and infra tools on top, so a venv made by `make run` is upgraded,
# not rebuilt. pip prints what it fetches and installs, so a first run shows its progress; the
# run install skips byte-compiling (the server compiles the few modules it imports as it starts).
$(VENV)/.run-installed: requirements/local.txt requirements/local-nodeps.txt requirements/sdk.txt sdk/python/pyproject.toml
	@echo "==> [1/3] virtualenv $(VENV)"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "==> [2/3] what the server, the SDK and its CLI need: requirements/local.txt, requirements/sdk.txt"
	$(PY) -m pip install --progress-bar on --no-compile -r requirements/local.txt -r requirements/sdk.txt
	@echo "==> [3/3] without their deployment and download tools: requirements/local-nodeps.txt"
	$(PY) -m pip install --progress-bar on --no-compile --no-deps -r requirements/local-nodeps.txt
	touch $@

$(VENV)/.installed: $(VENV)/.run-installed requirements/dev.txt requirements/aws.txt requirements.txt requirements/nodeps.txt
	@echo "==> the aws backend, test and infra tools: requirements/dev.txt"
	$(PY) -m pip install --progress-bar on -r requirements/dev.txt
	@echo "==> without their declared dependencies: requirements/nodeps.txt"
	$(PY) -m pip install --progress-bar on --no-deps -r requirements/nodeps.txt
	touch $@

install: $(VENV)/.installed

install-run: $(VENV)/.run-installed

run: install-run
	@echo "==> starting the server (the CLI is $(VENV)/bin/hindsight-xp)"
	$(PY) -m local.server

# What ruff reads: the service, the embedded server, the SDK and the tools beside them
LINTED := app.py chalicelib local sdk/python devtools infra

# ruff, then mypy on the service, the embedded server and the SDK (the files and settings: pyproject.toml)
lint: install
	$(PY) -m ruff check $(LINTED)
	$(PY) -m mypy

# The TypeScript suite (mostly npm's downloads) runs beside pytest; its output follows pytest's.
test: install lint
	devtools/install-browser.sh
	@log=$$(mktemp); $(MAKE) --no-print-directory test-ts >$$log 2>&1 & ts=$$!; \
	$(PY) -m pytest; py=$$?; \
	wait $$ts; tsrc=$$?; cat $$log; rm -f $$log; \
	echo "==> pytest exited $$py, the TypeScript suite $$tsrc"; [ $$py -eq 0 ] && [ $$tsrc -eq 0 ]

# The TypeScript SDK (sdk/typescript), its example agent (examples/typescript) and the JavaScript
# agent that exports OpenTelemetry spans (examples/otel-js, the SDK's tests run it): TypeScript from
# the npm registry (package-lock.json), then Node's test runner against a real server, which
# devtools/with_server.py starts on a free port and stops after.
.PHONY: test-ts
test-ts: install-run
	@echo "==> the TypeScript SDK: npm ci, build, node --test against a real server"
	cd sdk/typescript && npm ci --no-audit --no-fund && npm run build
	cd examples/typescript && npm ci --no-audit --no-fund && npm run build
	cd examples/otel-js && npm ci --no-audit --no-fund
	$(PY) -m devtools.with_server -- npm --prefix sdk/typescript test

bench: install
	$(PY) -m bench.recall_latency
	$(PY) -m bench.ingest_throughput
	$(PY) -m bench.experience_reuse

# Every evaluation set beside its baselines in one run (bench/README.md); LoCoMo only where
# HINDSIGHT_LOCOMO names its locomo10.json. make eval EVAL_ARGS="--sets locomo --out eval.json"
.PHONY: eval
eval: install
	$(PY) -m bench.eval $(EVAL_ARGS)

# A local OpenSearch 2.19.1 node with k-NN on 127.0.0.1:$${OPENSEARCH_PORT:-9200} (fetched from Maven Central)
opensearch:
	devtools/opensearch/start.sh

opensearch-stop:
	devtools/opensearch/stop.sh

# CloudFormation template(s) of a stage, offline (CDK v2, needs Node.js): make synth [SYNTH_ARGS="--stack prod --package full"]
synth: install
	$(PY) infra/synth.py $(SYNTH_ARGS)

# Before deploying a stage, with the deploying credentials: concurrency quota, the OpenAI secret,
# API Gateway's logging role (infra/preflight.py); reads the stage's synthesized template
STAGE ?= dev
preflight: install
	$(PY) infra/preflight.py --stack $(STAGE)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache infra/cdk.out infra/.build \
		sdk/typescript/node_modules sdk/typescript/dist sdk/typescript/build examples/typescript/node_modules examples/typescript/dist
