# Sourced by scripts/setup.sh (not run on its own): its step lines, each with the time since the start.
#   say TEXT      "setup [ m:ss] TEXT"
#   step TEXT     "setup [ m:ss] TEXT...", then "setup [ m:ss]   still TEXT (m:ss in this step)" every SETUP_TICK_S
#                 seconds (30) while the step runs, so a long pip install or compile is never silent
#   step_done     stops the ticker: "setup [ m:ss] ... done (m:ss)"
#   stop_ticker   stops it without a line (the caller's EXIT trap: a step that fails leaves no ticker behind)
START=$SECONDS
STEP_START=$SECONDS
TICKER_PID=""
mmss() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }
say() { printf 'setup [%5s] %s\n' "$(mmss $((SECONDS - START)))" "$*"; }

stop_ticker() {
    [ -n "$TICKER_PID" ] || return 0
    kill "$TICKER_PID" 2>/dev/null || true
    wait "$TICKER_PID" 2>/dev/null || true
    TICKER_PID=""
}

step() {
    stop_ticker
    STEP_START=$SECONDS
    say "$*..."
    local label="$*"
    (
        nap=""
        trap 'kill $(jobs -p) 2>/dev/null; exit 0' TERM  # every nap, one started but not yet in $nap too
        while :; do
            sleep "${SETUP_TICK_S:-30}" &
            nap=$!
            wait "$nap" || true
            say "  still $label ($(mmss $((SECONDS - STEP_START))))"
        done
    ) &
    TICKER_PID=$!
}

step_done() {
    stop_ticker
    say "... done ($(mmss $((SECONDS - STEP_START))))"
}
