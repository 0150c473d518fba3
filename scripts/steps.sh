# Step runner for scripts/setup.sh (sourced). A step is a function `step_NAME`:
#   run NAME "what it does"     runs it now and waits
#   start NAME "what it does"   runs it in the background (output to a log shown on failure)
#   wait_started                waits for every started step
#   only_step NAME              runs one step (scripts/setup.sh --only NAME)
#   summary                     prints each step's time
# Every step runs in a subshell with `set -e`; one that fails is named with its exit status
# and the command that retries it, the background steps are stopped, and setup exits 1.

SETUP_START=$EPOCHREALTIME
SETUP_LOGS=$(mktemp -d -t autocomp-setup.XXXXXX)
declare -A STARTED=()     # name -> pid of a background step
declare -A STARTED_AT=()  # name -> start time
STEP_TIMES=()             # "name seconds" per finished step

_between() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
_since() { _between "$1" "$EPOCHREALTIME"; }
say() { printf '[setup %6ss] %s\n' "$(_since "$SETUP_START")" "$*"; }

_finished() {  # _finished NAME STARTED_AT STATUS [LOG]
  local seconds
  seconds=$(_since "$2")
  if [ -f "${4:-}.end" ]; then seconds=$(_between "$2" "$(cat "$4.end")"); fi
  if [ "$3" -eq 0 ]; then
    STEP_TIMES+=("$1 $seconds")
    say "done: $1 (${seconds} s)"
    return
  fi
  if [ -n "${4:-}" ]; then tail -n 40 "$4" | sed 's/^/    | /'; fi
  say "FAILED: step '$1' exited with status $3 after ${seconds} s${4:+ (log: $4)}"
  say "retry it with: scripts/setup.sh --only $1   (then run scripts/setup.sh again)"
  stop_started
  exit 1
}

run() {
  local name=$1 t0=$EPOCHREALTIME status
  say "$name: $2"
  set +e
  (set -e; "step_$name")
  status=$?
  set -e
  _finished "$name" "$t0" "$status"
}

start() {
  local name=$1
  say "$name: $2 (in the background, log: $SETUP_LOGS/$name.log)"
  STARTED_AT[$name]=$EPOCHREALTIME
  set -m  # its own process group, so that stopping it stops its compilers too
  (set +e; (set -e; "step_$name") >"$SETUP_LOGS/$name.log" 2>&1
   status=$?; echo "$EPOCHREALTIME" >"$SETUP_LOGS/$name.log.end"; exit $status) &
  STARTED[$name]=$!
  set +m
}

wait_started() {
  local name status
  for name in "${!STARTED[@]}"; do
    set +e
    wait "${STARTED[$name]}"
    status=$?
    set -e
    unset "STARTED[$name]"
    if [ "$status" -eq 0 ]; then sed 's/^/    | /' "$SETUP_LOGS/$name.log"; fi
    _finished "$name" "${STARTED_AT[$name]}" "$status" "$SETUP_LOGS/$name.log"
  done
}

stop_started() {
  local name
  for name in "${!STARTED[@]}"; do
    [ -f "$SETUP_LOGS/$name.log.end" ] && continue  # it had finished
    kill -TERM -- "-${STARTED[$name]}" 2>/dev/null || true
    say "stopped: $name"
  done
  STARTED=()
}
trap 'stop_started; exit 130' INT TERM

only_step() {
  if ! declare -F "step_$1" >/dev/null; then
    echo "unknown step '$1'; the steps are: $(declare -F | awk '$3 ~ /^step_/ { sub(/^step_/, "", $3); printf "%s ", $3 }')" >&2
    exit 2
  fi
  run "$1" "(--only)"
}

summary() {
  local line
  say "finished; time per step:"
  for line in "${STEP_TIMES[@]}"; do
    printf '    %-14s %8s s\n' ${line}
  done
  rm -rf "$SETUP_LOGS"
}
