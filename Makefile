# DNS performance lab. Every target ends in the `dnslab` CLI or a script; see README.md.
#   make lab up [LAB=reference] [RUNTIME=auto|clab|netns]     make lab down|status
#   make lab exec NODE=client CMD="dig @198.18.0.11 example.test SOA"
#   make experiment EXP=xfr-30k-zones [SCALE=ci] [KEY=VALUE ...]      make show EXP=xfr-30k-zones
#   make reproduce [SCALE=ci] [RESUME=results/campaign/<id>]
#   make book [RUNS="results/<exp>/<run-id> ..."]
#   make test      make images      make bench-lab      make bench-zones      make bench-dnsload
#   make bench-ceilings [RUNS="results/<exp>/<run-id> ..."]
SHELL := /bin/bash
# +B: no brace expansion in recipes, so a parameter given as a mapping reaches dnslab whole
# (make experiment ... BIND_OPTIONS="{transfers-in: 100, tcp-reuse-timeout: 0}")
.SHELLFLAGS := +B -c
VENV := .venv
PY := $(VENV)/bin/python
DNSLAB := $(VENV)/bin/dnslab
LAB ?=
RUNTIME ?= auto
HOSTS ?=
GENERATOR_HOST ?=
SERVER_HOST ?=
TEST_WORKERS ?= $(shell nproc)
export LAB RUNTIME HOSTS GENERATOR_HOST SERVER_HOST

# `make lab up`: the word after `lab` is the action, not a target of its own.
ifeq (lab,$(firstword $(MAKECMDGOALS)))
  LAB_ACTION := $(word 2,$(MAKECMDGOALS))
  ifneq ($(LAB_ACTION),)
    $(eval $(LAB_ACTION):;@:)
  endif
endif

.PHONY: setup test-setup docker-setup lab experiment test test-unit test-integration test-docker test-clean-root lint images \
        containerlab dnsload base-image dockerd dockerd-stop bench-lab bench-zones bench-dnsload bench-ceilings bench-hosts analysis compare runs book reproduce show clean

$(VENV)/.installed: pyproject.toml scripts/setup.sh
	@scripts/setup.sh && touch $@

setup: $(VENV)/.installed
	@scripts/setup.sh

test-setup: $(VENV)/.installed
	@scripts/setup.sh --test

lab: $(VENV)/.installed
ifeq ($(LAB_ACTION),exec)
	@exec $(DNSLAB) lab exec $(NODE) -- $(CMD)
else
	@exec $(DNSLAB) lab $(or $(LAB_ACTION),status)
endif

# exec: make's child is the CLI itself, so a SIGTERM to make (timeout, a CI job's end), which
# make passes on to its child, reaches the runner and tears the lab down as Ctrl-C does
experiment: $(VENV)/.installed
	@exec $(DNSLAB) experiment run "$(EXP)" $(filter-out EXP=%,$(MAKEOVERRIDES))

# what an experiment is: its story, parameters (defaults, scales, rules), claims and plots
show: $(VENV)/.installed
	@$(DNSLAB) experiment show "$(EXP)"

analysis: $(VENV)/.installed
	@$(PY) -m analysis run $(RUN)

compare: $(VENV)/.installed
	@$(PY) -m analysis compare $(RUNS)

runs: $(VENV)/.installed
	@$(PY) -m analysis runs

# every finding's experiments as one campaign, then the book (resumable: RESUME=results/campaign/<id>)
reproduce: $(VENV)/.installed
	@exec $(DNSLAB) reproduce $(filter SCALE=% RUNTIME=% RESUME=% PLAN_ONLY=%,$(MAKEOVERRIDES))

# the findings book (HTML + 16:9 PDF deck) from the newest complete run of each experiment
book: $(VENV)/.installed
	@$(PY) -m analysis book $(RUNS)

lint: $(VENV)/.installed
	@$(VENV)/bin/ruff check dnslab zones experiments analysis tests bench

test-unit: $(VENV)/.installed
	@$(VENV)/bin/pytest -q tests/unit experiments

test-integration: setup
	@$(VENV)/bin/pytest -q -m integration tests/integration

test-docker: $(VENV)/.installed
	@$(VENV)/bin/pytest -q -m docker tests/docker

# README's setup and first experiment (SCALE=ci) in clean Debian 12 and 13 roots (debootstrap,
# chroot, the system python3): 7-9.5 min for both, the last part of `make test`
test-clean-root: $(VENV)/.installed
	@$(VENV)/bin/pytest -q -m clean_root tests/integration/test_clean_root.py

# Everything CI runs: lint, unit (one worker per core: pure CPU, a file per worker), then the
# labs one at a time (netns and clab integration with real daemons, the images in real
# Docker), then README's Quick start in clean Debian 12 and 13 roots. Each part's timings in
# build/test-*.xml (scripts/test-times.py sums them per file).
test: test-setup containerlab dnsload
	@$(VENV)/bin/ruff check dnslab zones experiments analysis tests bench
	@$(VENV)/bin/pytest -q -n $(TEST_WORKERS) --dist loadfile --junitxml=build/test-unit.xml \
		tests/unit experiments
	@$(VENV)/bin/pytest --durations=30 --junitxml=build/test-labs.xml tests/integration tests/docker
	@$(VENV)/bin/pytest -q -m clean_root --junitxml=build/test-clean-root.xml \
		tests/integration/test_clean_root.py

containerlab:
	@scripts/build-containerlab.sh

dnsload:
	@scripts/build-dnsload.sh

base-image: docker-setup
	@scripts/make-base-image.sh

dockerd: docker-setup
	@scripts/start-dockerd.sh

# Docker and debootstrap, installed when missing (the image targets need nothing else)
docker-setup:
	@scripts/setup.sh --docker

dockerd-stop:
	@scripts/start-dockerd.sh --stop

# IMAGES=bind@9.20 (kind@version, a kind: its default version) or IMAGES=--all; default:
# each kind's default version and the versions the topologies name
images: docker-setup
	@scripts/build-images.sh $(IMAGES)

bench-lab: setup containerlab images
	@$(PY) -m bench.bench_lab

bench-zones: $(VENV)/.installed
	@$(PY) -m bench.bench_zones

bench-ceilings: $(VENV)/.installed
	@$(PY) -m bench.bench_ceilings $(RUNS)

bench-dnsload: $(VENV)/.installed dnsload
	@$(PY) -m bench.bench_dnsload --netns

# the cost of the path between two lab hosts (VXLAN), on two hosts emulated here
bench-hosts: setup dnsload
	@$(PY) -m bench.bench_hosts

clean:
	@$(DNSLAB) lab down
	rm -rf build
