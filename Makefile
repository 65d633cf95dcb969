# stsdiag — see README.md. `make demo` and `make test` work on a fresh machine: they build the
# local control plane from the Go module proxy on first use and cache it in ~/.cache/stsdiag.
SHELL := /bin/bash
GO ?= go
BIN := bin/kubectl-stsdiag
RACE_PKGS = ./...
# The modules: the product's (cmd, internal, stuck, resolver, openshift, api) and, each with a
# go.mod of its own so that what only they need stays out of the product's go.mod: e2e (the
# suites, their harnesses, the HTML report's browser test; it replaces the product's module with
# ../), deploy (the shipped files' tests: Helm, kustomize, prometheus-operator's types, Argo CD's
# Lua), release (goreleaser, krew, the container image), deploy/tekton (Tekton's types) and
# examples (the public packages imported as others would). vet runs go vet and staticcheck in
# each; the e2e targets run `go test` and `go run` in e2e/.
MODULES = . stuck/kstatus e2e deploy release deploy/tekton examples
# The modules that check the shipped files (Helm, kustomize, Tekton, goreleaser, the image): static
# builds of large libraries and no goroutine of ours. make test checks them while the kwok suite
# waits on its controllers (vet-packaging, unit-packaging); make vet and make unit include them.
PACKAGING_MODULES = deploy release deploy/tekton
CORE_MODULES = $(filter-out $(PACKAGING_MODULES),$(MODULES))
# Two build configurations, so that a cold `make test` compiles each package at most twice: the
# race detector's (cgo) for the unit tests of the modules whose goroutines they exercise
# (RACE_MODULES), and static (CGO_ENABLED=0, as make build, the release and the image) for all
# else: the binary under test, the e2e suite, bench, the other modules' tests. vet and staticcheck
# build each module as its unit tests do, so the tests reuse vet's compilation (a third, cgo
# non-race configuration used to compile the Kubernetes libraries once more).
RACE_MODULES = . stuck/kstatus e2e examples
RACE := CGO_ENABLED=1 GOFLAGS=-race
STATIC := CGO_ENABLED=0
# The e2e module's packages that need no control plane (the harnesses' tests, the browser test),
# for unit; listed in e2e/. The kwok suite is the package e2e itself; e2e/node (a real node) and
# e2e/openshift (OpenShift's image API) and e2e/fleet (three control planes and Prometheus
# servers) have their own targets.
E2E_UNIT_PKGS = $$($(GO) list ./... | grep -v -e '/e2e$$' -e '/e2e/node$$' -e '/e2e/openshift$$' -e '/e2e/fleet$$')

.PHONY: api-baseline all build test docs unit unit-core unit-packaging vet-core vet-packaging vet-tools vet-modules browser promtool e2e e2e-fleet e2e-node oracle node-bins e2e-openshift openshift-bins e2e-versions bench bench-mix cluster-bins demo deploy-demo cluster fuzz vet fmt clean image

all: build

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/stsdiag/stsdiag/cmd.version=$(VERSION) -X github.com/stsdiag/stsdiag/cmd.gitCommit=$(shell git rev-parse HEAD 2>/dev/null)

## build: static (CGO_ENABLED=0), as the release (.goreleaser.yaml) and the image ship it and as
## Kubernetes builds kubectl (KUBE_STATIC_BINARIES, hack/lib/golang.sh@v1.37.2): what the tests
## and the bench measure is what users run (a cgo build maps ~7 MiB more of itself at start)
build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/kubectl-stsdiag

## test: what make vet and make unit check, the e2e suite on a real local control plane, then the
## bench. First, serially, what fails fastest: gofmt, gci, go vet and staticcheck of the product,
## kstatus and examples, errcheck, the public API's compatibility (the browser the unit tests need,
## apt and network-bound, installs meanwhile). Then the kwok suite, which mostly waits on its
## controllers (~200 CPU-s in ~13 min), with the rest alongside at the lowest CPU priority
## (nice 19: the suite's control plane and tests go first): e2e's vet, the unit tests, the
## packaging modules' vet and tests; their output is printed after the suite.
FIRST_VET_MODULES = $(filter-out e2e,$(CORE_MODULES))
test:
	@set -e; t0=$$SECONDS; \
	./e2e/browser.sh >/dev/null & browser=$$!; \
	$(MAKE) --no-print-directory vet-core CORE_MODULES="$(FIRST_VET_MODULES)"; t1=$$SECONDS; \
	wait $$browser; \
	$(MAKE) --no-print-directory cluster-bins; t2=$$SECONDS; \
	alongside=$$(mktemp); trap 'rm -f $$alongside' EXIT; \
	( set -e; exec >$$alongside 2>&1; trap 'echo "alongside rc=$$?"' EXIT; \
	  nice -n 19 $(MAKE) --no-print-directory vet-modules VET_MODULES=e2e; \
	  nice -n 19 $(MAKE) --no-print-directory unit-core vet-packaging unit-packaging ) & side=$$!; \
	rc=0; $(MAKE) --no-print-directory e2e || rc=$$?; t3=$$SECONDS; \
	wait $$side; t4=$$SECONDS; cat $$alongside; \
	test $$rc = 0 || { echo "e2e failed"; exit $$rc; }; \
	grep -q '^alongside rc=0$$' $$alongside || { echo "e2e's vet, the unit tests or the packaging modules' vet or tests failed (above)"; exit 1; }; \
	$(MAKE) --no-print-directory bench REPS=3; t5=$$SECONDS; \
	echo "phase timings: vet $$((t1-t0))s, cluster-bins $$((t2-t1))s, e2e $$((t3-t2))s (e2e's vet, unit and packaging alongside, done at +$$((t4-t2))s), bench $$((t5-t4))s, total $$((t5-t0))s"

## vet: gofmt, go vet and staticcheck (its bug (SA) and simplification (S) checks and unused
## (U1000); staticcheck.conf) in every module, built as the module's unit tests build it. staticcheck
## v0.8.2 is what golangci-lint v2.15.0, used before, ran for those two linters; built alone from
## the module proxy into ~/.cache/stsdiag on first use (seconds, where golangci-lint took ~3.5 min).
## Then what deploy/ ships: helm lint --strict of the chart with each documented combination of
## values and kubeconform -strict of every manifest (the chart so rendered, the kustomizations,
## the plain files) against the Kubernetes v1.37.2 schemas of deploy/schemas (e2e's
## TestKubeconformSchemas keeps them equal to the real kube-apiserver's); the CRDs
## (ServiceMonitor, PrometheusRule) are decoded by prometheus-operator's types in deploy's tests.
## Also: gci (imports in three groups: standard, third party, this module) in every module, and
## errcheck (no error dropped silently; words printed to the user's streams and tests aside) over
## the modules that ship code; each built into the cache in seconds. Package comments and the
## floor plan are internal/layering's tests.
CACHE_BIN := $(or $(STSDIAG_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/stsdiag)/bin
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK := $(CACHE_BIN)/staticcheck-$(STATICCHECK_VERSION)/staticcheck
KUBECONFORM_VERSION ?= v0.8.0
KUBECONFORM := $(CACHE_BIN)/kubeconform-$(KUBECONFORM_VERSION)/kubeconform
GCI_VERSION ?= v0.14.0
GCI := $(CACHE_BIN)/gci-$(GCI_VERSION)/gci
GCI_SECTIONS := -s standard -s default -s 'prefix(github.com/stsdiag/stsdiag)' --skip-generated
ERRCHECK_VERSION ?= v1.30.0
ERRCHECK := $(CACHE_BIN)/errcheck-$(ERRCHECK_VERSION)/errcheck
ERRCHECK_MODULES = . stuck/kstatus examples
vet: vet-core vet-packaging

# vet-tools: the linters, each built once into the cache.
vet-tools:
	@test -x $(STATICCHECK) || $(STATIC) GOBIN=$(dir $(STATICCHECK)) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	@test -x $(KUBECONFORM) || $(STATIC) GOBIN=$(dir $(KUBECONFORM)) $(GO) install github.com/yannh/kubeconform/cmd/kubeconform@$(KUBECONFORM_VERSION)
	@test -x $(GCI) || $(STATIC) GOBIN=$(dir $(GCI)) $(GO) install github.com/daixiang0/gci@$(GCI_VERSION)
	@test -x $(ERRCHECK) || $(STATIC) GOBIN=$(dir $(ERRCHECK)) $(GO) install github.com/kisielk/errcheck@$(ERRCHECK_VERSION)

# vet-core: gofmt and gci everywhere, go vet and staticcheck of the product, kstatus, e2e and
# examples, errcheck, the public API's compatibility.
vet-core: vet-tools
	@test -z "$$(gofmt -l . | tee /dev/stderr)" || { echo "gofmt needed"; exit 1; }
	@set -e; bad=""; for m in $(MODULES); do bad="$$bad$$(cd $$m && $(GCI) list $(GCI_SECTIONS) . | sed "s|^|$$m/|")"; done; \
		test -z "$$bad" || { echo "$$bad"; echo "imports not in three groups (standard, third party, this module): run gci write $(GCI_SECTIONS) ."; exit 1; }
	@$(MAKE) --no-print-directory vet-modules VET_MODULES="$(CORE_MODULES)"
	@set -e; printf 'fmt.Fprint\nfmt.Fprintf\nfmt.Fprintln\n' > $(CACHE_BIN)/errcheck-exclude; for m in $(ERRCHECK_MODULES); do \
		case " $(RACE_MODULES) " in *" $$m "*) build="$(RACE)";; *) build="$(STATIC)";; esac; \
		echo "cd $$m && errcheck ./..."; (cd $$m && env $$build $(ERRCHECK) -ignoretests -exclude $(CACHE_BIN)/errcheck-exclude ./...); done
	@./api/apidiff.sh

# vet-packaging: go vet and staticcheck of deploy, release and deploy/tekton; helm lint and
# kubeconform of what deploy/ ships.
vet-packaging: vet-tools
	@$(MAKE) --no-print-directory vet-modules VET_MODULES="$(PACKAGING_MODULES)"
	@set -e; out=$$(mktemp -d); trap 'rm -rf $$out' EXIT; t0=$$SECONDS; \
		(cd deploy && $(STATIC) $(GO) run ./cmd/chartcheck -out $$out); \
		$(KUBECONFORM) -strict -summary -kubernetes-version 1.37.2 -schema-location deploy/schemas -skip ServiceMonitor,PrometheusRule $$out; \
		echo "vet: helm lint and kubeconform $$((SECONDS-t0))s"

vet-modules:
	@set -e; for m in $(VET_MODULES); do \
		case " $(RACE_MODULES) " in *" $$m "*) build="$(RACE)";; *) build="$(STATIC)";; esac; \
		echo "cd $$m && $$build go vet ./... && staticcheck ./..."; t0=$$SECONDS; \
		(cd $$m && env $$build $(GO) vet ./...); t1=$$SECONDS; \
		(cd $$m && env $$build $(STATICCHECK) ./...); \
		echo "vet: $$m: go vet $$((t1-t0))s, staticcheck $$((SECONDS-t1))s"; done

## api-baseline: record HEAD as the public API's baseline (api/baseline) after a deliberate change
api-baseline:
	@./api/apidiff.sh --write

## docs: regenerate docs/cli (from the commands) and the exit-code tables of README.md and
## docs/ci.md (from cmd.ExitCodes); make unit fails while they are stale
docs:
	cd e2e && $(GO) test -count=1 -run 'TestCLIReferenceIsCurrent|TestExitCodeTablesAreCurrent' ./internal/doccheck -update

## unit also runs the other modules' tests: e2e's packages that need no control plane, deploy
## and release (the shipped files), deploy/tekton (Tekton's Go types and validation), and
## examples, which imports the public packages stuck, resolver and openshift as others would
## unit: -race where our goroutines run; the shipped files' tests (Helm, kustomize, Argo CD's Lua,
## goreleaser, the image, Tekton's validation) start none, and static without -race reuse vet's
## build of those large libraries (a cold `make test` compiles them once, not twice)
unit: unit-core unit-packaging

unit-core: browser promtool
	$(RACE) $(GO) test -count=1 $(RACE_PKGS)
	cd e2e && $(RACE) $(GO) test -count=1 $(E2E_UNIT_PKGS)
	cd examples && $(RACE) $(GO) test -count=1 ./...
	cd stuck/kstatus && $(RACE) $(GO) test -count=1 ./...

unit-packaging: promtool
	cd deploy && $(STATIC) $(GO) test -count=1 ./...
	cd release && $(STATIC) $(GO) test -count=1 ./...
	cd deploy/tekton && $(STATIC) $(GO) test -count=1 ./...

## promtool: Debian's prometheus package (promtool checks and unit-tests the shipped alerts,
## deploy/promtool_test.go; the fleet suite runs its Prometheus servers): apt, when missing; needs
## root; where it cannot be installed the promtool tests skip and say why
promtool:
	@t0=$$SECONDS; ./e2e/prometheus.sh >/dev/null; echo "promtool: $$((SECONDS-t0))s"

## browser: Debian's chromium for the HTML report's browser test (apt, when missing; needs root;
## where it cannot be installed the test skips and says why)
browser:
	@t0=$$SECONDS; ./e2e/browser.sh >/dev/null; echo "browser: $$((SECONDS-t0))s"

## e2e: the kwok suite (package e2e); the harnesses' own tests ran in unit
e2e: cluster-bins
	cd e2e && $(STATIC) $(GO) test -count=1 -parallel 4 -timeout 15m .

## e2e-node: the kubelet's real states on a real node (containerd, runc, CNI, kubelet; needs root):
## ImagePullBackOff churn, crash loops, readiness, CreateContainerConfigError, FailedMount, init
## containers, a lost node; then the oracle's CI seeds (TestOracle, its lines and score printed
## from e2e/_artifacts/oracle.log). node-bins installs the node's packages with apt when missing.
ORACLE_CI_SEEDS ?= 37,54
ORACLE_CI_N ?= 6
e2e-node: node-bins
	@rm -f e2e/_artifacts/oracle.log; t0=$$SECONDS; \
	(cd e2e && ORACLE_SEEDS=$(ORACLE_CI_SEEDS) ORACLE_N=$(ORACLE_CI_N) ORACLE_ONLY= ORACLE_STSDIAG= $(GO) test -count=1 -timeout 30m ./node/); rc=$$?; \
	cat e2e/_artifacts/oracle.log 2>/dev/null; \
	echo "e2e-node: suite $$((SECONDS-t0))s"; exit $$rc

## oracle: random StatefulSet histories applied on the real node, `check` and `wait` scored against
## what the real system did (docs/development.md#the-oracle). SEED (default: a new one each run),
## N histories (24); ONLY=5 (or 5,9) replays those histories of the seed; ORACLE_STSDIAG=path
## (relative to the repository) scores another binary. One line per history, then the score; the
## go test log in e2e/_artifacts/oracle-go-test.log, a failing history's objects in
## e2e/_artifacts/oracle/<id>/.
SEED ?= $(shell date +%s)
N ?= 24
oracle: node-bins
	@mkdir -p e2e/_artifacts; set -o pipefail; \
	(cd e2e && ORACLE_SEEDS=$(SEED) ORACLE_N=$(N) ORACLE_ONLY=$(ONLY) ORACLE_STSDIAG=$(ORACLE_STSDIAG) \
		$(GO) test -count=1 -timeout 60m -run '^TestOracle$$' -v ./node/) 2>&1 | tee e2e/_artifacts/oracle-go-test.log | \
		grep -E '^(oracle:|s[0-9]+-h[0-9]+ |    [^ ]|--- |FAIL|ok |PASS$$|e2e-node: )'

## node-bins: containerd, runc, CNI plugins, iptables, conntrack (apt, when missing) and the
## control plane with the kubelet of its release (cluster-bins)
node-bins:
	@t0=$$SECONDS; ./e2e/node-bins.sh >/dev/null; echo "node-bins: $$((SECONDS-t0))s"

## e2e-versions: the scenarios whose verdict depends on the controller's release, on the other
## releases' real control planes (each built and cached on first use, ~9 min cold)
OTHER_VERSIONS ?= v1.35.3 v1.33.13
VERSION_TESTS ?= TestControllerVersion|TestStuckRollout|TestStalledCondition|TestPodCreateFailed|TestNoSilentProgress
e2e-versions:
	@set -e; for v in $(OTHER_VERSIONS); do \
		t0=$$SECONDS; KUBELET=0 K8S_VERSION=$$v ./e2e/cluster-bins.sh >/dev/null; t1=$$SECONDS; \
		(cd e2e && K8S_VERSION=$$v $(STATIC) $(GO) test -count=1 -timeout 15m -run '$(VERSION_TESTS)' .); \
		echo "e2e-versions: $$v: cluster-bins $$((t1-t0))s, tests $$((SECONDS-t1))s"; \
	done

## e2e-fleet: fleets on three real control planes (e2e/fleet): check and wait over a hub's
## ClusterProfiles (two members, unreachable, unauthorized, exec plugins that fail or hang), and
## the alerts across clusters: a Prometheus per member (external_labels cluster) federated by a
## global one with the shipped multi-cluster rules (Debian's prometheus, installed with apt when
## missing; e2e/prometheus.sh)
e2e-fleet: cluster-bins
	@REQUIRED=1 ./e2e/prometheus.sh >/dev/null
	@mkdir -p e2e/_artifacts; t0=$$SECONDS; (cd e2e && $(GO) test -count=1 -timeout 15m -v ./fleet/) 2>&1 | tee e2e/_artifacts/fleet-go-test.log | \
		grep -E '^(--- |FAIL|ok |PASS$$)|^e2e-fleet:'; rc=$${PIPESTATUS[0]}; echo "e2e-fleet: suite $$((SECONDS-t0))s"; exit $$rc

## e2e-openshift: the OpenShift suite on OpenShift's own image API (openshift-apiserver, aggregated)
## and the real ImagePolicy admission plugin (as a webhook), with the differential oracle
## (the whole log in e2e/openshift/_artifacts/go-test.log; the corpus size and outcome classes printed)
e2e-openshift: cluster-bins openshift-bins
	@mkdir -p e2e/openshift/_artifacts
	@set -o pipefail; (cd e2e && $(GO) test -count=1 -timeout 15m -v ./openshift/) 2>&1 | tee e2e/openshift/_artifacts/go-test.log | \
		grep -E '^(--- |FAIL|ok |PASS$$)|^e2e-openshift:|differential corpus|^\s+(skipped: |[A-Za-z]+ → )'

## openshift-bins: build openshift-apiserver and the ImagePolicy webhook (cached; cold 4-10 min)
openshift-bins:
	@./e2e/openshift-bins.sh >/dev/null

## cluster-bins: build etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (cached);
## the kubelet only for the real node (node-bins), so that a cold `make test` does not build it
cluster-bins:
	@KUBELET=0 ./e2e/cluster-bins.sh >/dev/null

## demo: start a local control plane, reproduce stuck rollouts, run stsdiag check (KEEP=1 leaves it up)
demo: build cluster-bins
	cd e2e && $(STATIC) $(GO) run ./cmd/localcluster demo -stsdiag $(abspath $(BIN)) $(if $(KEEP),-keep)

## deploy-demo: stsdiag watch --fix with deploy/'s RBAC repairs a stuck rollout by itself
deploy-demo: build cluster-bins
	cd e2e && $(STATIC) $(GO) run ./cmd/localcluster deploy-demo -stsdiag $(abspath $(BIN)) -log-dir $(abspath e2e/_artifacts/deploy-demo) $(if $(KEEP),-keep)

## cluster: a local control plane until Ctrl-C
cluster: build cluster-bins
	cd e2e && $(STATIC) $(GO) run ./cmd/localcluster up -stsdiag $(abspath $(BIN))

## bench: check -A (triaged) and --full vs their floors (the raw and the decoded LISTs) and
## kubectl get -A on a synthetic cluster of StatefulSets (SETS=2000 for 10k pods), then bench-mix;
## PROFILE=1 writes CPU and heap profiles of check and watch to e2e/_artifacts/bench/profiles
SETS ?= 200
REPS ?= 5
bench: build cluster-bins
	cd e2e && $(STATIC) $(GO) run ./cmd/bench -sets $(SETS) -replicas 5 -reps $(REPS) -stsdiag $(abspath $(BIN)) $(if $(PROFILE),-profile $(abspath e2e/_artifacts/bench/profiles))
	$(MAKE) --no-print-directory bench-mix

## bench-mix: the same on issue 36's realistic mix (5 × MIX_SETS × 5 pods, 20% of them
## StatefulSets', 1% of StatefulSets unsettled): the bytes, time, memory, API server CPU and
## requests of check -A against the bare LISTs. make test's 1k pods check the findings and the
## requests; issue 36's targets apply from 6k pods (MIX_SETS=240; 2000: 50k; 6000: 150k)
MIX_SETS ?= 40
bench-mix: build cluster-bins
	cd e2e && $(STATIC) $(GO) run ./cmd/bench -mix realistic -sets $(MIX_SETS) -replicas 5 -reps $(REPS) -stsdiag $(abspath $(BIN)) $(if $(PROFILE),-profile $(abspath e2e/_artifacts/bench/profiles-mix))

## image: the container image of `stsdiag watch`, built without a container engine and without
## network (release/ociimage, in the release module): an OCI layout in bin/image and a tarball
## bin/image.tar (docker/podman load)
IMAGE ?= ghcr.io/stsdiag/stsdiag:$(VERSION)
IMAGE_PLATFORM ?= linux/amd64
IMAGE_BIN = bin/$(subst /,_,$(IMAGE_PLATFORM))/kubectl-stsdiag
image:
	rm -rf bin/image bin/image.tar
	CGO_ENABLED=0 GOOS=$(word 1,$(subst /, ,$(IMAGE_PLATFORM))) GOARCH=$(word 2,$(subst /, ,$(IMAGE_PLATFORM))) \
		$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(IMAGE_BIN) ./cmd/kubectl-stsdiag
	cd release && SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || echo 0) $(GO) run ./ociimage -binary $(abspath $(IMAGE_BIN)) \
		-platform $(IMAGE_PLATFORM) -tag $(IMAGE) -version $(VERSION) -revision "$$(git rev-parse HEAD 2>/dev/null)" \
		-layout $(abspath bin/image) -tarball $(abspath bin/image.tar)

fuzz:
	$(GO) test ./resolver -run '^$$' -fuzz FuzzResolve -fuzztime 30s

fmt:
	gofmt -w .

clean:
	rm -rf bin e2e/_artifacts e2e/*/_artifacts
