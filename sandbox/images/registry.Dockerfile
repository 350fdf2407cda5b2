# The same image where a container registry is reachable (`--from-registry`).
# The index URL and CA bundle only reach the `tools` stage (see base.Dockerfile).
FROM python:3.11-slim AS tools
# Marks this stage's images so the build can delete them (they saw the index URL).
LABEL patchgate.stage=tools
ARG PIP_INDEX_URL=https://pypi.org/simple
COPY ca-certificates.crt /tmp/patchgate-build/ca.crt
COPY tools-requirements.txt isolated-tools.txt wrap_tools.py /tmp/patchgate-build/
ENV PIP_CERT=/tmp/patchgate-build/ca.crt PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python3 -m pip install --no-cache-dir -r /tmp/patchgate-build/tools-requirements.txt
RUN python3 -m pip install --no-cache-dir --target /opt/patchgate/tools \
        -r /tmp/patchgate-build/isolated-tools.txt \
    && python3 /tmp/patchgate-build/wrap_tools.py /opt/patchgate/tools /opt/patchgate/bin bandit semgrep

FROM python:3.11-slim
COPY --from=tools /usr/local /usr/local
COPY --from=tools /opt/patchgate /opt/patchgate
RUN groupadd --gid 10001 sandbox \
    && useradd --uid 10001 --gid 10001 --home-dir /tmp --no-create-home \
        --shell /usr/sbin/nologin sandbox
ENV PATH=/opt/patchgate/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp LANG=C.UTF-8
WORKDIR /work
USER 10001:10001
CMD ["python3"]
