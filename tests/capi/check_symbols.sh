#!/bin/sh
# check_symbols.sh HEADER LIB: the functions LIB exports are exactly those
# HEADER declares (the ABI contract, nothing internal leaking out).
set -eu
header=$1 lib=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
grep -o '^int react_[a-z_0-9]*(' "$header" | sed 's/^int //; s/($//' | sort >"$tmp/declared"
nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | sort >"$tmp/exported"
if ! diff -u "$tmp/declared" "$tmp/exported" >"$tmp/diff"; then
	echo "check_symbols: $lib does not export exactly the functions of $header (- declared only, + exported only):"
	cat "$tmp/diff"
	exit 1
fi
echo "check_symbols: $lib exports the $(wc -l <"$tmp/declared") functions of $header, nothing else"
