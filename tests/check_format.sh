#!/usr/bin/env bash
# Every tracked C file follows .clang-format (see CONTRIBUTING.md).
cd "$(dirname "$0")/.." || exit 1
command -v clang-format >/dev/null || { echo "clang-format not installed: skipped"; exit 77; }
git rev-parse --git-dir >/dev/null 2>&1 || { echo "not a git checkout: skipped"; exit 77; }
files=$(git ls-files '*.c' '*.h')
out=$(echo "$files" | xargs clang-format --dry-run 2>&1 | grep 'warning:' || true)
if [ -n "$out" ]; then
	echo "$out" | head -40
	echo "formatting differs in: $(echo "$out" | cut -d: -f1 | sort -u | tr '\n' ' ')"
	echo "fix with: clang-format -i FILE"
	exit 1
fi
echo "$(echo "$files" | wc -l) files formatted"
