# boxer: run untrusted code in a fresh, hardened sandbox on containerd.

CONTAINERD_VERSION := v2.4.2
# The runtimes boxer runs, built from source by 'make deps' (docs/internals.md: Runtimes).
# Moving a pin is changing its one line: the next 'make deps' rebuilds it.
RUNC_VERSION       := v1.5.3
GVISOR_VERSION     := v0.0.0-20260905035102-160fafc42237
LIBEXEC            := /usr/local/lib/boxer/bin
# SHIM is boxer's build of containerd's runc shim (cmd/containerd-shim-boxer-v2).
SHIM               := containerd-shim-boxer-v2
# boxer-init, every sandbox's PID 1 (init/boxer-init.c): static, so that
# it runs in any image, and small (one process, one thread); boxer-wrap
# (init/boxer-wrap.c) and boxer-procd (init/boxer-procd.c, a session's
# process server) the same way. Against musl: a static glibc program
# spends 0.3 ms of CPU at its start asking the CPU about its caches (cpuid,
# which a VM traps), musl's 0.05 ms, and each sandbox starts five or six.
INIT_CC            := musl-gcc -static -Os -s -Wall -Wextra -Werror
# Go from the PATH, else the usual tarball location.
GO                 ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
VERSION            ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)

.PHONY: all deps test-deps build install demo test test-unit test-security fuzz bench soak vet clean generate kube test-cluster

all: build

# deps installs what boxer needs on a Debian/Ubuntu host, idempotently:
# debootstrap and the build dependencies of runc (a C compiler, libseccomp-dev,
# pkg-config) and of boxer's helpers (musl-tools) from apt; then containerd
# (daemon, runc shim, ctr), runc and runsc (gVisor), built from the Go module
# proxy at the versions pinned above into $(LIBEXEC), each only when what is
# there is not its pinned version; and from this checkout boxer-init, every
# sandbox's PID 1, boxer-wrap, the interpreter of boxer's runtime
# wrappers, and boxer-procd, a session's process server, built against
# musl, and $(SHIM).
# Each binary is built into $(LIBEXEC)/.build and renamed into place, so a
# sandbox starting meanwhile runs the old binary or the new one, never half.
deps:
	@$(GO) version >/dev/null 2>&1 || { echo "Go >= 1.26 is needed (or >= 1.21, which fetches a newer toolchain from the Go module proxy): Debian 12's golang is too old"; exit 1; }
	@missing=""; \
	command -v debootstrap >/dev/null || missing="$$missing debootstrap"; \
	command -v cc >/dev/null || missing="$$missing gcc libc6-dev"; \
	command -v musl-gcc >/dev/null || missing="$$missing musl-tools"; \
	for p in libseccomp-dev pkg-config; do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "==> apt-get install$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi
	@if ! $(LIBEXEC)/containerd --version 2>/dev/null | grep -q "$(patsubst v%,%,$(CONTAINERD_VERSION))" || \
	    ! [ -x $(LIBEXEC)/containerd-shim-runc-v2 ] || ! [ -x $(LIBEXEC)/ctr ]; then \
		echo "==> building containerd $(CONTAINERD_VERSION) into $(LIBEXEC) (about a minute)"; \
		mkdir -p $(LIBEXEC) && \
		GOBIN=$(LIBEXEC) GOFLAGS=-buildvcs=false $(GO) install \
			github.com/containerd/containerd/v2/cmd/containerd@$(CONTAINERD_VERSION) \
			github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$(CONTAINERD_VERSION) \
			github.com/containerd/containerd/v2/cmd/ctr@$(CONTAINERD_VERSION); \
	fi
	@# runc as its own Makefile builds it (PIE, -trimpath, libseccomp through
	@# cgo), with the seccomp tag. Its version comes from the module's VERSION
	@# file; the commit line names the module and its go.sum hash, which
	@# sum.golang.org vouches for (the module proxy does not know the commit).
	@if [ "$$($(LIBEXEC)/runc --version 2>/dev/null | head -n1)" != "runc version $(patsubst v%,%,$(RUNC_VERSION))" ]; then \
		echo "==> building runc $(RUNC_VERSION) into $(LIBEXEC) (about a minute)"; \
		sum=$$($(GO) mod download -json github.com/opencontainers/runc@$(RUNC_VERSION) | sed -n 's/^[[:space:]]*"Sum": "\(.*\)",*$$/\1/p') && \
		[ -n "$$sum" ] && rm -rf $(LIBEXEC)/.build && mkdir -p $(LIBEXEC)/.build && \
		GOBIN=$(LIBEXEC)/.build GOFLAGS=-buildvcs=false CGO_ENABLED=1 $(GO) install -trimpath -buildmode=pie -tags seccomp \
			-ldflags "-X 'main.gitCommit=$(RUNC_VERSION) (Go module $$sum)'" \
			github.com/opencontainers/runc@$(RUNC_VERSION) && \
		mv -f $(LIBEXEC)/.build/runc $(LIBEXEC)/runc && rmdir $(LIBEXEC)/.build; \
	fi
	@# boxer-init, boxer-wrap and boxer-procd from this checkout's source
	@# (init/NAME.c and any init/NAME-*.c), each replaced (by a rename) only
	@# when the build differs from what is there. The temporary names are
	@# this make's own: two makes at once (make test beside another) each
	@# build and compare their own file.
	@for p in boxer-init boxer-wrap boxer-procd; do \
		new=$(LIBEXEC)/.$$p.new.$$$$; \
		mkdir -p $(LIBEXEC) && $(INIT_CC) -o $$new init/$$p.c $$(ls init/$$p-*.c 2>/dev/null) && \
		if cmp -s $$new $(LIBEXEC)/$$p; then rm -f $$new; \
		else echo "==> building $$p into $(LIBEXEC)"; mv -f $$new $(LIBEXEC)/$$p; fi || exit 1; \
	done
	@# boxer's build of containerd's runc shim, the same way.
	@new=$(LIBEXEC)/.$(SHIM).new.$$$$; \
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -o $$new ./cmd/$(SHIM) && \
	if cmp -s $$new $(LIBEXEC)/$(SHIM); then rm -f $$new; \
	else echo "==> building $(SHIM) into $(LIBEXEC)"; mv -f $$new $(LIBEXEC)/$(SHIM); fi
	@# runsc static (CGO_ENABLED=0): a dynamic one cannot re-execute itself
	@# inside its chroot, where its ELF interpreter is missing. A plain build
	@# says VERSION_MISSING: the pin is stamped into gVisor's version variable.
	@if [ "$$($(LIBEXEC)/runsc --version 2>/dev/null | head -n1)" != "runsc version $(GVISOR_VERSION)" ]; then \
		echo "==> building runsc (gVisor $(GVISOR_VERSION)) into $(LIBEXEC) (a few minutes)"; \
		rm -rf $(LIBEXEC)/.build && mkdir -p $(LIBEXEC)/.build && \
		GOBIN=$(LIBEXEC)/.build GOFLAGS=-buildvcs=false CGO_ENABLED=0 $(GO) install -trimpath \
			-ldflags "-X gvisor.dev/gvisor/runsc/version.version=$(GVISOR_VERSION)" \
			gvisor.dev/gvisor/runsc@$(GVISOR_VERSION) && \
		mv -f $(LIBEXEC)/.build/runsc $(LIBEXEC)/runsc && rmdir $(LIBEXEC)/.build; \
	fi

# test-deps unpacks two Debian packages, unpacked, not installed (no service
# is enabled or started): containerd 1.6 (daemon and shim) into $(COMPAT),
# for the test that proves boxer's client against it, as a host's system
# containerd may be that one; and runc 1.1.5 into $(COMPAT)/runc, apart
# from it, for the test that 'boxer doctor' warns about a containerd that
# runs a runc without the November 2025 fixes. Then the npm packages of
# package-lock.json into node_modules/ (redocly, for TestOpenAPILint; E2B's
# SDKs, for the TestE2B* tests and make bench), with
# Debian's nodejs and npm when npm is missing; again only when the lock
# file is newer than what is installed. curl and file, which the docs'
# examples use (TestDocExamples), come from apt when missing.
COMPAT := /usr/local/lib/boxer/compat
test-deps:
	@missing=""; \
	command -v npm >/dev/null || missing="$$missing nodejs npm"; \
	command -v curl >/dev/null || missing="$$missing curl"; \
	command -v file >/dev/null || missing="$$missing file"; \
	if [ -n "$$missing" ]; then \
		echo "==> apt-get install$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi
	@[ node_modules/.package-lock.json -nt package-lock.json ] || { echo "==> npm ci"; npm ci --no-audit --no-fund; }
	@for p in containerd:.:usr/bin/containerd runc:runc:usr/sbin/runc; do \
		pkg=$${p%%:*}; rest=$${p#*:}; dir=$(COMPAT)/$${rest%%:*}; dir=$${dir%/.}; bin=$${rest#*:}; \
		[ -x $$dir/$$bin ] && continue; \
		echo "==> unpacking Debian's $$pkg into $$dir"; \
		tmp=$$(mktemp -d) && cd $$tmp && { apt-get download $$pkg >/dev/null 2>&1 || \
			{ apt-get update -qq && apt-get download $$pkg >/dev/null; }; } && \
		mkdir -p $$dir && dpkg-deb -x $${pkg}_*.deb $$dir && cd / && rm -rf $$tmp || exit 1; \
	done

# build leaves boxer-init, boxer-wrap, boxer-procd, boxer-server and $(SHIM) beside boxer, where
# boxer looks for them first. Every CLI run pays for boxer's process start, which is
# mostly the package initialisation of all it links (docs/bench/2026-11-27.md:
# Start time): so boxer is static (nothing in it needs libc, and a process
# without the dynamic loader starts sooner), built without urfave/cli's
# man-page and Markdown writer and gRPC's x/net/trace, which nothing in
# boxer uses (BUILD_TAGS), and without boxer serve and boxer mcp
# (boxer_cli): those run boxer-server, the whole of boxer, in their place.
BUILD_TAGS := urfave_cli_no_docs grpcnotrace
build:
	CGO_ENABLED=0 $(GO) build -tags "$(BUILD_TAGS) boxer_cli" -ldflags "-X main.version=$(VERSION)" -o bin/boxer ./cmd/boxer
	CGO_ENABLED=0 $(GO) build -tags "$(BUILD_TAGS)" -ldflags "-X main.version=$(VERSION)" -o bin/boxer-server ./cmd/boxer
	@command -v musl-gcc >/dev/null || { echo "musl-gcc is needed to build boxer-init, boxer-wrap and boxer-procd: run 'make deps' (or apt-get install musl-tools)"; exit 1; }
	$(INIT_CC) -o bin/boxer-init init/boxer-init.c
	$(INIT_CC) -o bin/boxer-wrap init/boxer-wrap.c
	$(INIT_CC) -o bin/boxer-procd init/boxer-procd.c init/boxer-procd-start.c
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -o bin/$(SHIM) ./cmd/$(SHIM)

# kube builds what the real-cluster fleet test (make test-cluster) runs, each
# into a directory of $(KUBE_CACHE) named by its version, with a stamp file
# written last: a second 'make kube' checks seven stamps and does nothing.
# Kubernetes (kube-apiserver, kube-controller-manager, kube-scheduler,
# kubelet, kube-proxy, kubectl, and the pod sandboxes' pause from its
# pause.c, against musl) from the Go module proxy through the wrapper
# module deploy/kubernetes/cluster/build/kube: its go.mod requires
# k8s.io/kubernetes and replaces its staging modules (k8s.io/api, ...),
# which the module's zip lacks, by their published v0.$(KUBE_MINOR); CoreDNS
# through deploy/kubernetes/cluster/build/coredns, trimmed to the plugins a
# cluster's DNS uses; kube-router, the NetworkPolicy enforcer (its firewall
# only: the security advisories on v2.1.0, the one version the proxy serves,
# are in its service proxy, which the cluster does not run), through
# deploy/kubernetes/cluster/build/kube-router. The modules pin every version
# in their go.sum. etcd and the CNI plugins (bridge, host-local, loopback)
# from Debian, nft with its libraries (kube-proxy's nftables mode runs it),
# and iptables and ipset with theirs (kube-router runs them), unpacked with
# dpkg-deb -x, not installed: no service is enabled or started. About
# 8 minutes of two free cores with an empty Go cache; 0.6 GB of binaries.
KUBE_VERSION    := v1.35.4
KUBE_MINOR      := 35.4
COREDNS_VERSION := v1.14.7
ETCD_DEB        := 3.4.23
CNI_DEB         := 1.1.1
NFT_DEB         := 1.0.6
IPT_DEB         := 1.8.9
KUBEROUTER_VERSION := v2.1.0
KUBE_CACHE      := /usr/local/lib/boxer/kube
KUBE_BIN        := $(KUBE_CACHE)/kubernetes-$(KUBE_VERSION)
COREDNS_BIN     := $(KUBE_CACHE)/coredns-$(COREDNS_VERSION)
ETCD_DIR        := $(KUBE_CACHE)/etcd-$(ETCD_DEB)
CNI_DIR         := $(KUBE_CACHE)/cni-$(CNI_DEB)
NFT_DIR         := $(KUBE_CACHE)/nftables-$(NFT_DEB)
IPT_DIR         := $(KUBE_CACHE)/iptables-$(IPT_DEB)
KUBEROUTER_BIN  := $(KUBE_CACHE)/kube-router-$(KUBEROUTER_VERSION)
KUBE_LDFLAGS    := $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(p).gitVersion=$(KUBE_VERSION) -X $(p).gitMajor=1 -X $(p).gitMinor=$(word 1,$(subst ., ,$(KUBE_MINOR))) -X $(p).gitTreeState=clean)
kube:
	@missing=""; \
	command -v ip >/dev/null || missing="$$missing iproute2"; \
	command -v openssl >/dev/null || missing="$$missing openssl"; \
	if [ -n "$$missing" ]; then \
		echo "==> apt-get install$$missing (test-cluster's network and certificates)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi
	@[ -e $(KUBE_BIN)/.done ] || { \
		echo "==> building Kubernetes $(KUBE_VERSION) into $(KUBE_BIN) (about 7 minutes of two cores)"; \
		rm -rf $(KUBE_BIN) && mkdir -p $(KUBE_BIN) && cd deploy/kubernetes/cluster/build/kube && \
		GOBIN=$(KUBE_BIN) CGO_ENABLED=0 $(GO) install -trimpath -ldflags "-s -w $(KUBE_LDFLAGS)" tool && \
		echo $(KUBE_VERSION) > $(KUBE_BIN)/.done; }
	@[ -x $(KUBE_BIN)/pause ] || { \
		echo "==> building Kubernetes' pause into $(KUBE_BIN)"; \
		src=$$(cd deploy/kubernetes/cluster/build/kube && $(GO) list -m -f '{{.Dir}}' k8s.io/kubernetes) && \
		musl-gcc -static -Os -s -DVERSION=$(KUBE_VERSION) -o $(KUBE_BIN)/.pause.new $$src/build/pause/linux/pause.c && \
		mv -f $(KUBE_BIN)/.pause.new $(KUBE_BIN)/pause; }
	@[ -e $(COREDNS_BIN)/.done ] || { \
		echo "==> building CoreDNS $(COREDNS_VERSION) into $(COREDNS_BIN) (about a minute)"; \
		rm -rf $(COREDNS_BIN) && mkdir -p $(COREDNS_BIN) && cd deploy/kubernetes/cluster/build/coredns && \
		grep -q "github.com/coredns/coredns $(COREDNS_VERSION)$$" go.mod && \
		CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(COREDNS_BIN)/coredns . && \
		echo $(COREDNS_VERSION) > $(COREDNS_BIN)/.done; }
	@[ -e $(KUBEROUTER_BIN)/.done ] || { \
		echo "==> building kube-router $(KUBEROUTER_VERSION) into $(KUBEROUTER_BIN) (about a minute)"; \
		rm -rf $(KUBEROUTER_BIN) && mkdir -p $(KUBEROUTER_BIN) && cd deploy/kubernetes/cluster/build/kube-router && \
		grep -q "github.com/cloudnativelabs/kube-router/v2 $(KUBEROUTER_VERSION)" go.mod && \
		GOBIN=$(KUBEROUTER_BIN) CGO_ENABLED=0 $(GO) install -trimpath -ldflags "-s -w" tool && \
		echo $(KUBEROUTER_VERSION) > $(KUBEROUTER_BIN)/.done; }
	@for p in etcd-server:$(ETCD_DEB):$(ETCD_DIR) containernetworking-plugins:$(CNI_DEB):$(CNI_DIR) \
		nftables+libnftables1+libnftnl11:$(NFT_DEB):$(NFT_DIR) \
		iptables+ipset+libipset13+libip4tc2+libip6tc2+libxtables12+libnetfilter-conntrack3+libnfnetlink0+libnftnl11:$(IPT_DEB):$(IPT_DIR); do \
		pkgs=$${p%%:*}; pkg=$${pkgs%%+*}; rest=$${p#*:}; ver=$${rest%%:*}; dir=$${rest#*:}; \
		[ -e $$dir/.done ] && continue; \
		echo "==> unpacking Debian's $$(echo $$pkgs | tr + ' ') into $$dir"; \
		tmp=$$(mktemp -d) && cd $$tmp && { apt-get download $$(echo $$pkgs | tr + ' ') >/dev/null 2>&1 || \
			{ apt-get update -qq && apt-get download $$(echo $$pkgs | tr + ' ') >/dev/null; }; } && \
		got=$$(dpkg-deb -f $${pkg}_*.deb Version) && case "$$got" in $$ver|$$ver[-+]*) ;; \
			*) echo "Debian's $$pkg is $$got, not $$ver: move the pin in the Makefile"; exit 1;; esac && \
		rm -rf $$dir && mkdir -p $$dir && for d in *.deb; do dpkg-deb -x $$d $$dir || exit 1; done && \
		echo $$got > $$dir/.done && cd / && rm -rf $$tmp || exit 1; \
	done

# test-cluster starts a two-node Kubernetes on this host in network
# namespaces of its own, with boxer's containerd as the nodes' CRI, applies
# deploy/kubernetes (through the test overlay deploy/kubernetes/cluster/overlay)
# with an image of boxer built from this checkout, runs the fleet's tests
# through the Services (deploy/kubernetes/cluster/cluster_test.go) and
# removes the cluster, pass or fail (docs/fleet.md: Tested on a real cluster).
# After 'make deps': the nodes run its containerd, runc and runsc.
test-cluster: kube test-deps
	KUBE_BIN=$(KUBE_BIN) COREDNS_BIN=$(COREDNS_BIN) ETCD_DIR=$(ETCD_DIR) CNI_DIR=$(CNI_DIR) NFT_DIR=$(NFT_DIR) \
		IPT_DIR=$(IPT_DIR) KUBEROUTER_BIN=$(KUBEROUTER_BIN) \
		LIBEXEC=$(LIBEXEC) deploy/kubernetes/cluster/cluster.sh test

install: build
	install -m 0755 bin/boxer /usr/local/bin/boxer
	install -D -m 0755 bin/boxer-init $(LIBEXEC)/boxer-init
	install -D -m 0755 bin/boxer-wrap $(LIBEXEC)/boxer-wrap
	install -D -m 0755 bin/boxer-procd $(LIBEXEC)/boxer-procd
	install -D -m 0755 bin/boxer-server $(LIBEXEC)/boxer-server
	install -D -m 0755 bin/$(SHIM) $(LIBEXEC)/$(SHIM)

# demo sets everything up and runs a first sandbox.
demo: deps install
	boxer setup
	boxer doctor
	boxer run --lang python -c 'import platform, os; print("hello from", platform.python_version(), "as uid", os.getuid())'
	boxer run --json --memory 64m --timeout 5s --lang python -c 'print(sum(range(10**6)))'

# generate regenerates the Go code of E2B's envd wire contract
# (e2b/envdspec/**.proto): protoc from apt (protobuf-compiler), its Go
# plugins from the Go module proxy at the versions go.mod pins. Not run by
# CI: the generated files are committed source.
generate:
	@command -v protoc >/dev/null || { echo "protoc is needed: apt-get install protobuf-compiler"; exit 1; }
	GOBIN=$(CURDIR)/.bin $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go connectrpc.com/connect/cmd/protoc-gen-connect-go
	cd e2b/envdspec && PATH=$(CURDIR)/.bin:$$PATH protoc -I . \
		--go_out=. --go_opt=paths=source_relative \
		--connect-go_out=. --connect-go_opt=paths=source_relative \
		process/process.proto filesystem/filesystem.proto

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	$(GO) vet ./...
	$(GO) vet -tags "$(BUILD_TAGS) boxer_cli" ./cmd/boxer
	GOOS=darwin $(GO) vet ./...

test-unit:
	$(GO) test -count=1 ./cgroups/ ./fault/ ./oci/ ./seccomp/ ./egress/ ./secrets/ ./runner/ ./reaper/ ./snapshots/ ./daemon/ ./server/ ./e2b/ ./cmd/... ./internal/... .

# test runs every test: unit tests and the sandbox tests on a private
# containerd that the tests start and stop themselves. The sandbox tests
# take about 33 minutes on a quiet 2-core host, twice that beside
# stress-ng --cpu 2: TEST_TIMEOUT=100m for a loaded run.
TEST_TIMEOUT ?= 60m
test: deps test-deps vet
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

# test-security runs the hostile programs on runc and runsc and checks
# SECURITY.md against them (make test runs them too).
test-security: deps vet
	$(GO) test -count=1 -timeout 30m -run 'TestHostileSuite|TestSecurityTable' ./integration/

# fuzz runs every fuzz target (func FuzzX in a fuzz_test.go or
# fuzz_linux_test.go) for FUZZTIME each, one at a time: go test -fuzz takes
# one target a run. make test runs them on their committed corpora
# (testdata/fuzz/); what a run here finds is written there to keep.
FUZZTIME ?= 30s
fuzz:
	@for dir in $$(git ls-files '*fuzz_test.go' '*fuzz_linux_test.go' | xargs -n1 dirname | sort -u); do \
		for fn in $$($(GO) test -list '^Fuzz' ./$$dir/ | grep '^Fuzz'); do \
			echo "==> $$fn in ./$$dir for $(FUZZTIME)"; \
			$(GO) test -run='^$$' -fuzz="^$$fn\$$" -fuzztime=$(FUZZTIME) ./$$dir/ || exit 1; \
		done; \
	done

bench: deps test-deps install
	boxer setup
	$(GO) run ./bench

# soak runs 10,000 sandboxes one at a time and 1,000 eight at a time, through
# boxer run and through boxer serve (about an hour here), then counts what
# is left in boxer's containerd namespace and on the host, and fails on any
# failed run or leftover (BENCH.md: Soak). Not part of test. SOAKFLAGS
# passes flags: make soak SOAKFLAGS='-runs 500 -parallel-runs 100'.
SOAKFLAGS ?=
soak: deps install
	boxer setup
	$(GO) run ./soak $(SOAKFLAGS)

clean:
	rm -rf bin
