#!/usr/bin/env bash
# Installs the Debian 12 packages that zero3's build and tests need, and the
# Python environment of tools/data/prepare (transformers, tokenizers and
# jinja2 from PyPI at the versions of tools/data/requirements.txt, no torch)
# at $ZERO3_PYENV, default ~/.cache/zero3/pyenv.
#
# Idempotent: installs only what is missing and prints nothing when nothing is
# to do. Runs as root, or through sudo when run by another user. The CUDA
# toolkit is not a Debian package; where /usr/local/cuda exists the CUDA
# backend builds too, and elsewhere it is left out of the build.
set -euo pipefail

PACKAGES=(
  bazel-bootstrap      # Bazel 4.2.3, run offline (see third_party/README.md)
  g++
  libabsl-dev          # Abseil 20220623
  libgtest-dev libgmock-dev
  libbenchmark-dev
  libprotobuf-dev protobuf-compiler
  zlib1g-dev           # protobuf's static archive needs it
  liburing-dev         # io_uring, for the NVMe swapper (core/runtime/swap_file.h)
  gnuplot-nox          # zero3 whatif --plot
  python3 python3-venv # tools/data/prepare's environment
)

# The Python environment, made or completed when its packages do not import.
setup_pyenv() {
  local root env req
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  env="${ZERO3_PYENV:-$HOME/.cache/zero3/pyenv}"
  req="$root/tools/data/requirements.txt"
  if [ -x "$env/bin/python" ] && "$env/bin/python" -c \
      'import transformers, tokenizers, jinja2' >/dev/null 2>&1 &&
      cmp -s "$req" "$env/requirements.txt"; then
    return 0
  fi
  echo "tools/setup.sh: installing tools/data's Python packages into $env" >&2
  mkdir -p "$(dirname "$env")"
  if ! { [ -x "$env/bin/python" ] || python3 -m venv "$env"; } >>/tmp/zero3-setup.log 2>&1 ||
     ! "$env/bin/python" -m pip install -q --disable-pip-version-check \
         -r "$req" >>/tmp/zero3-setup.log 2>&1; then
    echo "tools/setup.sh: making $env failed; see /tmp/zero3-setup.log:" >&2
    tail -20 /tmp/zero3-setup.log >&2
    exit 1
  fi
  cp "$req" "$env/requirements.txt"
}

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  setup_pyenv
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  SUDO=(sudo)
elif command -v sudo >/dev/null 2>&1 && [ -t 0 ]; then
  SUDO=(sudo)
else
  echo "tools/setup.sh: need root to install: ${missing[*]}" >&2
  echo "  run it as root, or as a user who may use sudo," >&2
  echo "  or install those packages with apt-get yourself." >&2
  exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "tools/setup.sh: apt-get not found; zero3 expects Debian 12 (bookworm)." >&2
  echo "  packages needed: ${missing[*]}" >&2
  exit 1
fi

echo "tools/setup.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/tmp/zero3-setup.log 2>&1; then
  # The package lists may be stale or absent on a fresh machine.
  "${SUDO[@]}" apt-get update -qq >>/tmp/zero3-setup.log 2>&1 || true
  if ! "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >>/tmp/zero3-setup.log 2>&1; then
    echo "tools/setup.sh: apt-get install failed; see /tmp/zero3-setup.log:" >&2
    tail -20 /tmp/zero3-setup.log >&2
    exit 1
  fi
fi
setup_pyenv
echo "tools/setup.sh: done" >&2
