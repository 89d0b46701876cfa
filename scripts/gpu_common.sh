# Shared preamble of the device scripts (source it from the repo root): the package from src/, the carried wheels
# (.whl/, filled by scripts/fetch_wheels.sh: cudnn-frontend for the attention peer, pytest-xdist) installed into
# /tmp/site, and `el` to log elapsed seconds.
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
# PNG plots only with SAVE_PNG=1: $OUT returns at most 8 files (session 11 lost a JSON to that limit).
save() {
  local skip=(! -name "*.png"); [ -n "${SAVE_PNG:-}" ] && skip=()
  find benchmarks/results -type f -newer "$OUT/.t0" "${skip[@]}" -exec cp {} "$OUT/results/" \; 2>/dev/null; true
}
# Issue 4's dense block-scaled shape set (DeepSeek-V3 projections at M 4096/8192, plus M 16/128 for 7168x16384).
BLOCK_SHAPES="4096x7168x16384;8192x7168x16384;4096x24576x1536;8192x24576x1536;4096x32768x512;8192x32768x512;4096x7168x18432;8192x7168x18432;4096x18432x7168;8192x18432x7168;4096x4096x7168;8192x4096x7168;4096x7168x2048;8192x7168x2048;128x7168x16384;16x7168x16384"
# pytest_v SECONDS ARGS...: a verbose pytest run into /tmp/t.log (a hang leaves the case's name as the log's last
# line), then the outcome counts, the failures and the summary.
pytest_v() {
  local t=$1; shift
  timeout "$t" python3 -m pytest -v -p no:cacheprovider "$@" > /tmp/t.log 2>&1
  for w in PASSED FAILED SKIPPED ERROR; do echo "$w $(grep -c " $w" /tmp/t.log)"; done
  grep -E "FAILED|^E  " /tmp/t.log | head -20; tail -2 /tmp/t.log
}
# decode_variants NAMES CASES [LINES]: the decode config sweep (eager, 3 interleaved rounds) of bench variants NAMES
# (comma list) on cases CASES (B:ctx:Hq:page, comma list), the table's last LINES lines.
decode_variants() {
  timeout 200 python3 -m tritonfp8 bench decode --variants-only --repeats 3 --variant-names "$1" --variant-cases "$2" \
    2>&1 | tail -"${3:-22}"
}
# matrix_until SECONDS_FROM_T0 CTX: issue 6's decode matrix (B 8 / 32 / 128, pages of 16 and 64, Hq 32 / 64, peers)
# at one context, bounded to end SECONDS_FROM_T0 after the script's start, then `save`.
matrix_until() {
  bench_until "$1" --batch 8 --batch 32 --batch 128 --context "$2"
}
# bench_until SECONDS_FROM_T0 ARGS...: `bench decode --repeats 3 ARGS...` bounded to end SECONDS_FROM_T0 after the
# script's start (nothing when that has passed), the table's decode rows, then `save`.
bench_until() {
  local left=$(( $1 - $(date +%s) + T0 )); shift
  el "bench decode $*" "$left s left"
  if [ "$left" -le 0 ]; then return; fi
  timeout "$left" python3 -m tritonfp8 bench decode --repeats 3 "$@" 2>&1 | grep "│ B\|results:\|failed\|Error"
  save
}
# require_gpu PATTERN: print the GPU's name and stop the script (exit 3) unless it matches PATTERN (a shell glob
# word, e.g. H100): for runs whose result belongs to one part, such as its tuned table.
require_gpu() {
  local gpu; gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
  echo "$gpu"
  case "$gpu" in *"$1"*) ;; *) echo "not an $1: stop"; exit 3 ;; esac
}
# smi_start / smi_stop TAG: SM and memory clocks, power, temperature and throttle reasons every 250 ms in the
# background (session 39), then $OUT/results/smi-TAG-<time>.csv and a one-line summary of the samples under load.
smi_start() {
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv -lms 250 > /tmp/smi.csv 2>&1 &
  SMI_PID=$!
}
smi_stop() {
  kill "$SMI_PID"
  [ -n "${OUT:-}" ] && cp /tmp/smi.csv "$OUT/results/smi-$1-$(date +%H%M%S).csv"
  awk -F', ' 'NR > 1 && $2 + 0 > 1000 { n++; s += $2; if (min == "" || $2 + 0 < min) min = $2 + 0 } END {
    print "smi samples under load", n, "sm MHz mean", s / n, "min", min }' /tmp/smi.csv
}
# drop_partials PREFIX: once $OUT/results holds PREFIX's final file, its PREFIX-partial-* saves are removed (at most 8
# files come back; session 39 lost its clock log to them).
drop_partials() {
  if [ -n "${OUT:-}" ] && ls "$OUT"/results/"$1"-2*.json >/dev/null 2>&1; then
    rm -f "$OUT"/results/"$1"-partial-*.json
  fi
}
# h200_matrices END4096 END32768: on an H200 (issue 6's card) the matrix at ctx 4096, then 32768, each bounded by
# matrix_until; MATRIX_END = the seconds they took (0 on another card): the offset of the script's later ends.
h200_matrices() {
  MATRIX_END=0
  case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in *H200*)
    matrix_until "$1" 4096
    matrix_until "$2" 32768
    MATRIX_END=$(( $(date +%s) - T0 )) ;;
  esac
}
