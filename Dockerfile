# dra-doctor's container image: one binary, every subcommand
# (deploy/ runs `webhook`, `controller`, `node` and `certs` from it).
#
# The build stage runs the Makefile's own steps, nothing else: scripts/deps.sh (what
# `make deps` runs) installs the Debian packages, then `make dra-doctor` builds with the
# Makefile's flags.  tests/unit/test_dockerfile.c keeps this file, the Makefile and
# deps.sh in step, and checks that the runtime stage installs a package for every shared
# library the binary loads.
#
#   docker build -t ghcr.io/dra-doctor/dra-doctor:$(cat VERSION) .

FROM debian:bookworm AS build
WORKDIR /src
# deps.sh first and alone: the package layer is rebuilt only when the list changes.  Only
# the build's packages, not those of the e2e tests' real node.
ENV DD_DEPS_BUILD_ONLY=1
COPY scripts/deps.sh scripts/deps.sh
RUN scripts/deps.sh
COPY . .
RUN make dra-doctor

# Runtime: Debian 12 slim (the build stage's release, so the same library ABIs) plus the
# shared libraries `ldd dra-doctor` lists, by their Debian packages; apt resolves what
# those load in turn.  Not distroless: its base-debian12 lacks libcurl, libmicrohttpd,
# libcjson, libyaml and their ~30 dependencies, which would have to be copied by hand
# from the build stage and kept in step with every Debian update.
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        libcjson1 libyaml-0-2 libre2-9 libcurl4 libmicrohttpd12 libgnutls30 libssl3 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/dra-doctor /usr/local/bin/dra-doctor
# The manifests in deploy/ run it as this uid (runAsNonRoot, runAsUser 65532).
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/dra-doctor"]
