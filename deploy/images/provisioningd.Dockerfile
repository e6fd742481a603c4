# The provisioningd image: every role of the platform (API, relay, projector, dispatcher,
# ingester), with the provider registry and Terraform folders under /opt/provisioning/hcl.
# With PROVISIONING_EXECUTOR=kubernetes it needs no Terraform: runners run as Jobs of the
# runner image (deploy/images/runner.Dockerfile).
#
# Not built in CI: no Docker engine runs on the development machines or in CI. Build it
# where one does, from the repository root:
#   docker build -f deploy/images/provisioningd.Dockerfile -t registry.example/provisioningd:0.1.0 .

ARG RUST_VERSION=1

FROM rust:${RUST_VERSION}-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p daemon --bin provisioningd \
 && cp target/release/provisioningd /usr/local/bin/

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 10001 --create-home --home-dir /home/provisioningd provisioningd \
 && mkdir -p /var/lib/provisioning/jobs \
 && chown 10001 /var/lib/provisioning/jobs
COPY --from=build /usr/local/bin/provisioningd /usr/local/bin/provisioningd
COPY hcl /opt/provisioning/hcl
ENV PROVISIONING_HCL_DIR=/opt/provisioning/hcl \
    PROVISIONING_WORK_DIR=/var/lib/provisioning/jobs \
    PROVISIONING_HTTP_ADDR=0.0.0.0:8080
USER 10001
EXPOSE 8080
ENTRYPOINT ["provisioningd"]
CMD ["run"]
