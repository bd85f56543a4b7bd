#!/usr/bin/env bash
# Before/after comparison for a refactor that must not change behaviour: runs a fixed list of commands
# (commands.list) with an older checkout and with this tree, and compares every output (JSON, YAML, CSV, npz,
# checkpoints, stdout) exactly, masking only wall times, paths and warnings (compare.py says which keys).
#
#   git worktree add /tmp/old <rev>                        # the tree to compare against
#   bash tools/before_after/compare.sh before /tmp/old     # run the list with it into $WORK/before
#   bash tools/before_after/compare.sh after               # run the list with this tree, then diff
#   bash tools/before_after/compare.sh diff [A B]          # only compare (default: before after)
#   bash tools/before_after/compare.sh run SIDE CHECKOUT   # run the list with any checkout into $WORK/SIDE
#   ONLY="name1 name2" bash tools/before_after/compare.sh after   # rerun only some commands
# WORK (default /tmp/deepcollapse-before-after) holds the outputs; PY (default .venv/bin/python of this tree)
# runs both trees (the packages' own dependencies must match). Takes 2-6 minutes a side on 2 cores.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
WORK=${WORK:-/tmp/deepcollapse-before-after}
PY=${PY:-$REPO/.venv/bin/python}
IN=$WORK/inputs

run_side() {
    local side=$1 src=$2
    local dir=$WORK/$side
    [ -d "$src/deepcollapse" ] || { echo "no package at $src/deepcollapse" >&2; exit 2; }
    [ -f "$IN/features.npz" ] || "$PY" "$HERE/make_inputs.py" "$IN" "$src/../configs" >/dev/null
    mkdir -p "$dir"
    # the same environment for both trees; nothing from the caller's deepcollapse/numba settings leaks in
    local env=(env -u DEEPCOLLAPSE_KERNEL PYTHONPATH="$src" PYTHONDONTWRITEBYTECODE=1 PYTHONHASHSEED=0
               NUMBA_CACHE_DIR="$WORK/.numba-cache" MPLBACKEND=Agg TQDM_DISABLE=1 COLUMNS=80
               DC="$PY -m deepcollapse" IN="$IN" WORK="$WORK")
    local where
    where=$("${env[@]}" "$PY" -c "import deepcollapse; print(deepcollapse.__file__)")
    echo "$side: $where"
    echo "$where" > "$dir/_tree"
    # warm the numba cache (compiled kernels, per dtype and family) outside the timings; not compared
    rm -rf "$dir/_warmup"; mkdir -p "$dir/_warmup"
    (cd "$dir/_warmup" && "${env[@]}" bash -c '$DC dufm train --classes 2 --layers 2 --n 2 --width 2 --steps 2 \
        --log-every 1 --out a --no-progress; $DC dufm train --classes 2 --layers 2 --n 2 --width 2 --steps 2 \
        --log-every 1 --loss ce --activation relu_eps --eps 0.1 --dtype float64 --out b --no-progress' \
        >/dev/null 2>&1 </dev/null)
    local total_start=$SECONDS
    while IFS= read -r line; do
        case "$line" in ''|'#'*) continue ;; esac
        local name=${line%%|*} cmd=${line#*|}
        name=$(echo "$name" | tr -d ' ')
        cmd=$(echo "$cmd" | sed 's/^ *//')
        if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then continue; fi
        rm -rf "${dir:?}/$name"; mkdir -p "$dir/$name"
        printf '%s\n' "$cmd" > "$dir/$name/_command"
        local t0 t1
        t0=$(date +%s.%N)
        (cd "$dir/$name" && "${env[@]}" timeout 600 bash -c "$cmd" >_stdout 2>_stderr </dev/null)
        echo $? > "$dir/$name/_rc"
        t1=$(date +%s.%N)
        awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f\n", b-a}' > "$dir/$name/_time"
        printf '  %-24s rc=%s  %6ss\n' "$name" "$(cat "$dir/$name/_rc")" "$(cat "$dir/$name/_time")"
    done < "$HERE/commands.list"
    echo "$side: done in $((SECONDS - total_start)) s"
}

case "${1:-}" in
    before) run_side before "${2:?usage: compare.sh before OLD_CHECKOUT}/src" ;;
    after)  run_side after "$REPO/src" && "$PY" "$HERE/compare.py" "$WORK/before" "$WORK/after" ;;
    run)    run_side "$2" "$3/src" ;;
    diff)   "$PY" "$HERE/compare.py" "$WORK/${2:-before}" "$WORK/${3:-after}" ;;
    *) sed -n '2,14p' "$0"; exit 2 ;;
esac
