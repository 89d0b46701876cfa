# Shared preamble of the device scripts (source it from the repo root): the package from src/, the carried wheels
# (.whl/, e.g. cudnn-frontend for the attention peer) installed into /tmp/site, and `el` to log elapsed seconds.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=$PYTHONPATH:/tmp/site
fi
mkdir -p benchmarks/results
T0=$(date +%s)
el() { echo "=== $(( $(date +%s) - T0 )) s: $*"; }
# Only this run's result files go back to $OUT (copying every committed result overflowed the transfer limit once):
# call `save` after each step.
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT/results"
  touch "$OUT/.t0"
fi
save() { find benchmarks/results -type f -newer "$OUT/.t0" -exec cp {} "$OUT/results/" \; 2>/dev/null; true; }
