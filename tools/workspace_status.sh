#!/usr/bin/env bash
# Bazel workspace status: the git commit the build is made from, for
# `zero3 --version`. Used by
#   bazel build -c opt --workspace_status_command=tools/workspace_status.sh //tools:zero3
# Without it (or outside a git checkout) --version omits the commit.
commit="$(git rev-parse --short=12 HEAD 2>/dev/null)" || exit 0
if ! git diff --quiet HEAD 2>/dev/null; then commit="${commit}-dirty"; fi
echo "STABLE_GIT_COMMIT ${commit}"
