# `make demo` and `make test` are all the set-up a fresh machine needs.
# torch==2.13.0 is installed first: it is the CPU wheel on these machines, and any other
# torch spec would pull gigabytes of CUDA.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.hopgraph-installed
DATA ?= $(abspath ../shared/data)

.PHONY: install demo test lint bench clean package chromium reranker student hop-encoder encoder

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[dense,large,ner,serve,ray,docs,integrations,mcp,train,dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/hopgraph demo

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

# Debian's chromium, for the browser test of the search page (tests/test_page.py); installed
# only when missing. Playwright drives it: never `playwright install` (no browser downloads).
CHROMIUM := /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
$(CHROMIUM):
	$(SUDO) apt-get update
	$(SUDO) apt-get install -y chromium

# A Japanese and Chinese font for the page's screenshots (tests/test_page.py draws Arabic and
# Japanese hits; Debian's chromium brings fonts for Latin and Arabic only).
CJK_FONT := /usr/share/fonts/opentype/ipafont-gothic/ipag.ttf
$(CJK_FONT):
	$(SUDO) apt-get update
	$(SUDO) apt-get install -y fonts-ipafont-gothic

chromium: $(CHROMIUM) $(CJK_FONT)

test: $(STAMP) lint chromium
	HOPGRAPH_CACHE=$${HOPGRAPH_CACHE:-$(CURDIR)/.hopgraph-cache} $(PY) -m pytest -q

# The wheel as a user gets it: built, installed in a fresh venv WITHOUT PyTorch (`pip install
# hopgraph[serve,docs]`), and run from outside the source tree: `hopgraph demo`, `hopgraph index`
# and `search` over a folder of documents, `hopgraph serve` answering a search. CI runs it after
# the suite. The passage student and the hop encoder run there too, in ONNX Runtime: an index
# built with the student, and a search on the demo's index with the hop encoder on.
PKG_VENV ?= $(CURDIR)/build/pkg-venv
PKG_DOCS := $(CURDIR)/tests/data/package_docs
package: $(STAMP)
	rm -rf dist $(PKG_VENV)
	$(PY) -m pip wheel --quiet --no-deps --no-build-isolation -w dist .
	$(PY) -c "import sys, zipfile; names = zipfile.ZipFile(sys.argv[1]).namelist(); \
	    need = ['models/minilm-onnx/model.onnx', 'models/reranker/model.onnx', \
	    'models/passage-student/layers.safetensors', 'models/hop-encoder/layers.safetensors']; \
	    missing = [n for n in need if not any(x.endswith(n) for x in names)]; \
	    sys.exit(f'the wheel lacks {missing}' if missing else 0)" dist/hopgraph-*.whl
	$(PYTHON) -m venv $(PKG_VENV)
	$(PKG_VENV)/bin/pip install --quiet "$$(ls dist/hopgraph-*.whl)[serve,docs]"
	$(PKG_VENV)/bin/python -c "import importlib.util as u, sys; \
	    sys.exit('torch was installed' if u.find_spec('torch') else 0)"
	du -sh $(PKG_VENV)
	cd $(PKG_VENV) && ./bin/hopgraph demo --workdir $(PKG_VENV)/demo
	cd $(PKG_VENV) && ./bin/hopgraph index $(PKG_DOCS) -o $(PKG_VENV)/docs-index -q
	cd $(PKG_VENV) && ./bin/hopgraph search $(PKG_VENV)/docs-index -k 3 \
	    "Who founded the shipyard that built SS Orrendale?" | tee $(PKG_VENV)/search.txt
	grep -q "Tobias Grennick" $(PKG_VENV)/search.txt
	cd $(PKG_VENV) && ./bin/hopgraph index $(PKG_DOCS) -o $(PKG_VENV)/student-index -q \
	    --set dense.passage_encoder=student 2>&1 | tee $(PKG_VENV)/student.txt
	grep -q "passage student of the query encoder (onnx" $(PKG_VENV)/student.txt
	cd $(PKG_VENV) && ./bin/hopgraph search $(PKG_VENV)/demo/demo-index -k 3 --json \
	    --set hop_encoder=true "Who founded the shipyard that built SS Orrendale?" \
	    | ./bin/python -c "import json, sys; d = json.load(sys.stdin); \
	    sys.exit(0 if d['info']['hop_encoder'] == 'on' and 'hop_encoder' in \
	    d['hits'][0]['why']['lifted_by'] else f'hop encoder not run: {d[\"info\"]}')"
	cd $(PKG_VENV) && ./bin/python $(CURDIR)/.ci/serve_check.py ./bin/hopgraph $(PKG_VENV)/docs-index
	@echo "package: the wheel installs without torch and runs demo, index (also with the passage \
	student), search (also with the hop encoder) and serve"

# Rebuild the bundled MiniLM's ONNX export shipped in the wheel (src/hopgraph/models/minilm-onnx,
# hopgraph.models.packaged_encoder): exported with PyTorch, weights stored in float16. Seconds;
# the same bytes on every run with the same library versions.
encoder: $(STAMP)
	PYTHONPATH=src $(PY) -m hopgraph.models.packaged_encoder

# Rebuild the packaged reranker (src/hopgraph/models/reranker): train a 4-layer MiniLM
# cross-encoder on the training splits plus synthetic questions from their corpora, then
# export it as int8 ONNX. About 50 minutes on 2 cores (docs/methods.md, "The packaged reranker").
RERANKER_WORK ?= $(CURDIR)/build/reranker
reranker: $(STAMP)
	HOPGRAPH_CACHE=$${HOPGRAPH_CACHE:-$(CURDIR)/.hopgraph-cache} $(VENV)/bin/hopgraph \
	    train-reranker hotpotqa_train musique_train scifact:train --data-dir $(DATA) \
	    --synthetic 3000 --layers 4 --max-length 128 --epochs 2 --base hybrid \
	    --candidates 30 --seed 0 -o $(RERANKER_WORK)/model --overwrite
	$(VENV)/bin/hopgraph export-reranker $(RERANKER_WORK)/model \
	    -o src/hopgraph/models/reranker --overwrite

# Rebuild the bundled passage student (src/hopgraph/models/passage-student): layers 0, 3 and 5
# of MiniLM distilled on training passages and 600 unlabelled passages of each of six more
# collections (docs/methods.md, "The passage student"). 25 to 60 minutes on 2 cores; bit for bit
# the same on one machine.
student: $(STAMP)
	PYTHONPATH=src $(PY) benchmarks/student_encoder.py train --data-dir $(DATA) \
	    --extra-sets scifact,cacm,time,med,npl,pubmedqa --extra-per-set 600

# Rebuild the packaged hop encoder (src/hopgraph/models/hop-encoder) behind multihop's
# hop_encoder switch: MiniLM's layers trained on the gold chains of every dev and train set,
# embeddings frozen, with the ranker fitted on out-of-fold hop features of the chain questions
# (docs/methods.md, "The hop encoder switch"). About 25 minutes on 2 cores.
HOP_WORK ?= $(CURDIR)/build/hop-encoder
hop-encoder: $(STAMP)
	HOPGRAPH_CACHE=$${HOPGRAPH_CACHE:-$(CURDIR)/.hopgraph-cache} PYTHONPATH=src $(PY) \
	    benchmarks/hop_encoder.py --ship src/hopgraph/models/hop-encoder --freeze-embeddings \
	    --gate --data-dir $(DATA) --models-dir $(HOP_WORK)

bench: $(STAMP)
	$(PY) benchmarks/base.py --data-dir $(DATA)

clean:
	rm -rf $(VENV) .hopgraph-cache .pytest_cache .ruff_cache src/*.egg-info dist build
