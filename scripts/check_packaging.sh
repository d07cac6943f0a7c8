#!/usr/bin/env bash
# Build topoctl as a wheel and an sdist, install each into a fresh virtual environment, and run the installed
# console script against the repository's example deployments. Slow (two venvs, dependencies from the
# package index), so it is a script, not a test: run it before tagging a release.
#   scripts/check_packaging.sh            # uses python3; SCRATCH=DIR to keep the build folder
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
scratch=${SCRATCH:-$(mktemp -d)}
python=${PYTHON:-python3}
echo "building in $scratch"
"$python" -m venv "$scratch/build-venv"
"$scratch/build-venv/bin/pip" install -q build
"$scratch/build-venv/bin/python" -m build --outdir "$scratch/dist" "$root" >"$scratch/build.log" 2>&1 \
    || { tail -20 "$scratch/build.log"; exit 1; }
version=$("$python" -c 'import re,sys; print(re.search(r"__version__ = \"([^\"]+)\"", open("topoctl/__init__.py").read()).group(1))')
wheel="$scratch/dist/topoctl-$version-py3-none-any.whl"
sdist="$scratch/dist/topoctl-$version.tar.gz"
ls -l "$wheel" "$sdist"
for artifact in "$wheel" "$sdist"; do
    venv="$scratch/venv-$(basename "$artifact")"
    "$python" -m venv "$venv"
    "$venv/bin/pip" install -q "$artifact"
    (cd "$scratch" && "$venv/bin/topoctl" --version)
    # from another folder, so that the installed package (not the checkout) answers; data files included
    set +e
    (cd "$scratch" && "$venv/bin/topoctl" check "$root/examples/deploy" --system h200-4x-nvswitch-vm >/dev/null 2>&1)
    code=$?
    set -e
    [ "$code" = 0 ] || { echo "$artifact: topoctl check exited $code"; exit 1; }
    (cd "$scratch" && "$venv/bin/python" -c 'import topoctl.deploy.launcher_args as p; assert p.dynamo_versions(), "no Dynamo data"')
    echo "$(basename "$artifact"): installs, topoctl check examples/deploy exits 0"
done
