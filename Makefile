# hypershift-capi-proxy: private API groups for HyperShift's Cluster API, and the proxy that hides them.
SHELL := /usr/bin/env bash -o errexit -o pipefail -o nounset
BIN := $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen
GOLANGCI_LINT := $(BIN)/golangci-lint
GO_TEST_FLAGS ?=

.PHONY: all build release cross image generate docs verify lint bump bump-rehearsal test test-unit test-e2e bench bench-e2e bench-scale bench-idle bench-migration bench-migration-fleet fuzz demo kube clean

all: build

## build: the proxy binary (bin/capi-proxy)
build:
	go build -o $(BIN)/capi-proxy ./proxy

# The image's build: a static, trimmed, stripped binary. `make release` is what the Containerfile runs,
# `make cross` runs it for every PLATFORMS entry, so CI compiles exactly what the image ships.
GOOS ?= $(shell go env GOOS)
GOARCH ?= $(shell go env GOARCH)
RELEASE_GOFLAGS := -trimpath
RELEASE_LDFLAGS := -s -w
PLATFORMS := linux/amd64 linux/arm64

## release: the image's binary for GOOS/GOARCH (bin/<os>-<arch>/capi-proxy): CGO_ENABLED=0, -trimpath, -ldflags=-s -w
release:
	CGO_ENABLED=0 GOOS=$(GOOS) GOARCH=$(GOARCH) go build $(RELEASE_GOFLAGS) -ldflags='$(RELEASE_LDFLAGS)' -o $(BIN)/$(GOOS)-$(GOARCH)/capi-proxy ./proxy

## cross: `make release` for every platform the image is built for (PLATFORMS); part of make test
cross:
	@for p in $(PLATFORMS); do echo "release $$p"; $(MAKE) --no-print-directory release GOOS=$${p%/*} GOARCH=$${p#*/} || exit 1; done

## image: the proxy image (Containerfile) with podman or docker, whichever works here, as IMAGE for IMAGE_PLATFORMS
IMAGE ?= quay.io/openshift/hypershift-capi-proxy:latest
IMAGE_PLATFORMS ?= linux/$(GOARCH)
image:
	@engine=""; \
	for e in podman docker; do \
		if command -v $$e >/dev/null 2>&1; then \
			if $$e info >/dev/null 2>&1; then engine=$$e; break; fi; \
			echo "make image: $$e is installed but cannot reach its engine ($$e info fails; is its daemon or machine running?)" >&2; \
		fi; \
	done; \
	if [ -z "$$engine" ]; then \
		echo "make image: needs podman or docker with a working engine; none here. 'make cross' builds the image's binaries without one." >&2; exit 1; \
	fi; \
	case $$engine in \
	podman) set -x; podman build --platform $(IMAGE_PLATFORMS) --manifest $(IMAGE) -f Containerfile . ;; \
	docker) set -x; docker buildx build --platform $(IMAGE_PLATFORMS) -t $(IMAGE) -f Containerfile --load . ;; \
	esac

# controller-gen at the version CAPI pins, from its own module (hack/tools) so newer Kubernetes
# dependencies never reach the main go.mod.
$(CONTROLLER_GEN): hack/tools/go.mod hack/tools/go.sum
	cd hack/tools && go build -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

## generate: private types, CRDs, converters, the route table and the install assets (config/) from apis/upstream (run on every CAPI bump)
generate: $(CONTROLLER_GEN)
	go run ./generator -root . -controller-gen $(CONTROLLER_GEN)

## docs: the reference tables of docs/operations.md (flags, metrics, health checks, log levels) from the code
## that defines them (hack/docgen). Not part of generate: it builds the proxy, which make bump runs
## generate before it can (go mod tidy comes after).
docs:
	go run ./hack/docgen -root .

# What make generate and make docs write.
GENERATED := apis/private zz_generated config docs/operations.md

## verify: regenerate code and docs and fail if anything differs from what is committed
verify: generate docs
	@git diff --exit-code -- $(GENERATED) || { echo "generated code or docs are out of date: run 'make generate docs' and commit"; exit 1; }
	@test -z "$$(git status --porcelain --untracked-files=all -- $(GENERATED))" || { git status --porcelain -- $(GENERATED); echo "generated files are not committed"; exit 1; }

# golangci-lint from its own module (hack/lint), for the same reason.
$(GOLANGCI_LINT): hack/lint/go.mod hack/lint/go.sum
	cd hack/lint && go build -o $(GOLANGCI_LINT) github.com/golangci/golangci-lint/v2/cmd/golangci-lint

## lint: golangci-lint (.golangci.yml: staticcheck, unused, errorlint, govet, ineffassign, gofmt) over the root module and tests/alerts
lint: $(GOLANGCI_LINT)
	$(GOLANGCI_LINT) run ./...
	cd tests/alerts && $(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml ./...

## bump: CAPI=<version> [PROVIDER="<module>@<version> ..."] [PLATFORM=<version>] [CONTROLLER_GEN_VERSION=<version>]:
## update the pins (go.mod, hack/capi, the platform CRDs of e2e, hack/tools), regenerate, and print the bump report (hack/bump.sh)
CAPI ?=
PROVIDER ?=
PLATFORM ?=
CONTROLLER_GEN_VERSION ?=
bump:
	PLATFORM="$(PLATFORM)" CONTROLLER_GEN_VERSION="$(CONTROLLER_GEN_VERSION)" hack/bump.sh "$(CAPI)" $(PROVIDER)

## bump-rehearsal: the same in a throw-away copy of the committed tree; prints the report, changes nothing;
## COMPARE=<git ref> ends the report with the generated tree compared with that ref's
COMPARE ?=
bump-rehearsal:
	PLATFORM="$(PLATFORM)" CONTROLLER_GEN_VERSION="$(CONTROLLER_GEN_VERSION)" BUMP_COMPARE="$(COMPARE)" hack/bump-rehearsal.sh "$(CAPI)" $(PROVIDER)

## kube: build (or reuse from the cache) kube-apiserver, etcd, kube-controller-manager and kubectl
kube:
	hack/build-kube.sh

## test: every test: verify, lint, unit tests, the image's cross-compiles, and the e2e tests against a real kube-apiserver
test: verify lint test-unit cross test-e2e

test-unit:
	go vet ./...
	go test $(GO_TEST_FLAGS) $$(go list ./... | grep -v /tests)
	cd tests/alerts && go vet ./... && go test $(GO_TEST_FLAGS) ./...

# tests/e2e installs the platform's own CAPI CRDs beside the private ones: for every test those of its
# default release (what OCP 4.22 installs), then PLATFORM_CAPI_NEWER's (what newer platforms install) for
# the tests of the boundary only (tests/e2e's platformTests).
PLATFORM_CAPI_NEWER ?= v1.13.6
test-e2e:
	bin="$$(hack/build-kube.sh | tail -n 1)"; \
	KUBE_BIN_DIR="$$bin" go test $(GO_TEST_FLAGS) -count=1 -timeout 20m ./tests/... && \
	KUBE_BIN_DIR="$$bin" E2E_PLATFORM_CAPI=$(PLATFORM_CAPI_NEWER) go test $(GO_TEST_FLAGS) -count=1 -timeout 20m ./tests/e2e/

## bench: translation benchmarks (typed conversion vs bare JSON decode+encode)
bench:
	go test -run '^$$' -bench . -benchmem ./tests/bench/...

## bench-e2e: the proxy beside kube-apiserver and a bare reverse proxy on 10,000 Machines, with the
## watch fan-out (tests/bench/e2e; a few minutes). BENCH_E2E_FLAGS="-fanout= -rounds 2" for a short run,
## "-fanout= -machines 1000 -workloads create16" for one workload.
BENCH_E2E_FLAGS ?=
bench-e2e:
	KUBE_BIN_DIR="$$(hack/build-kube.sh | tail -n 1)" go run ./tests/bench/e2e $(BENCH_E2E_FLAGS)

## bench-scale: the shared proxy at HyperShift's scale beside the bare reverse proxy, in one run: NAMESPACES
## hosted-control-plane namespaces (100, 250, 500), each with a CAPI manager's and the AWS provider's informers
## on connections of their own, HyperShift's operator's cluster-wide ones, steady Machine writes and a restart
## of the proxy (tests/bench/scale, docs/performance.md). BENCH_SCALE_FLAGS="-duration 2m -rounds 2" ...
NAMESPACES ?= 100
BENCH_SCALE_FLAGS ?=
bench-scale:
	KUBE_BIN_DIR="$$(hack/build-kube.sh | tail -n 1)" go run ./tests/bench/scale -namespaces $(NAMESPACES) $(BENCH_SCALE_FLAGS)

## bench-idle: the idle proxy's memory (RSS: anonymous and file-backed; Go heap) in front of a real apiserver, after start and after 150 s idle (tests/bench/idle)
bench-idle:
	KUBE_BIN_DIR="$$(hack/build-kube.sh | tail -n 1)" go test -count=1 -run '^$$' -bench BenchmarkIdleMemory -benchtime 1x ./tests/bench/idle/

## bench-migration: migrate a namespace of 1 Cluster, 5 MachineDeployments and 100 Machines (with infrastructure objects and Secrets) against a real apiserver
bench-migration:
	KUBE_BIN_DIR="$$(hack/build-kube.sh | tail -n 1)" go test -count=1 -timeout 20m -run '^$$' -bench 'BenchmarkMigrate$$' -benchtime 1x ./tests/migration/

## bench-migration-fleet: `migrate run` over NAMESPACES (100) hosted-control-plane namespaces of 2 NodePools
## of 3 Machines each, pipelined, while CAPI's manager reconciles them through the proxy: wall time, writes
## held per namespace, the garbage collector's share (docs/migration.md). MANAGER=0, GC_OVERLAP=1, GRACE_MS=, MACHINES= vary it.
bench-migration-fleet:
	KUBE_BIN_DIR="$$(hack/build-kube.sh | tail -n 1)" NAMESPACES=$(NAMESPACES) go test -count=1 -timeout 90m -run '^$$' -bench BenchmarkMigrateNamespaces -benchtime 1x -v ./tests/migration/

## fuzz: every fuzz target for FUZZTIME each (not part of make test; go test replays the seed corpora in testdata/fuzz)
FUZZTIME ?= 20s
fuzz:
	hack/fuzz.sh $(FUZZTIME)

## demo: real apiserver, private CRDs, the proxy, and a client creating CAPI objects through it
demo: build
	hack/demo.sh

clean:
	rm -rf $(BIN)
