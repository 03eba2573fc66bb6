#!/bin/bash
# The README's first command timed from a fresh clone to the first answered review (issue 21:
# under 60 s on an idle 2-core machine). Figures: bench/RESULTS.md "First start".
#
#   bash bench/first_start.sh [REPO] [DIR] [PORT] [pip options...]
#
# REPO defaults to this checkout, DIR to a new temporary folder (removed first if given),
# PORT to 18443. Runs `python3 -m venv .venv && .venv/bin/pip install .`, starts
# `draguard serve --port PORT` and polls with the `curl` line it prints until a review is
# answered; prints the time of each step.
set -u
repo=${1:-$(cd "$(dirname "$0")/.." && pwd)}
dir=${2:-$(mktemp -d)/draguard}
port=${3:-18443}
shift $(( $# < 3 ? $# : 3 ))
rm -rf "$dir"
t0=$(date +%s.%N)
git clone -q "$repo" "$dir" && cd "$dir" || exit 1
t_clone=$(date +%s.%N)
python3 -m venv .venv && .venv/bin/pip install -q "$@" . > install.log 2>&1
rc=$?
t_install=$(date +%s.%N)
[ $rc = 0 ] || { echo "install failed:"; tail install.log; exit 1; }
.venv/bin/draguard serve --port "$port" > serve.log 2>&1 &
pid=$!
out=""
for _ in $(seq 1 1200); do
  if [ -f draguard-state/ca.crt ]; then
    line=$(grep -m1 '^try: curl' serve.log | sed 's/^try: //')
    if [ -n "$line" ] && out=$(eval "$line -s --max-time 2" 2>/dev/null) \
        && echo "$out" | grep -q '"allowed"'; then
      break
    fi
  fi
  sleep 0.05
done
t_review=$(date +%s.%N)
kill "$pid"; wait "$pid" 2>/dev/null
echo "$out" | grep -q '"allowed"' || { echo "no review answered:"; tail serve.log; exit 1; }
python3 - "$t0" "$t_clone" "$t_install" "$t_review" <<'PY'
import sys
t0, clone, install, review = map(float, sys.argv[1:])
print(f"clone {clone - t0:.1f} s, venv + pip install {install - clone:.1f} s, "
      f"serve to first review {review - install:.1f} s, total {review - t0:.1f} s")
PY
