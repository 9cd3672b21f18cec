#!/usr/bin/env bash
# Builds every fuzz target and runs each for SECONDS, failing on the first crash, panic, input
# slower than 1 s or process past the memory bound. Prints one summary line per target
# (executions, coverage, peak RSS) and keeps each run's log in logs/<target>.log.
#
#   fuzz/run.sh SECONDS [TARGET...]     (default: every target)
#
# FUZZ_JOBS=2 runs two targets at a time (one per core). FUZZ_RSS_MB sets the memory bound.
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). A crash leaves its
# input in artifacts/<target>/; reproduce it with `cargo +nightly fuzz run <target> <file>`.
set -euo pipefail
cd "$(dirname "$0")"
# The fuzz crate builds with nightly and sanitizer flags into its own fuzz/target.
unset CARGO_TARGET_DIR

seconds=${1:?usage: fuzz/run.sh SECONDS [TARGET...]}
shift
jobs=${FUZZ_JOBS:-1}
# The search target holds a small tantivy index and its reader's caches; the others need far
# less. Past this a target counts as leaking.
rss_mb=${FUZZ_RSS_MB:-1024}

if [ $# -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

cargo +nightly fuzz build
mkdir -p logs

run_one() {
    local target=$1
    mkdir -p "corpus/$target" "artifacts/$target"
    # -close_fd_mask=1: the targets print nothing worth keeping; libFuzzer's own lines go to
    # stderr, which is the log.
    if cargo +nightly fuzz run "$target" -- \
        -max_total_time="$seconds" -timeout=1 -rss_limit_mb="$rss_mb" -malloc_limit_mb="$rss_mb" \
        -print_final_stats=1 -close_fd_mask=1 >"logs/$target.log" 2>&1; then
        summary "$target" ok
    else
        summary "$target" FAILED
        tail -n 40 "logs/$target.log" >&2
        return 1
    fi
}

summary() {
    local target=$1 verdict=$2 log="logs/$1.log"
    local execs rss cov ft corpus
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
    ft=$(grep -o 'ft: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
    corpus=$(grep -o 'corp: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
    printf '%-24s %-6s %6ss  execs %-10s cov %-6s ft %-6s corpus %-6s peak RSS %s MB\n' \
        "$target" "$verdict" "$seconds" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corpus:-?}" "${rss:-?}"
}

failed=0
pids=()
for target in "${targets[@]}"; do
    run_one "$target" &
    pids+=($!)
    if [ ${#pids[@]} -ge "$jobs" ]; then
        wait "${pids[0]}" || failed=1
        pids=("${pids[@]:1}")
    fi
done
for pid in "${pids[@]}"; do
    wait "$pid" || failed=1
done
exit $failed
