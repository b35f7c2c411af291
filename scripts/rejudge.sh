#!/usr/bin/env bash
# Re-judge a run folder with the claims of another commit (e.g. before a change of the rules):
#   scripts/rejudge.sh results/<exp>/<run-id> <commit>
# The run is copied (never touched), analysed in a temporary worktree of <commit> with this
# checkout's virtualenv, and its verdict lines printed; the worktree and copy are removed.
set -euo pipefail
run=$(realpath "${1:?usage: scripts/rejudge.sh RUN_DIR COMMIT}")
commit=${2:?usage: scripts/rejudge.sh RUN_DIR COMMIT}
repo=$(cd "$(dirname "$0")/.." && pwd)
[[ -f $run/meta.json ]] || { echo "rejudge: $run has no meta.json (hint: a results/<exp>/<run-id> folder)" >&2; exit 2; }
git -C "$repo" rev-parse --verify -q "$commit^{commit}" > /dev/null \
  || { echo "rejudge: no commit $commit here (hint: git log --oneline)" >&2; exit 2; }
work=$(mktemp -d /tmp/rejudge.XXXXXX)
trap 'git -C "$repo" worktree remove --force "$work/tree" > /dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$repo" worktree add --detach "$work/tree" "$commit" > /dev/null 2>&1
copy=$work/results/$(basename "$(dirname "$run")")/$(basename "$run")
mkdir -p "$(dirname "$copy")" && cp -a "$run" "$copy" && rm -rf "$copy/report" "$copy/summary.json"
(cd "$work/tree" && DNSLAB_RESULTS=$work/results "$repo/.venv/bin/python" -m analysis run "$copy" \
  > "$work/analysis.log" 2>&1) || true
[[ -f $copy/summary.json ]] || { tail -5 "$work/analysis.log" >&2; exit 1; }
"$repo/.venv/bin/python" - "$copy/summary.json" "$commit" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
print(f"verdicts of {summary['experiment']}/{summary['run_id']} with the claims of {sys.argv[2]}:")
for v in summary["verdicts"]:
    print(f"  {v['claim_id']:<32} {v['status']:<15} {v['line']}")
PY
