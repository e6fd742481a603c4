# The runner image: `provisioning-runner`, Terraform and an SSH client, run by the Kubernetes
# executor as the one container of each job's batch/v1 Job (PROVISIONING_K8S_RUNNER_IMAGE).
#
# Not built in CI: no Docker engine runs on the development machines or in CI. Build it
# where one does, from the repository root:
#   docker build -f deploy/images/runner.Dockerfile -t registry.example/provisioning-runner:0.1.0 .

ARG RUST_VERSION=1
ARG TERRAFORM_VERSION=1.9.8

FROM rust:${RUST_VERSION}-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p runner --bin provisioning-runner \
 && cp target/release/provisioning-runner /usr/local/bin/

FROM debian:bookworm-slim AS terraform
ARG TERRAFORM_VERSION
ARG TARGETARCH=amd64
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl unzip \
 && curl -fsSLo /tmp/terraform.zip \
      "https://releases.hashicorp.com/terraform/${TERRAFORM_VERSION}/terraform_${TERRAFORM_VERSION}_linux_${TARGETARCH}.zip" \
 && curl -fsSLo /tmp/SHA256SUMS \
      "https://releases.hashicorp.com/terraform/${TERRAFORM_VERSION}/terraform_${TERRAFORM_VERSION}_SHA256SUMS" \
 && (cd /tmp && grep "linux_${TARGETARCH}.zip" SHA256SUMS | sed "s|  .*|  terraform.zip|" | sha256sum -c -) \
 && unzip /tmp/terraform.zip -d /usr/local/bin terraform

FROM debian:bookworm-slim
# ca-certificates: the cloud providers' APIs; git: Terraform module sources;
# openssh-client: install jobs log in to their VM with the system `ssh` (coreutils, in the
# base image, has what else they run). The runner's user must exist in /etc/passwd: ssh
# refuses to run for a uid it cannot name.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates git openssh-client \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 10001 --create-home --home-dir /home/runner runner
COPY --from=terraform /usr/local/bin/terraform /usr/local/bin/terraform
COPY --from=build /usr/local/bin/provisioning-runner /usr/local/bin/provisioning-runner
# The Job mounts the working directory's ConfigMap at /job (read-only) and an emptyDir at
# /work; the runner copies /job into /work (RUNNER_SOURCE_DIR) before `terraform init` (or,
# for an install job, before its first ssh). An install job's deploy key comes from the
# Job's own Secret (RUNNER_DEPLOY_KEY); the runner writes it to a 0600 file under /tmp.
ENV TERRAFORM_BIN=/usr/local/bin/terraform \
    TF_IN_AUTOMATION=1 \
    CHECKPOINT_DISABLE=1
USER 10001
WORKDIR /work
# The runner is PID 1 (the Job's command is `provisioning-runner`). It installs its SIGTERM
# and SIGINT handlers before anything else, so the kernel does not ignore them as it would
# for a PID 1 without handlers: on SIGTERM it interrupts Terraform, reports what it prints
# and its result, and exits. It waits for every Terraform process it starts; a provider
# plugin orphaned by a killed Terraform stays a zombie until the pod ends with its job.
ENTRYPOINT []
CMD ["provisioning-runner"]
