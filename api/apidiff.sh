#!/usr/bin/env bash
# apidiff.sh [--write]: the public packages' API (PUBLIC below) against the recorded baseline,
# api/baseline (a commit of this repository), with golang.org/x/exp/cmd/apidiff built into the
# cache on first use. An incompatible change fails until the baseline is moved deliberately:
# `make api-baseline` records HEAD (docs/library.md, "Stability"). A clone without the baseline
# commit (shallow) skips the comparison and says so.
set -euo pipefail
cd "$(dirname "$0")/.."
PUBLIC="stuck stuck/facts stuck/controller stuck/read resolver openshift api/v1"
MODULE=github.com/stsdiag/stsdiag
VERSION=${APIDIFF_VERSION:-v0.0.0-20261113113407-e3970619a1a4}
CACHE=${STSDIAG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stsdiag}
BIN=$CACHE/bin/apidiff-$VERSION
if [ "${1:-}" = --write ]; then
	git rev-parse HEAD > api/baseline
	echo "api/baseline: $(cat api/baseline)"
	exit 0
fi
[ -x "$BIN/apidiff" ] || GOBIN=$BIN go install "golang.org/x/exp/cmd/apidiff@$VERSION"
base=$(cat api/baseline)
if ! git cat-file -e "$base^{commit}" 2>/dev/null; then
	echo "apidiff: baseline commit $base is not in this clone: comparison skipped"
	exit 0
fi
# The baseline's export data, written once per baseline commit.
exports=$CACHE/apidiff/$base
if [ ! -f "$exports/done" ]; then
	src=$(mktemp -d)
	trap 'rm -rf "$src"' EXIT
	git archive "$base" | tar -x -C "$src"
	mkdir -p "$exports"
	for p in $PUBLIC; do
		if [ -d "$src/$p" ]; then
			(cd "$src" && "$BIN/apidiff" -w "$exports/${p//\//_}.export" "$MODULE/$p")
		fi
	done
	touch "$exports/done"
fi
failed=0
for p in $PUBLIC; do
	old=$exports/${p//\//_}.export
	[ -f "$old" ] || { echo "apidiff: $p is new since the baseline"; continue; }
	out=$("$BIN/apidiff" -incompatible "$old" "$MODULE/$p")
	if [ -n "$out" ]; then
		echo "apidiff: incompatible changes to $MODULE/$p since ${base:0:12}:"
		echo "$out" | sed 's/^/  /'
		failed=1
	fi
done
if [ "$failed" = 1 ]; then
	echo "apidiff: the public API changed incompatibly; if on purpose, record it (make api-baseline) and say so in docs/library.md"
	exit 1
fi
echo "apidiff: public API compatible with ${base:0:12}"
