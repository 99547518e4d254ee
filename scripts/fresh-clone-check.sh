#!/usr/bin/env bash
# A new user's first hour, checked end to end: a fresh clone in a folder only its owner can enter (mktemp -d, 0700),
# `npm ci && npm start && npm run test:quick` (the whole suite runs in CI's test job), with npm's output checked for
# install-script warnings and the temporary folder checked for leftovers of the tests.
#
#   scripts/fresh-clone-check.sh [REPO] [REF]          install scripts as package.json approves them
#   NO_SCRIPTS=1 scripts/fresh-clone-check.sh ...      npm ci --ignore-scripts: npm start must fail in one line that
#                                                      names the fix; the fix is run, then npm start and the tests
#
# REPO defaults to this checkout, REF to its HEAD. Run it as root too (CI does): that is the case it exists for.
set -euo pipefail

repo="${1:-$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)}"
ref="${2:-$(git -C "$repo" rev-parse HEAD)}"
base="$(mktemp -d)"
trap 'rm -rf "$base"' EXIT
chmod 700 "$base"
# The check's own system temporary folder, so that what the tests leave in it can be seen.
export TMPDIR="$base/tmp"
mkdir -m 1777 "$TMPDIR"
step() { printf '\n== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }

step "clone $ref into $base/hub-export (mode $(stat -c %a "$base"), user $(id -un))"
git clone -q "$repo" "$base/hub-export"
cd "$base/hub-export"
git checkout -q "$ref"

if [ "${NO_SCRIPTS:-}" = 1 ]; then
  step "npm ci --ignore-scripts"
  npm ci --ignore-scripts --no-audit --no-fund 2>&1 | tee "$base/npm-ci.log"
  step "npm start without the install script: one line naming the fix, exit 1"
  set +e
  npm start --silent >"$base/start.out" 2>"$base/start.err"
  code=$?
  set -e
  cat "$base/start.err"
  fix="$(grep -o "run 'npm rebuild [^']*'" "$base/start.err" | sed "s/^run '//; s/'\$//")"
  if [ "$code" != 1 ] || [ -z "$fix" ] || grep -q "internal error" "$base/start.err"; then
    echo "FAIL: expected exit 1 with the npm rebuild fix, got exit $code" >&2
    exit 1
  fi
  step "the fix: $fix"
  $fix
else
  step "npm ci"
  npm ci --no-audit --no-fund 2>&1 | tee "$base/npm-ci.log"
  if grep -qi "install script" "$base/npm-ci.log"; then
    echo "FAIL: npm ci warned about install scripts" >&2
    exit 1
  fi
fi

step "npm start"
npm start
before="$(ls -A "$TMPDIR" | sort)"
step "npm run test:quick"
npm run test:quick
after="$(ls -A "$TMPDIR" | sort)"
if [ "$before" != "$after" ]; then
  echo "FAIL: the tests left files in the temporary folder:" >&2
  diff <(echo "$before") <(echo "$after") >&2 || true
  exit 1
fi
step "ok: fresh clone under a 0700 folder passed npm ci, npm start and the quick tier; nothing left in the temporary folder"
