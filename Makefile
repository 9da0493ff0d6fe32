# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv when missing
# and (re)install when pyproject.toml changes. torch is pinned to the local CPU wheel: unpinned,
# pip would pull a multi-GB CUDA build.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
TORCH  := torch==2.13.0
# Real-model tests and the demo run on one torch thread: on 2 loaded cores, 2 threads are slower.
export CHRONOMEM_TORCH_THREADS ?= 1
export HF_HUB_OFFLINE := 1

.PHONY: demo test check lint docs-cli system-tools screenshots reliability bench bench-speed bench-quality bench-full clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(TORCH) -e '.[embeddings,onnx,postgres,fast,serve,client,mcp,langgraph,languages,observe,dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/chronomem demo --db demo.chronomem.db --fresh
	@echo
	@echo "chronomem is installed in $(VENV): run '. $(VENV)/bin/activate' to use 'chronomem' from this shell"
	@echo "(or call $(VENV)/bin/chronomem)."

test: $(STAMP) system-tools
	$(PY) -m pytest

# The browser tests drive Debian's Chromium (Playwright's own download is not used); the
# completion tests run zsh; the reliability suite runs the sqlite3 shell beside a live service.
# Installed when missing and we are root (CI); elsewhere those tests are skipped with a note.
system-tools:
	@(command -v chromium && command -v zsh && command -v sqlite3) >/dev/null 2>&1 || \
		[ "$$(id -u)" != 0 ] || \
		(DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium zsh sqlite3 >/dev/null)
	@command -v chromium >/dev/null 2>&1 || \
		echo "note: no chromium (apt-get install chromium); the browser tests will be skipped"
	@command -v zsh >/dev/null 2>&1 || \
		echo "note: no zsh (apt-get install zsh); its completion test will be skipped"
	@command -v sqlite3 >/dev/null 2>&1 || \
		echo "note: no sqlite3 shell (apt-get install sqlite3); the reliability suite runs without it"

# docs/img/ui-*.png, the web UI's pages on a small scene (docs/ui.md).
screenshots: $(STAMP) system-tools
	$(PY) docs/screenshots.py

# docs/cli.md's transcript: the test runs the small task from the CLI and rewrites the page
# (review the diff like code).
docs-cli: $(STAMP)
	CHRONOMEM_REGEN_DOCS=1 $(PY) -m pytest -q tests/cli/test_transcript.py

# The reliability suite at full strength (`make test` runs it with CI-sized trial counts): kill -9
# trials, PostgreSQL restarts, four processes for 30 s, fuzzing, 120 purge layouts; about 15
# minutes on 2 cores. Its figures go to bench/results/reliability.{md,json}.
reliability: $(STAMP)
	$(PY) -m pytest tests/reliability --reliability full \
		--reliability-report bench/results/reliability.md

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy

check: lint test

# Speed (embedding backends, scaling, TCMF, ingest, passages) and quality (crisis reads, LoCoMo,
# LongMemEval oracle and long haystacks); results in bench/results/. The first quality run embeds
# ~17k records and ~130k passages with the real model (about an hour on one thread); later runs
# reuse bench/.cache.
bench: bench-speed bench-quality

bench-speed: $(STAMP)
	$(PY) bench/embedding.py
	$(PY) bench/recall_scaling.py
	$(PY) bench/cold_start.py
	$(PY) bench/tcmf.py
	$(PY) bench/ingest.py
	$(PY) bench/passages.py

bench-quality: $(STAMP)
	$(PY) bench/importance.py
	$(PY) bench/tcmf_quality.py
	$(PY) bench/tcmf_quality.py --depth 3 --name tcmf_quality_depth3
	$(PY) bench/locomo.py
	$(PY) bench/longmemeval.py
	$(PY) bench/haystack.py

bench-full: $(STAMP)
	$(PY) bench/embedding.py
	$(PY) bench/recall_scaling.py --million
	$(PY) bench/cold_start.py --sizes 200000 1000000
	$(PY) bench/large_read.py
	$(PY) bench/write_gate.py
	$(PY) bench/threads.py
	$(PY) bench/tcmf.py
	$(PY) bench/ingest.py
	$(PY) bench/passages.py
	$(PY) bench/importance.py
	$(PY) bench/tcmf_quality.py
	$(PY) bench/tcmf_quality.py --depth 3 --name tcmf_quality_depth3
	$(PY) bench/locomo.py
	$(PY) bench/longmemeval.py
	$(PY) bench/haystack.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache demo.chronomem.db*
