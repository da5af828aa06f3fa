# drocli: the README's main job in a container, run as a non-root user.
#
#   docker build -t drocli \
#     --build-arg DROCLI_GIT_COMMIT="$(git rev-parse HEAD)" \
#     --build-arg DROCLI_GIT_DIRTY="$(git status --porcelain --untracked-files=no | grep -q . && echo 1 || echo 0)" .
#   docker run --rm drocli                                   # exit 0: claims judged, MATCHES
#   docker run --rm -v "$PWD/runs:/drocli/runs" drocli       # keep the run (host folder
#                                                            # writable by uid 1000)
#
# The CMD is the README's main job after its install step, which the build does (the test
# tests/test_docker.py parses both and keeps them equal): a fresh run of the MERO synthetic
# figure into runs/ (the one folder the user may write), its figure, its claims, and every
# final value compared with the recorded results/mero_synthetic.
#
# No git in the image: .git stays out of the build context (.dockerignore: 100+ MB of
# history and local config), so git would have nothing to read. The commit comes in as a
# build argument instead; drocli records DROCLI_GIT_COMMIT / DROCLI_GIT_DIRTY in the
# manifest where git gives nothing, with `git_from` saying so (built without the arguments,
# the manifest's commit is null, as for any copy without .git).
#
# Tested without a Docker daemon (there is none where this was written): tests/test_docker.py
# (slow) copies the build context as .dockerignore filters it, makes it read-only to the
# process (owned by another user; the interpreter there sits under /root, so the process is
# uid 0 with every capability dropped, or a real non-root uid where the interpreter is
# reachable), applies the ENV below, and runs this CMD: run, plot, check --reference pass.
# NOT tested: building this image (base image, pip inside the build, useradd), the USER
# switch to uid 1000 inside a container, the build arguments, and the container's run time.
FROM python:3.11-slim

ARG DROCLI_GIT_COMMIT=""
ARG DROCLI_GIT_DIRTY=""
# numba caches compiled kernels beside their source by default, and /drocli is read-only to
# the user: NUMBA_CACHE_DIR points it at the user's home; matplotlib draws without a display.
ENV DROCLI_GIT_COMMIT=$DROCLI_GIT_COMMIT \
    DROCLI_GIT_DIRTY=$DROCLI_GIT_DIRTY \
    NUMBA_CACHE_DIR=/home/drocli/.cache/numba \
    MPLBACKEND=Agg \
    PYTHONDONTWRITEBYTECODE=1

RUN useradd --create-home --uid 1000 drocli
WORKDIR /drocli
COPY . .
RUN python -m pip install --no-cache-dir -e . \
    && mkdir -p runs && chown drocli:drocli runs
USER drocli
CMD ["sh", "-c", "drocli run experiments/mero_synthetic.yaml -j 2 --out runs/mero_synthetic && drocli plot runs/mero_synthetic && drocli check runs/mero_synthetic --reference results/mero_synthetic"]
