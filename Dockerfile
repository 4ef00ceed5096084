# syntax=docker/dockerfile:1
# Build with the official Swift image, run on slim Debian with only the shared libraries atsgate links.
FROM swift:6.3-bookworm AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends pkg-config libssl-dev libsystemd-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
COPY Benchmarks ./Benchmarks
COPY Tests ./Tests
RUN swift build -c release --product atsgate --static-swift-stdlib \
    && install -m 0755 "$(swift build -c release --show-bin-path)/atsgate" /usr/local/bin/atsgate

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends libssl3 libsystemd0 ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/atsgate /usr/local/bin/atsgate
COPY config/policies /etc/atsgate/policies
USER 65532:65532
ENTRYPOINT ["atsgate"]
CMD ["--help"]
