# Flint's developer entry points. Every tool is pinned: Go tools through the
# tool directives in go.mod, the control plane built from Go modules by
# hack/envtest-assets.sh into a cache outside the repository.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/flint-io/flint/internal/version.Version=$(VERSION)
BIN := bin
BINARIES := operator osd-agent csi-driver kubectl-flint flint-bench

CONTROLLER_GEN := go tool controller-gen
STATICCHECK := go tool staticcheck

# The upstream sources no package registry serves: the archives in
# SOURCES by default (each checked against the SHA256SUMS beside it, and
# refused unless it holds the tag internal/version or the chart pins), or
# git repositories (paths or URLs) holding the pinned tags. Nothing of
# them is committed.
SOURCES ?= $(abspath ../shared/sources)
SPDK_SRC ?= $(firstword $(wildcard $(SOURCES)/spdk-v*.tar.gz))
DPDK_SRC ?= $(firstword $(wildcard $(SOURCES)/dpdk-v*.tar.gz))
CSI_REGISTRAR_SRC ?= $(firstword $(wildcard $(SOURCES)/node-driver-registrar-v*.tar.gz))
CSI_LIVENESSPROBE_SRC ?= $(firstword $(wildcard $(SOURCES)/livenessprobe-v*.tar.gz))

# The SPDK build tree the SPDK tests and benchmarks run: FLINT_SPDK_DIR,
# else make spdk's (built first when its cache has none).
spdk_dir = $(or $(FLINT_SPDK_DIR),$$(go run ./hack/spdk -spdk-src "$(SPDK_SRC)" -dpdk-src "$(DPDK_SRC)"))

.PHONY: all
all: build

##@ Build

.PHONY: build
build: ## Build every binary into bin/.
	@mkdir -p $(BIN)
	@for b in $(BINARIES); do CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/$$b ./cmd/$$b; done
	@echo "built: $(addprefix $(BIN)/,$(BINARIES))"

.PHONY: spdk
spdk: ## Build SPDK on DPDK from SPDK_SRC and DPDK_SRC with the OSD image's recipe, once per sources and recipe (~/.cache/flint/spdk), and print the FLINT_SPDK_DIR to use.
	@go run ./hack/spdk -spdk-src "$(SPDK_SRC)" -dpdk-src "$(DPDK_SRC)"

##@ Generate

PROTOS := osd-image/agent/api/v1/agent.proto

.PHONY: generate
generate: ## Generate deepcopy code from the API types and Go code from the agent's proto.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	@command -v protoc >/dev/null || { echo "generate: protoc missing: apt-get install protobuf-compiler" >&2; exit 1; }
	protoc --plugin=protoc-gen-go=hack/protoc-gen-go --plugin=protoc-gen-go-grpc=hack/protoc-gen-go-grpc \
		--go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative $(PROTOS)

.PHONY: manifests
manifests: ## Generate CRDs and RBAC from kubebuilder markers, and the chart's parts that config/ holds.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=flint-operator paths=./controllers/... output:rbac:artifacts:config=config/rbac
	go run ./hack/chartsync
	go run ./hack/snapshotcrds

.PHONY: verify
verify: ## Fail when generated code or manifests are stale, or go.mod is untidy.
	hack/verify-generated.sh

##@ Test

.PHONY: test
test: test-unit test-envtest ## Unit tests and the suites against a real kube-apiserver.

.PHONY: test-unit
test-unit: ## Tests that need no control plane.
	go test -race -count=1 $$(go list ./... | grep -v /test/)

.PHONY: test-envtest
test-envtest: ## Suites against a real kube-apiserver and etcd (built on first use).
	assets=$$(hack/envtest-assets.sh); KUBEBUILDER_ASSETS="$$assets" go test -count=1 -timeout 30m ./test/...

.PHONY: fuzz
fuzz: ## Run every Go fuzz target for FUZZTIME each (default 60s); their seed corpora run in test-unit.
	hack/fuzz.sh

.PHONY: test-sanity
test-sanity: ## The official CSI sanity suite (csi-test/v5) against csi.flint.io over the operator, agents and SPDK double (part of test-envtest; needs root for loop devices and mounts).
	assets=$$(hack/envtest-assets.sh); KUBEBUILDER_ASSETS="$$assets" go test -count=1 -v ./test/sanity/ -ginkgo.no-color | grep -E '^(Ran|SUCCESS|FAIL|--- )|Passed'

.PHONY: test-vm
test-vm: ## The VM node lab: the CSI node service in a QEMU guest (Debian 6.1 kernel) against kernel nvmet over TCP and soft-RoCE RDMA, and SPDK (FLINT_SPDK_DIR's, or make spdk's) driving the guest's NVMe over vfio and hugepages with RDMA to the kernel host, each preflight check broken; then, on bookworm-backports' 6.12, that host authenticating (DH-HMAC-CHAP).
	FLINT_SPDK_DIR="$(spdk_dir)" hack/vmlab/run.sh
	FLINT_SPDK_DIR="$(spdk_dir)" VMLAB_KERNEL=backports VMLAB_AUTH=1 VMLAB_RUN=TestProductionDataPath hack/vmlab/run.sh

.PHONY: test-spdk
test-spdk: ## The SPDK contract suite against real nvmf_tgt, then the agent's restart tests and the data-path scenarios (replica loss, rebuild and delta resync, target loss and move, lease fencing, a host's reset, a snapshot cut under a writer and restored; data checksummed with spdk_dd) against real flint_tgt: FLINT_SPDK_DIR's, or make spdk's.
	dir="$(spdk_dir)"; \
	FLINT_SPDK_DIR="$$dir" go test -count=1 -v -run 'TestContract' ./internal/spdk/contract/; \
	FLINT_SPDK_DIR="$$dir" go test -count=1 -v ./osd-image/agent/lifecycle/; \
	FLINT_SPDK_DIR="$$dir" go test -count=1 -v ./test/datapath/

FAULTS ?= 100
FAULT_SEEDS ?= new
FAULT_DURATION ?= 20m

# The storm builds the operator and the agent inside its network
# namespace, where there is no network: their modules are fetched first.
.PHONY: test-faults
test-faults: ## The fault storm: a 3-replica Volume on real SPDK (FLINT_SPDK_DIR's, or make spdk's) under FAULTS seeded faults (default 100, at most FAULT_DURATION, 20m) for each seed of FAULT_SEEDS (comma-separated, "new" draws one): kills, freezes and partitions of SPDK, agents, the operator's leader and the writer; every acknowledged block checked after each round and on every in-sync replica's disk (as root, in a network namespace of its own).
	dir="$(spdk_dir)"; assets=$$(hack/envtest-assets.sh); go test -c -o bin/faults.test ./test/faults && go build ./cmd/operator ./cmd/osd-agent && \
	cd test/faults && KUBEBUILDER_ASSETS="$$assets" FLINT_SPDK_DIR="$$dir" FAULTS="$(FAULTS)" FAULT_SEEDS="$(FAULT_SEEDS)" FAULT_DURATION="$(FAULT_DURATION)" \
	../../hack/own-netns.sh ../../bin/faults.test -test.v -test.count=1 -test.timeout=4h -test.run=TestFaultStorm

.PHONY: test-transcripts
test-transcripts: ## Record SPDK's JSON-RPC transcripts afresh on real SPDK (FLINT_SPDK_DIR's, or make spdk's) and replay them on the double: a step where they disagree fails.
	dir="$(spdk_dir)"; out=$$(mktemp -d /tmp/flint-transcripts.XXXXXX); echo "fresh transcripts: $$out"; \
	go run ./hack/spdk-record -spdk-dir "$$dir" -out "$$out"; \
	FLINT_SPDK_TRANSCRIPTS="$$out" go test -count=1 -v -run TestReplayTranscripts ./internal/spdk/spdktest/

.PHONY: record-transcripts
record-transcripts: ## Record the committed transcripts (internal/spdk/spdktest/testdata/transcripts) again on real SPDK; take it on a quiet machine.
	dir="$(spdk_dir)"; go run ./hack/spdk-record -spdk-dir "$$dir" -out internal/spdk/spdktest/testdata/transcripts

.PHONY: test-e2e
test-e2e: ## The e2e lab (as root): real control plane, containerd and kubelet in a network namespace of their own, the chart installed from the images built here (the OSD's and two sidecars' from SOURCES), Kubernetes' storage suite (E2E_SUITE=ci|full|0).
	SPDK_SRC="$(SPDK_SRC)" DPDK_SRC="$(DPDK_SRC)" CSI_REGISTRAR_SRC="$(CSI_REGISTRAR_SRC)" CSI_LIVENESSPROBE_SRC="$(CSI_LIVENESSPROBE_SRC)" hack/e2e/run.sh

.PHONY: test-images
test-images: images ## Run each image of make images with runc (as root; needs runc): --version, and the CSI image's filesystem tools.
	FLINT_IMAGES_DIR=$(abspath $(IMAGES)) FLINT_IMAGES_VERSION=$(VERSION) go test -count=1 -v ./test/images/

##@ Images

IMAGES ?= _output/images
IMAGE_FLAGS = -out $(IMAGES) -version $(VERSION) -spdk-src "$(SPDK_SRC)" -dpdk-src "$(DPDK_SRC)"

.PHONY: images
images: ## Build the operator, CSI and (given SPDK_SRC and DPDK_SRC) OSD images as OCI archives in IMAGES, without a container engine (as root; needs mmdebstrap); the OSD image takes flint_tgt and nvmf_tgt from make spdk's build.
	go run ./hack/images $(IMAGE_FLAGS)

.PHONY: images-push
images-push: ## Build the images and push them to REGISTRY (host[/path]).
	@if [ -z "$(REGISTRY)" ]; then echo "images-push: set REGISTRY, e.g. REGISTRY=registry.example.com/flint" >&2; exit 2; fi
	go run ./hack/images $(IMAGE_FLAGS) -push $(REGISTRY)

.PHONY: envtest-assets
envtest-assets: ## Build kube-apiserver, etcd and kubectl into the cache; print the directory.
	@hack/envtest-assets.sh

##@ Benchmarks

N ?= 1000
RATE ?= 5
QOS ?= 1000
DURATION ?= 2m
SCALE ?= 10000
REST ?= 5m
SNAPSHOTS ?= -1

.PHONY: bench-datapath
bench-datapath: ## Raw SPDK beside Flint Volumes of 1, 2 and 3 replicas (real operator and agents, OSDs launched as their pods say) on nvmf_tgt (FLINT_SPDK_DIR's, or make spdk's): spdk_nvme_perf over NVMe/TCP and the kernel host in a VM lab guest; IOPS, MiB/s, avg/p50/p99/p99.9, ratios to raw and to 1 replica, the target's latency histogram beside the initiator's; JSON in bench-datapath.json (root).
	dir="$(spdk_dir)"; assets=$$(hack/envtest-assets.sh); KUBEBUILDER_ASSETS="$$assets" FLINT_SPDK_DIR="$$dir" go run ./hack/bench-datapath $(BENCH_ARGS)

.PHONY: bench-qos
bench-qos: ## A Flint Volume of 1 and of 2 replicas on real nvmf_tgt limited to QOS IOPS (default 1000) through spec.qos: spdk_nvme_perf 4k random writes at QD32 unlimited, then limited; fails when the limited rate is more than 5% off the limit.
	$(MAKE) bench-datapath BENCH_ARGS="-qos $(QOS) -replicas 1,2 -kernel=false -runtime 10s"

.PHONY: bench-resync
bench-resync: ## #34's resync case on real flint_tgt (FLINT_SPDK_DIR's, or make spdk's): a 1 GiB Volume of 2 replicas, one out for 10 s under spdk_nvme_perf's 4 KiB random writes at QD8, then back: bytes copied and time to in sync of the full rebuild and of the delta resync (and of a delta after 1 s out), beside what a delta would copy at the lvstore's cluster grain (measured) and at 4 and 64 KiB (expected).
	dir="$(spdk_dir)"; FLINT_SPDK_DIR="$$dir" go test -run '^$$' -bench '^BenchmarkResync$$' -benchtime 1x -v ./test/datapath

.PHONY: bench-provision
bench-provision: ## Against the real apiserver, 30 OSDs (agents over SPDK doubles): a burst of N Volumes (default 1000), then RATE Volumes/s for DURATION (5, 2m); create-to-Ready p50/p99, total time, API writes and agent calls per Volume; checks placement.
	assets=$$(hack/envtest-assets.sh); go build -o bin/bench-provision ./hack/bench-provision && \
	KUBEBUILDER_ASSETS="$$assets" bin/bench-provision -n $(N) && \
	KUBEBUILDER_ASSETS="$$assets" bin/bench-provision -rate $(RATE) -duration $(DURATION)

.PHONY: bench-scale
bench-scale: ## The control plane at SCALE Volumes (default 10000), 3 replicas each, and SNAPSHOTS Snapshots (default -1: one per Volume; about 75 minutes here in all), on 60 OSDs (agents over SPDK doubles): burst time and create p99, then at rest for REST (5m): operator CPU and RSS, agent calls and SPDK RPCs per OSD, apiserver writes; a target deleted behind the operator's back, timed back; an operator restart, timed until it has seen everything again.
	assets=$$(hack/envtest-assets.sh); go build -o bin/bench-provision ./hack/bench-provision && \
	KUBEBUILDER_ASSETS="$$assets" bin/bench-provision -n $(SCALE) -nodes 20 -osds-per-node 3 -osd-size 16Gi -snapshots $(SNAPSHOTS) -rest $(REST)

##@ Lint

.PHONY: lint
lint: ## gofmt, go vet, staticcheck and golangci-lint (.golangci.yml; pinned in hack/tools/golangci-lint).
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	go vet ./...
	$(STATICCHECK) ./...
	go tool -modfile=hack/tools/golangci-lint/go.mod golangci-lint run ./...

##@ Run

.PHONY: run
run: ## Start a local cluster (control plane, 3 nodes, operator, dev Pool OSDs over SPDK doubles or FLINT_SPDK_DIR's flint_tgt), apply the samples and show them.
	assets=$$(hack/envtest-assets.sh); KUBEBUILDER_ASSETS="$$assets" go run ./hack/localup $(RUN_ARGS)

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ {printf "  %-16s %s\n", $$1, $$2} /^##@/ {printf "\n%s\n", substr($$0, 5)}' $(MAKEFILE_LIST)
