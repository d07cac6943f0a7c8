#!/usr/bin/env bash
# Run the whole test suite on each given Python, the way .ci/run does on 3.11: a clone of this checkout's
# committed HEAD (uncommitted edits are not in it), a fresh venv made by that Python, `pip install -e
# '.[test,lint,plot]'`, torch's CPU build 2.13.0 where the machine has it for that Python (the bench tests
# skip, saying so, where it has not), then `python -m pytest -q`. A Python below python_requires is tried by lowering
# python_requires in that clone alone (a local commit there, so that the suite's own fresh-clone installs take
# it too); the tests of the claim itself (tests/docs/test_readme.py) then fail for it, as they should until it is
# claimed. One Python at a time; each run's log is kept.
# The supported Pythons (setup.cfg's classifiers and python_requires, README "Quick start") are the ones
# this shows passing; docs/pythons.md records the runs.
#   scripts/python_matrix.sh ~/.pyenv/versions/3.12.1/bin/python ...   # SCRATCH=DIR keeps the work there
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
commit=$(git -C "$root" rev-parse HEAD)
scratch=${SCRATCH:-$(mktemp -d)}
[ "$#" -gt 0 ] || { echo "usage: $0 PYTHON... (an interpreter path each)" >&2; exit 2; }
echo "commit $commit, work in $scratch"
status=0
for python in "$@"; do
    version=$("$python" -c 'import platform; print(platform.python_version())') \
        || { echo "$python: cannot run it" >&2; status=1; continue; }
    work="$scratch/py$version"
    rm -rf "$work" && mkdir -p "$work"
    git clone -q --no-tags "$root" "$work/topoctl" && git -C "$work/topoctl" checkout -q -B matrix "$commit"
    short=${version%.*}
    floor=$(sed -n 's/^python_requires = >=//p' "$work/topoctl/setup.cfg")
    if [ "$(printf '%s\n' "$short" "$floor" | sort -V | head -1)" != "$floor" ]; then
        sed -i "s/^python_requires = .*/python_requires = >=$short/" "$work/topoctl/setup.cfg"
        git -C "$work/topoctl" -c user.name=matrix -c user.email=matrix@localhost commit -qam "Try Python $short"
        echo "$version: below python_requires >=$floor; lowered in $work/topoctl for this run"
    fi
    "$python" -m venv "$work/venv"
    if ! "$work/venv/bin/pip" install -q -e "$work/topoctl[test,lint,plot]" >"$work/install.log" 2>&1; then
        echo "$version: install failed (tail of $work/install.log):"; tail -5 "$work/install.log"; status=1; continue
    fi
    # --no-index: the CPU build from the machine's local wheels (PIP_FIND_LINKS) or nothing, never a CUDA build
    # from the index (which has torch 2.13.0 for every Python, with gigabytes of CUDA libraries)
    if "$work/venv/bin/pip" install -q --no-index torch==2.13.0 >>"$work/install.log" 2>&1; then
        torch=$("$work/venv/bin/python" -c 'import torch; print(torch.__version__)')
    else
        torch=none
    fi
    start=$(date +%s)
    (cd "$work/topoctl" && "$work/venv/bin/python" -m pytest -q -p no:cacheprovider) >"$work/pytest.log" 2>&1
    code=$?
    echo "$version: pytest exit $code in $(( $(date +%s) - start )) s, torch $torch: $(tail -1 "$work/pytest.log")"
    [ "$code" = 0 ] || { grep -E '^(FAILED|ERROR) ' "$work/pytest.log" | head -40; status=1; }
done
exit "$status"
