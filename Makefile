# boxer: run untrusted code in a fresh, hardened sandbox on containerd.

CONTAINERD_VERSION := v2.4.2
LIBEXEC            := /usr/local/lib/boxer/bin
# Go from the PATH, else the usual tarball location.
GO                 ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
VERSION            ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)

.PHONY: all deps test-deps build install demo test test-unit test-security bench vet clean

all: build

# deps installs what boxer needs on a Debian/Ubuntu host, idempotently: runc,
# runsc (gVisor) and debootstrap from apt, and containerd (daemon, runc shim, ctr) built from
# the Go module proxy at the version boxer is tested with.
deps:
	@$(GO) version >/dev/null 2>&1 || { echo "Go >= 1.26 is needed (or >= 1.21, which fetches a newer toolchain from the Go module proxy): Debian 12's golang is too old"; exit 1; }
	@missing=""; \
	for p in runc runsc debootstrap; do command -v $$p >/dev/null || missing="$$missing $$p"; done; \
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

# test-deps unpacks Debian's containerd 1.6 (daemon and shim) into
# $(COMPAT) for the test that proves boxer's client against it, as a host's
# system containerd may be that one. Unpacked, not installed: no service is
# enabled or started.
COMPAT := /usr/local/lib/boxer/compat
test-deps:
	@if ! [ -x $(COMPAT)/usr/bin/containerd ]; then \
		echo "==> unpacking Debian's containerd into $(COMPAT)"; \
		tmp=$$(mktemp -d) && cd $$tmp && apt-get download containerd >/dev/null 2>&1 || \
			{ apt-get update -qq && apt-get download containerd >/dev/null; } && \
		mkdir -p $(COMPAT) && dpkg-deb -x containerd_*.deb $(COMPAT) && rm -rf $$tmp; \
	fi

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o bin/boxer ./cmd/boxer

install: build
	install -m 0755 bin/boxer /usr/local/bin/boxer

# demo sets everything up and runs a first sandbox.
demo: deps install
	boxer setup
	boxer doctor
	boxer run --lang python -c 'import platform, os; print("hello from", platform.python_version(), "as uid", os.getuid())'
	boxer run --json --memory 64m --timeout 5s --lang python -c 'print(sum(range(10**6)))'

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	$(GO) vet ./...

test-unit:
	$(GO) test -count=1 ./cgroups/ ./oci/ ./seccomp/ ./runner/ ./snapshots/ ./daemon/ .

# test runs every test: unit tests and the sandbox tests on a private
# containerd that the tests start and stop themselves.
test: deps test-deps vet
	$(GO) test -count=1 -timeout 30m ./...

# test-security runs the hostile programs on runc and runsc and checks
# SECURITY.md against them (make test runs them too).
test-security: deps vet
	$(GO) test -count=1 -timeout 30m -run 'TestHostileSuite|TestSecurityTable' ./integration/

bench: deps install
	boxer setup
	$(GO) run ./bench

clean:
	rm -rf bin
