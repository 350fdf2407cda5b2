# The patchgate service image where a container registry is reachable:
#
#   docker build -f deploy/registry.Dockerfile -t patchgate .
#
# Without one, `patchgate image build` builds deploy/Dockerfile FROM the debootstrapped rootfs.
FROM python:3.11-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY checks ./checks
COPY sandbox ./sandbox
COPY rubrics ./rubrics
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim-bookworm
# git compares the base and head trees.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends git \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /install /usr/local
RUN groupadd --gid 10001 patchgate \
 && useradd --uid 10001 --gid 10001 --create-home --shell /usr/sbin/nologin patchgate \
 && mkdir -p /var/lib/patchgate/tmp \
 && chown -R patchgate:patchgate /var/lib/patchgate

ENV PATCHGATE_HOST=0.0.0.0 \
    PATCHGATE_PORT=8000 \
    PATCHGATE_WORK_DIR=/var/lib/patchgate/work \
    PATCHGATE_TEST_STORE=/var/lib/patchgate/suites \
    TMPDIR=/var/lib/patchgate/tmp \
    PYTHONUNBUFFERED=1

# No PATCHGATE_DATABASE_URL: see deploy/Dockerfile.
WORKDIR /var/lib/patchgate
USER 10001:10001
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
ENTRYPOINT ["patchgate"]
CMD ["serve"]
