# slurm-mig. `make demo` builds the tool and runs gen on the demo node in
# testdata/demo (no GPU needed); `make test` runs every test; `make
# install` installs it under PREFIX (default /usr/local).

VERSION ?= $(shell scripts/version.sh)
# go-nvml's cgo header marks calls deprecated in CUDA 13; we make none of them.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
export CGO_ENABLED = 1

GO ?= go
BIN := bin/slurm-mig
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c

.PHONY: build demo install uninstall test test-suite vet bench fuzz-short clean dist dist-check test-slurm-versions systemd-live-check

build:
	$(GO) build -ldflags "-X 'main.version=$(VERSION)'" -o $(BIN) ./cmd/slurm-mig

demo: build
	$(BIN) --root testdata/demo/root gen --from testdata/demo/snapshot.json

# make install puts the binary, the man page and the bash, zsh and fish
# completions under PREFIX, in the directories the packages use under /usr
# (docs/packaging.md), staged under DESTDIR when given; make uninstall
# removes those five files and nothing else, not even the directories. The
# man page and completions are made by the binary just built (slurm-mig
# docs ...), beside it in the directory of BIN.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
# zsh reads <prefix>/share/zsh/site-functions of the prefix it was built
# for, and /usr/local's; Debian's zsh, built for /usr, reads
# /usr/share/zsh/vendor-completions instead, where the .deb puts it.
ifeq ($(PREFIX):$(wildcard /etc/debian_version),/usr:/etc/debian_version)
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/vendor-completions
else
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
endif
GEN = $(dir $(BIN))
INSTALLED = $(BINDIR)/slurm-mig $(MANDIR)/man1/slurm-mig.1 $(BASHCOMPDIR)/slurm-mig $(ZSHCOMPDIR)/_slurm-mig $(FISHCOMPDIR)/slurm-mig.fish

install: build
	$(BIN) docs man >$(GEN)slurm-mig.1
	$(BIN) docs bash >$(GEN)slurm-mig.bash
	$(BIN) docs zsh >$(GEN)_slurm-mig
	$(BIN) docs fish >$(GEN)slurm-mig.fish
	install -D -m 0755 $(BIN) $(DESTDIR)$(BINDIR)/slurm-mig
	install -D -m 0644 $(GEN)slurm-mig.1 $(DESTDIR)$(MANDIR)/man1/slurm-mig.1
	install -D -m 0644 $(GEN)slurm-mig.bash $(DESTDIR)$(BASHCOMPDIR)/slurm-mig
	install -D -m 0644 $(GEN)_slurm-mig $(DESTDIR)$(ZSHCOMPDIR)/_slurm-mig
	install -D -m 0644 $(GEN)slurm-mig.fish $(DESTDIR)$(FISHCOMPDIR)/slurm-mig.fish

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))

# Every test runs under scripts/node-untouched.sh, which fails the run when
# a test created, changed or removed anything in this machine's
# /run/slurm-mig (device state, claims) or /etc/slurm, naming the path: CI
# runs the tests as root, and so may an admin on a GPU node.
test: vet
	scripts/node-untouched.sh $(MAKE) --no-print-directory test-suite

# What `make test` runs under the guard. The real-Slurm suite runs
# verbosely, its per-test lines filtered out, so that its count of cluster
# scenarios shows in the output.
test-suite:
	$(GO) test -count=1 $$($(GO) list ./... | grep -v '/internal/slurmtest$$')
	$(GO) test -count=1 -v ./internal/slurmtest | grep -Ev '^(=== (RUN|PAUSE|CONT|NAME)|\s*--- PASS)'

# staticcheck runs at a pinned release through the module proxy, so that
# it needs no entry in go.mod and no install step.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: the files above need formatting"; exit 1; }
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# Every fuzz target for a bounded number of inputs (CI); `go test -fuzz`
# runs one target at a time. A count, not a duration: Go 1.26's fuzz
# coordinator can fail a target with a bare "context deadline exceeded"
# when a duration runs out (golang/go#75804, fixed in Go 1.27). 50,000
# inputs take 1-10 s per target here. Longer runs: FUZZTIME=5m make fuzz-short.
FUZZTIME ?= 50000x
FUZZ_TARGETS := capmap:FuzzParseMigMinors capmap:FuzzParse capmap:FuzzFastLine \
	slurmconf:FuzzHostlistRoundTrip slurmconf:FuzzCompressHostlist slurmconf:FuzzGresConf \
	slurmconf:FuzzGresRecordRoundTrip slurmconf:FuzzNodeGres slurmconf:FuzzUpdateNodeGres \
	slurmconf:FuzzRecordReader internal/snapshot:FuzzSnapshot internal/snapshot:FuzzOnePassAgreesWithEncodingJSON \
	internal/tools/simulator:FuzzParseTrace
fuzz-short:
	@for t in $(FUZZ_TARGETS); do \
		echo "fuzz $$t for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./$${t%%:*}/ | grep -v '^fuzz: elapsed' || exit 1; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The real-Slurm suite against every Slurm release Debian serves: 20.11
# (a bullseye chroot), this machine's own (22.05 on Debian 12), 24.11
# (trixie) and 26.05 (sid); one line per release, "slurm X.Y.Z: N passed,
# M failed". Needs root and debootstrap; chroots are cached in
# /var/cache/slurm-mig/chroots. SLURM_VERSIONS=bullseye picks targets.
# SLURM_SUITE is what runs: packages, or package:test-regexp for the
# real-Slurm tests that live beside other tests. docs/slurm-versions.md.
SLURM_SUITE := ./internal/slurmtest ./slurmconf:^TestHostlistMatchesScontrol$$ ./cmd/slurm-mig:^TestNodeFullMatchesSlurmdC$$
test-slurm-versions:
	SLURM_SUITE='$(SLURM_SUITE)' GO='$(GO)' scripts/slurm-versions.sh $(SLURM_VERSIONS)

# The systemd units under a live systemd (Debian 12's systemd 252 as
# PID 1 of a namespace, Slurm stubbed): the timer's run, systemctl stop
# in the middle of a change, one run at a time, a failed run, and the
# gres unit failing before slurmd. Needs root and debootstrap;
# scripts/systemd-live-check.sh.
systemd-live-check: build
	scripts/systemd-live-check.sh bin/slurm-mig

clean:
	rm -rf bin dist

# Packages: dist/slurm-mig_<version>_{amd64,arm64}.deb and
# dist/slurm-mig-<version>-1.{x86_64,aarch64}.rpm, built in a Debian 11
# chroot for an old glibc floor (needs root; see scripts/dist.sh).
# dist-check runs them: arm64 under qemu-user, the .deb installed into a
# clean Debian 11 chroot and removed again, the .rpm's file list.
dist:
	scripts/dist.sh

dist-check:
	scripts/check-dist.sh
