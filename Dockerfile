# topoctl itself as a container image, for CI systems that run each job in an image (GitLab CI, Tekton,
# Argo): `topoctl check` needs no GPU, so the image is CPU-only and small. Build it from a clone of this
# repository (the build context is the clone; .dockerignore keeps the venv and the tests out):
#   docker build -t topoctl:$(git rev-parse --short HEAD) .
#   docker run --rm -v "$PWD:/work" topoctl:TAG check examples/deploy --system h200-4x-nvswitch-vm
# The base image's Python is the one the test suite runs on (README, "Quick start").
FROM python:3.11-slim

COPY . /tmp/topoctl
RUN pip install --no-cache-dir /tmp/topoctl && rm -rf /tmp/topoctl \
    && useradd --create-home --uid 1000 topoctl

USER topoctl
WORKDIR /work
ENTRYPOINT ["topoctl"]
CMD ["--help"]
