# tandem: a kube-scheduler with the WorkflowReservation plugin for ARC
# kubernetes mode. Every target builds what it needs; nothing is downloaded
# but Go modules, and for real nodes (make kubelet, make test) Debian's
# containerd, runc and CNI plugins, installed with apt-get as root.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -o errexit -o nounset -o pipefail -c

GO ?= go
LOCAL_DIR ?= _output/local
# Integration tests start real etcd + kube-apiserver processes from bin/.
TEST_TIMEOUT ?= 30m

.PHONY: all
all: build

## build: tandem-scheduler and tandem-webhook into bin/, version-stamped
.PHONY: build
build:
	source hack/lib/version.sh && $(GO) build -ldflags "$$TANDEM_LDFLAGS" -o bin/tandem-scheduler ./cmd/tandem-scheduler
	source hack/lib/version.sh && $(GO) build -ldflags "$$TANDEM_LDFLAGS" -o bin/tandem-webhook ./cmd/tandem-webhook

## kubectl-tandem: the kubectl plugin (cmd/kubectl-tandem, its own Go module) into bin/
.PHONY: kubectl-tandem
kubectl-tandem:
	cd cmd/kubectl-tandem && $(GO) build -o ../../bin/kubectl-tandem .

## control-plane: etcd and kube-apiserver into bin/ (cold: a few minutes, then seconds)
.PHONY: control-plane
control-plane:
	hack/build-control-plane.sh

## karpenter: Karpenter's KWOK cloud provider (v1.13.0, its own module) into bin/karpenter-kwok, its CRDs into bin/karpenter-crds/, its instance types into bin/karpenter-kwok-instance-types.json (cold: ~1.5 min of CPU, then seconds)
.PHONY: karpenter
karpenter:
	hack/build-karpenter.sh

## kubelet: what real nodes need (harness/realnode): containerd, runc and the CNI plugins (apt-get, when missing), bin/kubelet built from k8s.io/kubernetes at go.mod's version (cold: ~1 min), bin/tandem-pause-image.tar
.PHONY: kubelet
kubelet:
	hack/build-kubelet.sh

## demo-kubelet: the seed failure and a burst of 20 jobs on two real kubelets with containerd (root): default kube-scheduler, tandem, tandem with reservationMode Pods; _output/demo-kubelet/ (about 5 min)
.PHONY: demo-kubelet
demo-kubelet: control-plane kubelet
	$(GO) run ./cmd/tandem-sim --real-nodes --scenario test/scenarios/kubelet-seed.yaml --schedulers default,tandem,tandem-pods --out _output/demo-kubelet/seed
	$(GO) run ./cmd/tandem-sim --real-nodes --scenario test/scenarios/kubelet-burst.yaml --schedulers default,tandem,tandem-pods --out _output/demo-kubelet/burst

## demo: the simulator's seed scenario, default kube-scheduler vs tandem, on a local control plane
.PHONY: demo
demo: control-plane
	$(GO) run ./cmd/tandem-sim --scenario test/scenarios/seed.yaml --schedulers default,tandem

## demo-gpu: test/scenarios/gpu.yaml: GPU and cpu jobs side by side on tainted GPU nodes (device-plugin GPUs), default kube-scheduler, tandem, tandem with reservationMode Pods; _output/demo-gpu/
.PHONY: demo-gpu
demo-gpu: control-plane
	$(GO) run ./cmd/tandem-sim --scenario test/scenarios/gpu.yaml --schedulers default,tandem,tandem-pods --out _output/demo-gpu

## demo-small: two small cases (test/scenarios/small-*.yaml): the seed sequence and a burst, default kube-scheduler vs tandem
.PHONY: demo-small
demo-small: control-plane
	$(GO) run ./cmd/tandem-sim --scenario test/scenarios/small-seed.yaml --out _output/demo-small/seed
	$(GO) run ./cmd/tandem-sim --scenario test/scenarios/small-burst.yaml --out _output/demo-small/burst

## demo-picture: run the demo into _output/demo and copy its report.svg to docs/images/demo.svg (the README's picture)
.PHONY: demo-picture
demo-picture: control-plane
	$(GO) run ./cmd/tandem-sim --scenario test/scenarios/seed.yaml --schedulers default,tandem --out _output/demo
	mkdir -p docs/images
	cp _output/demo/report.svg docs/images/demo.svg

## demo-autoscale: test/scenarios/autoscale.yaml with the real Karpenter (KWOK provider): default kube-scheduler, tandem, tandem with reservationMode Pods (about 6 min)
.PHONY: demo-autoscale
demo-autoscale: control-plane karpenter
	$(GO) run ./cmd/tandem-sim --scenario test/scenarios/autoscale.yaml --schedulers default,tandem,tandem-pods --out _output/demo-autoscale

# A checkout of kubernetes/autoscaler (its root or its cluster-autoscaler/
# directory); when it does not exist, hack/build-cluster-autoscaler.sh clones
# the tag it names into it, which needs access to the code host.
CA_SRC ?= _output/autoscaler-src

## cluster-autoscaler: the real Cluster Autoscaler with only its KWOK cloud provider, built from the checkout CA_SRC into bin/cluster-autoscaler (cold: ~4 min); not in make test (the module proxy does not serve it)
.PHONY: cluster-autoscaler
cluster-autoscaler:
	hack/build-cluster-autoscaler.sh $(CA_SRC)

## demo-autoscale-ca: test/scenarios/autoscale.yaml with the real Cluster Autoscaler in place of Karpenter (CA_SRC: a kubernetes/autoscaler checkout): default, tandem, tandem-pods; _output/demo-autoscale-ca/report.json and report.svg (about 9 min)
.PHONY: demo-autoscale-ca
demo-autoscale-ca: control-plane cluster-autoscaler
	$(GO) run ./cmd/tandem-sim --scenario test/scenarios/autoscale.yaml --schedulers default,tandem,tandem-pods --autoscaler ClusterAutoscaler --out _output/demo-autoscale-ca

CHAOS_JOBS ?= 500
CHAOS_SEED ?= 1
CHAOS_ARGS ?=
## chaos: the chaos scenario (test/scenarios/chaos.yaml) against the tandem-scheduler binary: SIGKILLs, leader kills, an apiserver restart, runner failures, node deletions; _output/chaos/report.json (CHAOS_JOBS, CHAOS_SEED, CHAOS_ARGS)
.PHONY: chaos
chaos: control-plane build
	$(GO) run ./cmd/tandem-chaos --jobs $(CHAOS_JOBS) --seed $(CHAOS_SEED) --out _output/chaos $(CHAOS_ARGS)

## test: unit and integration tests (integration tests run real etcd + kube-apiserver and real kubelets with containerd, test/autoscale the real Karpenter); the unit tests of the plugin and the packages it calls (model, sizing, controllers, contract) also with -race; a small release built twice, the same byte for byte
.PHONY: test
test: control-plane build karpenter kubelet verify test-tools test-kubectl-tandem
	$(GO) test -race -count=1 ./pkg/workflowreservation/... ./pkg/reservations/... ./pkg/sizing/... ./pkg/controllers/... ./pkg/leadership/... ./pkg/metrics/...
	cd contract && $(GO) test -race -count=1 ./...
	hack/bench-cycle.sh short
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...
	hack/bench-scheduler.sh short
	hack/bench-sim.sh short
	hack/upstream-tests.sh short
	hack/test-release.sh

## fuzz: every fuzz target (parsers of user input) for FUZZTIME each; `make test` runs their seed corpus
FUZZTIME ?= 30s
.PHONY: fuzz
fuzz:
	for pkg in $$($(GO) list ./pkg/...); do \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "fuzzing $$pkg $$target for $(FUZZTIME)"; \
	    $(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

## test-autoscale: the real Karpenter (KWOK provider) on a local control plane with the kubelet emulator, and the simulator's autoscale scenario small (test/autoscale; make test runs it too)
.PHONY: test-autoscale
test-autoscale: control-plane karpenter
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -v ./test/autoscale/

## test-unit: unit tests only
.PHONY: test-unit
test-unit: test-kubectl-tandem
	$(GO) test -count=1 ./pkg/... ./harness/... ./cmd/...

## test-kubectl-tandem: vet and unit-test the kubectl plugin's module (its integration test is in test/integration) and the contract module it shares with the scheduler
.PHONY: test-kubectl-tandem
test-kubectl-tandem:
	cd cmd/kubectl-tandem && $(GO) vet ./... && $(GO) test -count=1 ./...
	cd contract && $(GO) vet ./... && $(GO) test -count=1 ./...

# kube-apiserver versions of make test-compat (v1.35.4, go.mod's, means bin/ itself).
COMPAT_VERSIONS ?= v1.36.3 v1.37.2

## test-compat: integration tests once per newer kube-apiserver (COMPAT_VERSIONS, built by hack/build-compat.sh), a summary line each; not in make test
.PHONY: test-compat
test-compat: control-plane build kubelet
	hack/build-compat.sh $(COMPAT_VERSIONS)
	TEST_TIMEOUT=$(TEST_TIMEOUT) hack/test-compat.sh $(COMPAT_VERSIONS)

## build-versions: tandem-scheduler, tandem-webhook and kube-apiserver built against each supported Kubernetes minor (hack/lib/version.sh) into bin/vX.Y/, from this one tree (hack/compat/vX.Y modules); cold: a few minutes per minor
.PHONY: build-versions
build-versions: control-plane kubelet
	hack/build-versions.sh

## test-versions: per minor, the plugin's unit tests and the integration tests against its own kube-apiserver and tandem-scheduler (bin/vX.Y), then a short chaos run with the newest; a summary line per minor; not in make test
.PHONY: test-versions
test-versions: build-versions
	TEST_TIMEOUT=$(TEST_TIMEOUT) hack/test-versions.sh

## generate: deepcopy, conversion and defaulting code of pkg/apis (zz_generated.*.go)
.PHONY: generate
generate:
	hack/update-codegen.sh

## verify: gofmt, generated code up to date (deepcopy), golangci-lint (govet included), go vet against every other supported minor (hack/vet-versions.sh)
.PHONY: verify
verify: lint
	hack/verify-gofmt.sh
	hack/verify-codegen.sh
	hack/vet-versions.sh

## lint: golangci-lint v2 (pinned in hack/tools/lint, built into bin/) with .golangci.yaml
.PHONY: lint
lint:
	cd hack/tools/lint && $(GO) build -o ../../../bin/golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint
	bin/golangci-lint run ./...
	cd cmd/kubectl-tandem && ../../bin/golangci-lint run --config ../../.golangci.yaml ./...
	cd contract && ../bin/golangci-lint run --config ../.golangci.yaml ./...

## local-up: etcd + kube-apiserver + tandem-scheduler in the background; prints the KUBECONFIG line
.PHONY: local-up
local-up: control-plane build
	$(GO) run ./cmd/tandem-local up --dir $(LOCAL_DIR) --scheduler-config manifests/scheduler-config.yaml

## kubelet-up: local-up with two real nodes kl-1 and kl-2 (a kubelet and a containerd each, 750m cpu and 2Gi allocatable; root) in place of Node objects; pods run as real containers if they name the local image (realnode.ImageName, imagePullPolicy Never); stop with make local-down
.PHONY: kubelet-up
kubelet-up: control-plane build kubelet
	$(GO) run ./cmd/tandem-local up --dir $(LOCAL_DIR) --scheduler-config manifests/scheduler-config.yaml --nodes 0 --real-nodes 2

## local-down: stops everything local-up started
.PHONY: local-down
local-down:
	$(GO) run ./cmd/tandem-local down --dir $(LOCAL_DIR)

## tools: render-chart, kustomize-build, build-image (hack/tools, its own Go module) into bin/
.PHONY: tools
tools:
	cd hack/tools && $(GO) build -o ../../bin/ ./cmd/...

## test-tools: vet and test hack/tools and hack/promrules (Prometheus's rule parser, its own Go module)
.PHONY: test-tools
test-tools:
	cd hack/tools && $(GO) vet ./... && $(GO) test -count=1 ./...
	cd hack/promrules && $(GO) vet ./... && $(GO) test -count=1 ./...

## manifests: the chart rendered as `helm template` does into _output/manifests/ (no helm binary)
.PHONY: manifests
manifests:
	mkdir -p _output/manifests
	cd hack/tools && $(GO) run ./cmd/render-chart ../../manifests/charts/tandem-scheduler > ../../_output/manifests/tandem-scheduler.yaml
	@echo "wrote _output/manifests/tandem-scheduler.yaml"

## image: multi-arch (amd64, arm64) OCI images into _output/image (tandem-scheduler and tandem-webhook) and _output/image-pause, no Docker, for one Kubernetes minor: KUBE_MINOR=1.34|1.35|1.36|1.37 (default the newest), tagged <tandem version>-k8s<minor>
KUBE_MINOR ?=
.PHONY: image
image:
	KUBE_MINOR=$(KUBE_MINOR) hack/build-image.sh

## release: every artifact of release VERSION (default hack/lib/version.sh's TANDEM_VERSION) into _output/release/VERSION: OCI image archives per Kubernetes minor, the packaged chart, kubectl-tandem for linux and darwin with its krew manifest, an SPDX SBOM per binary, SHA256SUMS; byte-identical when built again (docs/install.md, "From a release")
VERSION ?=
.PHONY: release
release:
	VERSION=$(VERSION) hack/release.sh

## test-release: a small release (the newest Kubernetes minor, linux/amd64 images, kubectl-tandem for linux/amd64 and darwin/arm64) built twice and compared byte for byte; make test runs it
.PHONY: test-release
test-release:
	hack/test-release.sh

## bench: scheduling throughput of tandem vs vanilla kube-scheduler, side by side (scheduler_perf; ~10 min)
.PHONY: bench
bench: control-plane
	hack/bench.sh

## bench-cycle: the plugin's cost per scheduling cycle, tandem's profiles against vanilla's on the same snapshot, 500 to 15,000 nodes, 0 to 20,000 reservations, COUNT=10 runs; ratios with intervals and verdicts in _output/bench/cycle.json (~30 min)
.PHONY: bench-cycle
bench-cycle:
	hack/bench-cycle.sh

## bench-scheduler: scheduler_perf, every workload, vanilla vs tandem back to back in alternating order, REPS=7 times (REPS_LARGE=3 at 5,000 nodes); _output/bench/scheduler.json (~70 min)
.PHONY: bench-scheduler
bench-scheduler: control-plane
	hack/bench-scheduler.sh

## bench-sim: cluster efficiency, the simulator on test/scenarios/large.yaml (100 nodes, 2,000 jobs of mixed sizes): default, anti-affinity workaround, tandem LeastAllocated and MostAllocated, jobs/h against the ideal packing bound; _output/bench/sim/ (~37 min)
.PHONY: bench-sim
bench-sim: control-plane
	hack/bench-sim.sh

## upstream-tests: kube-scheduler's own integration tests (go.mod's k8s.io/kubernetes; PKG, RUN, COUNT) vanilla and with WorkflowReservation as shipped in every profile (test/upstream), in alternating rounds; runs and failures per side (default: TestAsyncPreemption 20 times, ~35 min); make test runs one subtest once a side
.PHONY: upstream-tests
upstream-tests: control-plane
	hack/upstream-tests.sh

.PHONY: clean
clean:
	rm -rf bin _output

.PHONY: help
help:
	@sed -n 's/^## //p' $(MAKEFILE_LIST)
