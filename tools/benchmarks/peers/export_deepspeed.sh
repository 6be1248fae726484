#!/usr/bin/env bash
# Exports DeepSpeed source trees, one per commit, as the peer benchmarks import
# them: OUTDIR/NAME.tar.xz holding NAME/deepspeed (laid out as `pip install
# deepspeed` lays it out in site-packages), NAME/version.txt and NAME/DS_COMMIT.
#
#   MIRROR=/path/to/DeepSpeed.git tools/benchmarks/peers/export_deepspeed.sh \
#       OUTDIR NAME=COMMIT [NAME=COMMIT ...]
#
# In DeepSpeed's repository deepspeed/accelerator, deepspeed/ops/op_builder and
# deepspeed/ops/csrc are symbolic links to top-level folders; here they become
# real copies and the top-level folders are left out (with them on sys.path
# DeepSpeed takes its "local install" path and loads a second accelerator).
# A generated deepspeed/git_version_info_installed.py declares every op not
# installed, so each op (CPUAdam here) is built just in time with ninja.
# Runs where git is; the GPU machine only unpacks the archives.
set -euo pipefail
MIRROR=${MIRROR:?set MIRROR to a git directory of github.com/deepspeedai/DeepSpeed}
OUTDIR=${1:?usage: export_deepspeed.sh OUTDIR NAME=COMMIT ...}
shift
[ $# -gt 0 ] || { echo "export_deepspeed.sh: name at least one NAME=COMMIT" >&2; exit 2; }
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)

# op names as DeepSpeed's ALL_OPS keys them, as a Python dict literal of False
op_dict() {
  grep -h -E '^\s+NAME = ' "$1"/deepspeed/ops/op_builder/*.py |
    sed -E "s/.*NAME = [\"']([^\"']+)[\"'].*/\1/" | sort -u |
    awk 'BEGIN{printf "{"} {printf "%s'"'"'%s'"'"': False", (NR>1?", ":""), $0} END{printf "}"}'
}

export_one() {  # NAME COMMIT
  local name=$1 commit=$2 work dst
  work=$(mktemp -d)
  dst=$work/$name
  mkdir -p "$work/src" "$dst"
  git -C "$MIRROR" archive "$commit" deepspeed op_builder csrc accelerator version.txt |
    tar -x -C "$work/src"
  local link
  for link in deepspeed/accelerator deepspeed/ops/op_builder deepspeed/ops/csrc; do
    if [ ! -L "$work/src/$link" ]; then
      echo "export_deepspeed.sh: $link at $commit is not a symbolic link; the layout changed" >&2
      exit 1
    fi
    rm "$work/src/$link"
  done
  cp -a "$work/src/accelerator" "$work/src/deepspeed/accelerator"
  cp -a "$work/src/op_builder" "$work/src/deepspeed/ops/op_builder"
  cp -a "$work/src/csrc" "$work/src/deepspeed/ops/csrc"
  mv "$work/src/deepspeed" "$dst/deepspeed"
  cp "$work/src/version.txt" "$dst/version.txt"
  find "$dst" \( -name '*.md' -o -name '.gitignore' \) -delete

  local full short subject version
  full=$(git -C "$MIRROR" rev-parse "$commit^{commit}")
  short=${full:0:9}
  subject=$(git -C "$MIRROR" log -1 --format=%s "$full")
  version=$(cat "$dst/version.txt")
  cat > "$dst/deepspeed/git_version_info_installed.py" <<PY
version='${version}+${short}'
git_hash='${short}'
git_branch='master'
installed_ops=$(op_dict "$dst")
accelerator_name='cuda'
torch_info={'version': '2.11', 'bf16_support': True, 'cuda_version': '13.0', 'nccl_version': '2.28', 'hip_version': '0.0'}
PY
  printf '%s %s\n%s\n' "$name" "$full" "$subject" > "$dst/DS_COMMIT"
  tar -C "$work" --owner=0 --group=0 --sort=name -cf - "$name" | xz -9e -T2 > "$OUTDIR/$name.tar.xz"
  echo "$name: $full $subject ($(du -sh "$dst" | cut -f1) unpacked," \
       "$(du -h "$OUTDIR/$name.tar.xz" | cut -f1) as $OUTDIR/$name.tar.xz)"
  rm -rf "$work"
}

for spec in "$@"; do
  case $spec in
    *=*) export_one "${spec%%=*}" "${spec#*=}" ;;
    *) echo "export_deepspeed.sh: '$spec' is not NAME=COMMIT" >&2; exit 2 ;;
  esac
done
