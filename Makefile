# dra-doctor build.  `make` builds ./dra-doctor; `make test` builds and runs every
# test (unit, golden, sanitizer build, fuzz smoke); `make deps` installs the
# Debian packages (idempotent, needs root); `make bench` and `make fuzz` run long.

VERSION    := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
CC         ?= cc
CLANG      ?= $(shell command -v clang-14 || command -v clang)
PKGS       := libcjson yaml-0.1 re2 libcurl libmicrohttpd gnutls libssl libcrypto
WARN       := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
              -Wvla -Wformat=2 -Wformat-security -Wwrite-strings -Wno-format-nonliteral \
              -fno-common
BASECFLAGS := -std=c11 -D_GNU_SOURCE -DDD_VERSION='"$(VERSION)"' -Ilib -Ilint -Icontroller -Iwebhook -Icerts $(WARN)
CFLAGS     ?= -O2 -g
DEPCFLAGS   = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS      = $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lcjson -lyaml -lre2 -lcurl -lmicrohttpd -lgnutls -lssl -lcrypto) -lstdc++ -lm -pthread
B          ?= build/release

LIB_SRC    := $(sort $(wildcard lib/*.c lib/*/*.c))
# The one C++ seam: RE2 (lib/cel/cel_re2.cc).
LIB_CXX    := $(sort $(wildcard lib/*/*.cc))
APP_SRC    := $(sort $(wildcard lint/*.c controller/*.c webhook/*.c certs/*.c))
MAIN_SRC   := dra-doctor.c
TEST_SRC   := $(sort $(wildcard tests/unit/test_*.c))
E2E_SRC    := $(sort $(wildcard tests/e2e/e2e_*.c))
FUZZ_SRC   := $(sort $(wildcard tests/fuzz/fuzz_*.c))

LIB_OBJ    := $(LIB_SRC:%.c=$(B)/%.o) $(LIB_CXX:%.cc=$(B)/%.o)
APP_OBJ    := $(APP_SRC:%.c=$(B)/%.o)
TEST_BIN   := $(TEST_SRC:tests/unit/%.c=$(B)/tests/%) $(B)/tests/test_json_portable
E2E_BIN    := $(E2E_SRC:tests/e2e/%.c=$(B)/e2e/%)

.PHONY: all deps demo test test-unit test-asan test-fuzz test-e2e test-differential fuzz bench conformance clean \
        install uninstall dist
all: dra-doctor $(B)/nodesim

$(B)/%.o: %.c $(wildcard lib/*.h lib/*/*.h lint/*.h controller/*.h webhook/*.h certs/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(BASECFLAGS) $(CFLAGS) $(DEPCFLAGS) -c -o $@ $<

$(B)/%.o: %.cc lib/cel/cel_int.h
	@mkdir -p $(dir $@)
	@echo "  CXX     $<"
	@$(CXX) -std=c++17 -Wall -Wextra -Werror $(CFLAGS) $(DEPCFLAGS) -c -o $@ $<

$(B)/libdd.a: $(LIB_OBJ) $(APP_OBJ)
	@rm -f $@
	@ar rcs $@ $^

$(B)/dra-doctor: $(B)/$(MAIN_SRC:.c=.o) $(B)/libdd.a
	@echo "  LINK    $@"
	@$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

dra-doctor: $(B)/dra-doctor
	cp $< $@

# The simulated node of the e2e tests (kubelet, containerd, DRA driver plugin): e2e/sim/README.md.
$(B)/nodesim: e2e/sim/nodesim.c $(B)/libdd.a
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(BASECFLAGS) $(CFLAGS) $(DEPCFLAGS) -o $@ $< $(B)/libdd.a $(LDLIBS)

# The allocation differential harness as a plain program: the deterministic slice of the
# fuzzer (scripts/alloc-differential.sh) and the allocation benchmark's C side.
$(B)/alloc-diff: tests/fuzz/fuzz_alloc_diff.c $(B)/libdd.a
	@echo "  LINK    $@"
	@$(CC) $(BASECFLAGS) $(CFLAGS) $(DEPCFLAGS) -DALLOC_DIFF_MAIN -o $@ $< $(B)/libdd.a $(LDLIBS)

# The admission decision alone, for bench/webhook-bench.sh.
$(B)/review-bench: bench/review-bench.c $(B)/libdd.a
	@echo "  LINK    $@"
	@$(CC) $(BASECFLAGS) $(CFLAGS) $(DEPCFLAGS) -o $@ $< $(B)/libdd.a $(LDLIBS)

# The controller's CPU per watch event in process, for docs/benchmarks.md.
$(B)/event-bench: bench/event-bench.c $(B)/libdd.a
	@echo "  LINK    $@"
	@$(CC) $(BASECFLAGS) $(CFLAGS) $(DEPCFLAGS) -o $@ $< $(B)/libdd.a $(LDLIBS)

# What the live caches and a snapshot of them take, in process, for docs/benchmarks.md.
$(B)/cache-bench: bench/cache-bench.c $(B)/libdd.a
	@echo "  LINK    $@"
	@$(CC) $(BASECFLAGS) $(CFLAGS) $(DEPCFLAGS) -o $@ $< $(B)/libdd.a $(LDLIBS)

$(B)/tests/%: tests/unit/%.c $(B)/libdd.a $(wildcard tests/unit/*.h)
	@mkdir -p $(dir $@)
	@echo "  TEST    $@"
	@$(CC) $(BASECFLAGS) $(CFLAGS) $(DEPCFLAGS) -Itests/unit -o $@ $< $(B)/libdd.a $(LDLIBS) -lcmocka

# test_json again over lib/formats/json.c built without SSE2: the eight-byte loop other CPUs run.
$(B)/tests/test_json_portable: tests/unit/test_json.c lib/formats/json.c $(B)/libdd.a $(wildcard lib/*.h tests/unit/*.h)
	@mkdir -p $(dir $@)
	@echo "  TEST    $@"
	@$(CC) $(BASECFLAGS) $(CFLAGS) $(DEPCFLAGS) -U__SSE2__ -Itests/unit -o $@ tests/unit/test_json.c lib/formats/json.c $(B)/libdd.a $(LDLIBS) -lcmocka

# e2e_scheduler_judge includes the allocation differential harness (its generator).
$(B)/e2e/%: tests/e2e/%.c $(B)/libdd.a tests/unit/harness.h $(wildcard tests/e2e/*.h) \
             tests/fuzz/fuzz_alloc_diff.c tests/fuzz/peer.h
	@mkdir -p $(dir $@)
	@echo "  E2E     $@"
	@$(CC) $(BASECFLAGS) $(CFLAGS) $(DEPCFLAGS) -Itests/unit -o $@ $< $(B)/libdd.a $(LDLIBS) -lcmocka

# A real control plane (e2e/cluster), the simulated node, and dra-doctor under its own RBAC:
# every e2e program on the pinned release (e2e/k8s, v1.37.2), then the seed scenario on the
# oldest supported one, K8S_SECOND (scripts/prebuild.sh builds it in the background).
K8S_SECOND ?= v1.35.4
export K8S_SECOND
test-e2e: $(B)/dra-doctor $(B)/nodesim $(E2E_BIN)
	scripts/e2e.sh $(B)
	K8S_VERSION=$(K8S_SECOND) DD_E2E_ONLY=e2e_seed scripts/e2e.sh $(B)

deps:
	scripts/deps.sh

demo: deps
	$(MAKE) --no-print-directory all
	B=$(B) scripts/demo.sh

# Every unit test binary runs in its own process; scripts/run-tests.sh prints
# cmocka's summaries and one closing "N passed, N failed" line.
test-unit: $(TEST_BIN) $(B)/dra-doctor
	scripts/run-tests.sh $(B)

test-asan:
	$(MAKE) --no-print-directory B=build/asan \
	  CFLAGS="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
	  test-unit

# Every CEL case the unit tests state, through Kubernetes' own CEL code (e2e/peers/celoracle);
# every allocation case and a fixed set of generated ones through Kubernetes' own allocator
# (e2e/peers/allocoracle).
test-differential:
	python3 scripts/cel-differential.py
	scripts/alloc-differential.sh $(B)

test-fuzz:
	scripts/fuzz.sh smoke

fuzz:
	scripts/fuzz.sh long

test: deps
	@rm -f build/test-counts
	@scripts/prebuild.sh start $$PPID
	$(MAKE) --no-print-directory test-unit
	$(MAKE) --no-print-directory test-asan
	$(MAKE) --no-print-directory test-differential
	$(MAKE) --no-print-directory test-fuzz
	$(MAKE) --no-print-directory test-e2e
	@scripts/prebuild.sh wait
	scripts/summary.sh

bench: dra-doctor $(B)/nodesim $(B)/event-bench $(B)/cache-bench
	bench/lint-bench.sh
	DD_BIN=$(B)/dra-doctor bench/lint-cluster-bench.sh
	bench/controller-bench.sh $(B)
	$(B)/event-bench -e 10 5000 50000
	BENCH_PODS=50000 BENCH_NODES=1000 python3 bench/ctl-load.py dump $(B)/bench-objects.json
	$(B)/cache-bench $(B)/bench-objects.json
	$(B)/cache-bench --webhook $(B)/bench-objects.json
	DD_BIN=$(B)/dra-doctor bench/webhook-mem.sh $(B)/bench-objects.json
	BENCH_PODS=50000 BENCH_NODES=1000 BENCH_DEVS=2 python3 bench/ctl-load.py dump $(B)/bench-objects-10k.json
	$(B)/cache-bench --webhook $(B)/bench-objects-10k.json
	DD_BIN=$(B)/dra-doctor bench/webhook-mem.sh $(B)/bench-objects-10k.json
	CC="$(CC)" bench/webhook-bench.sh
	CC="$(CC)" bench/cel-bench.sh $(B)
	CC="$(CC)" bench/alloc-bench.sh $(B)

# The CEL selector conformance corpus (../shared/corpus/cel, never copied here) through lint.
conformance: dra-doctor
	python3 scripts/conformance.py

# `make install [PREFIX=/usr/local] [DESTDIR=]`: the binary, its kubectl plugin name
# (`kubectl dra-doctor`) and the bash and zsh completions, where those shells look.
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions

install: $(B)/dra-doctor
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR)
	install -m 0755 $(B)/dra-doctor $(DESTDIR)$(BINDIR)/dra-doctor
	ln -sf dra-doctor $(DESTDIR)$(BINDIR)/kubectl-dra_doctor
	$(B)/dra-doctor completion bash > $(DESTDIR)$(BASHCOMPDIR)/dra-doctor
	ln -sf dra-doctor $(DESTDIR)$(BASHCOMPDIR)/kubectl-dra_doctor
	$(B)/dra-doctor completion zsh > $(DESTDIR)$(ZSHCOMPDIR)/_dra-doctor

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/dra-doctor $(DESTDIR)$(BINDIR)/kubectl-dra_doctor \
	      $(DESTDIR)$(BASHCOMPDIR)/dra-doctor $(DESTDIR)$(BASHCOMPDIR)/kubectl-dra_doctor \
	      $(DESTDIR)$(ZSHCOMPDIR)/_dra-doctor

# The krew plugin's archive and manifest (deploy/krew/README.md): build/dist/.
# KREW_URL is where the archive will be downloaded from.
KREW_URL ?= https://example.org/dra-doctor/releases/download/v$(VERSION)
dist: $(B)/dra-doctor
	scripts/krew-dist.sh $(B)/dra-doctor build/dist "$(KREW_URL)"

clean:
	rm -rf build dra-doctor
