# hindsight: `make run` serves the embedded backend on 127.0.0.1; `make test` runs every test.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
.PHONY: run test install bench synth opensearch opensearch-stop clean

$(VENV)/.installed: requirements.txt requirements-local.txt requirements-dev.txt requirements-nodeps.txt sdk/python/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-nodeps.txt
	touch $@

install: $(VENV)/.installed

run: install
	$(PY) server.py

test: install
	scripts/browser/install.sh
	$(PY) -m pytest

bench: install
	$(PY) bench/recall_latency.py
	$(PY) bench/ingest_throughput.py
	$(PY) -m bench.experience_reuse

# Every evaluation set beside its baselines in one run (bench/README.md); LoCoMo only where
# HINDSIGHT_LOCOMO names its locomo10.json. make eval EVAL_ARGS="--sets locomo --out eval.json"
.PHONY: eval
eval: install
	$(PY) -m bench.eval $(EVAL_ARGS)

# A local OpenSearch 2.19.1 node with k-NN on 127.0.0.1:$${OPENSEARCH_PORT:-9200} (fetched from Maven Central)
opensearch:
	scripts/opensearch/start.sh

opensearch-stop:
	scripts/opensearch/stop.sh

# CloudFormation template(s) of a stage, offline (CDK v2, needs Node.js): make synth [SYNTH_ARGS="--stack prod --package full"]
synth: install
	$(PY) infra/synth.py $(SYNTH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache infra/cdk.out infra/.build
