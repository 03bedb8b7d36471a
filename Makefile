# hypershift-capi-proxy: private API groups for HyperShift's Cluster API, and the proxy that hides them.
SHELL := /usr/bin/env bash -o errexit -o pipefail -o nounset
BIN := $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen
GO_TEST_FLAGS ?=

.PHONY: all build generate verify test test-unit test-e2e bench fuzz demo kube clean

all: build

## build: the proxy binary (bin/capi-proxy)
build:
	go build -o $(BIN)/capi-proxy ./proxy

# controller-gen at the version CAPI pins, from its own module (hack/tools) so newer Kubernetes
# dependencies never reach the main go.mod.
$(CONTROLLER_GEN): hack/tools/go.mod hack/tools/go.sum
	cd hack/tools && go build -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

## generate: private types, CRDs, converters and the route table from apis/upstream (run on every CAPI bump)
generate: $(CONTROLLER_GEN)
	go run ./generator -root . -controller-gen $(CONTROLLER_GEN)

## verify: regenerate and fail if anything differs from what is committed
verify: generate
	@git diff --exit-code -- apis/private zz_generated || { echo "generated code is out of date: run 'make generate' and commit"; exit 1; }
	@test -z "$$(git status --porcelain --untracked-files=all -- apis/private zz_generated)" || { git status --porcelain -- apis/private zz_generated; echo "generated files are not committed"; exit 1; }

## kube: build (or reuse from the cache) kube-apiserver, etcd, kube-controller-manager and kubectl
kube:
	hack/build-kube.sh

## test: every test: verify, unit tests, and the e2e tests against a real kube-apiserver
test: verify test-unit test-e2e

test-unit:
	go vet ./...
	go test $(GO_TEST_FLAGS) $$(go list ./... | grep -v /tests)

test-e2e:
	KUBE_BIN_DIR="$$(hack/build-kube.sh | tail -n 1)" go test $(GO_TEST_FLAGS) -count=1 -timeout 20m ./tests/...

## bench: translation benchmarks (typed conversion vs bare JSON decode+encode)
bench:
	go test -run '^$$' -bench . -benchmem ./tests/bench/...

## bench-migration: migrate a namespace of 1 Cluster, 5 MachineDeployments and 100 Machines (with infrastructure objects and Secrets) against a real apiserver
bench-migration:
	KUBE_BIN_DIR="$$(hack/build-kube.sh | tail -n 1)" go test -count=1 -timeout 20m -run '^$$' -bench BenchmarkMigrate -benchtime 1x ./tests/migration/

## fuzz: every fuzz target for FUZZTIME each (not part of make test; go test replays the seed corpora in testdata/fuzz)
FUZZTIME ?= 20s
fuzz:
	hack/fuzz.sh $(FUZZTIME)

## demo: real apiserver, private CRDs, the proxy, and a client creating CAPI objects through it
demo: build
	hack/demo.sh

clean:
	rm -rf $(BIN)
