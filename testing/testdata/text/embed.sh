#!/bin/sh
# Writes a C++ source defining `symbol` as the bytes of `input`.
# Usage: embed.sh OUTPUT NAMESPACE SYMBOL INPUT
set -eu
out=$1; ns=$2; sym=$3; in=$4
{
  echo "// Generated from $in. Do not edit."
  echo "#include <cstddef>"
  echo "namespace $ns {"
  echo "extern const char ${sym}[];"
  echo "extern const size_t ${sym}Size;"
  printf 'const char %s[] = {' "$sym"
  od -An -v -tu1 "$in" | tr -s ' \n' ',' | sed 's/^,//; s/,$//'
  echo ",0};"
  echo "const size_t ${sym}Size = sizeof(${sym}) - 1;"
  echo "}  // namespace $ns"
} > "$out"
