# syntax=docker/dockerfile:1
# Build with the official Swift image, run on slim Debian with only the shared libraries atsgate links.
FROM swift:6.3-bookworm AS build
# Unpinned on purpose: bookworm's security updates replace the versions a pin would name.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends pkg-config libssl-dev libsystemd-dev zlib1g-dev libcrypt-dev libc-ares-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Package.swift names every target, so the test and benchmark sources come along to resolve it.
COPY Package.swift ./
COPY Sources ./Sources
COPY Benchmarks ./Benchmarks
COPY Tests ./Tests
RUN swift build -c release --product atsgate --static-swift-stdlib \
    && install -m 0755 "$(swift build -c release --show-bin-path)/atsgate" /usr/local/bin/atsgate

FROM debian:bookworm-slim
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libssl3 libsystemd0 zlib1g libcrypt1 libc-ares2 ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/atsgate /usr/local/bin/atsgate
COPY config/policies /etc/atsgate/policies
# Listens on 0.0.0.0 (proxy 3128, admin 9090) and admits loopback and Docker's bridge networks
# only: see allow-client in the file, and mount your own over it.
COPY deploy/container/atsgate.conf /etc/atsgate/atsgate.conf
# A fixed unprivileged UID (distroless's "nonroot"), so Kubernetes' runAsNonRoot can check it.
USER 65532:65532
EXPOSE 3128 9090
# GET /healthz on the admin listener (127.0.0.1:9090); no curl in this image.
HEALTHCHECK --interval=30s --timeout=5s --start-period=5s --retries=3 CMD ["atsgate", "health"]
# SIGTERM drains open connections for grace-period seconds, then exits 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["atsgate"]
# Other commands run the same way: docker run --rm IMAGE lint /p/Info.plist
CMD ["run", "--config", "/etc/atsgate/atsgate.conf"]
