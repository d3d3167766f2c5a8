#!/usr/bin/env bash
# check-layers.sh [ROOT] -- fails when a file of src/ or include/ includes a header of a layer
# it does not use: a higher layer, a sibling (provider/rdma <-> provider/sim, qp <-> ece), or
# a folder missing from the table. Prints one line per offending include, as file:line, and
# exits 1; exits 0 when every include is allowed. ROOT defaults to this checkout.
#
# The table is the layering of README "Layout" and src/CMakeLists.txt: each layer and the
# layers it uses directly (the CMake links of its target). A layer may include its own headers
# and those of every layer it reaches through the table (what its target sees through PUBLIC
# links). "api" is include/wireup, the public headers, which include nothing of src/.
set -euo pipefail

ROOT=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
[[ -d $ROOT/src ]] || { echo "check-layers: no src/ under $ROOT" >&2; exit 2; }

# layer           uses (directly)
LAYER_TABLE='
common
provider         common
provider/rdma    provider common
provider/sim     provider common
qp               provider common
ece              provider common
config           common
topo             common
cm               qp ece provider common
wireup           cm qp ece config provider common
capi             wireup provider/rdma config topo common api
testsupport      wireup provider/sim common
api
'

declare -A USES=()
LAYERS=()
while read -r layer deps; do
  [[ -n $layer ]] || continue
  LAYERS+=("$layer")
  USES[$layer]=$deps
done <<<"$LAYER_TABLE"

# The layers a layer may include: itself and the closure of its uses.
declare -A REACH=()
reach() {
  local layer=$1 seen=" $1 " todo=(${USES[$1]}) l
  while ((${#todo[@]})); do
    l=${todo[0]}
    todo=("${todo[@]:1}")
    [[ $seen == *" $l "* ]] && continue
    seen+="$l "
    todo+=(${USES[$l]})
  done
  REACH[$layer]=$seen
}
for l in "${LAYERS[@]}"; do reach "$l"; done

# The layer a path under src/ belongs to: its folder, or the nearest enclosing folder that is a
# layer. Prints nothing for a folder outside the table.
layer_of_dir() {
  local d=$1
  while [[ -n $d && $d != . ]]; do
    [[ -n ${USES[$d]+set} ]] && { echo "$d"; return; }
    d=$(dirname "$d")
  done
}

status=0
report() {
  echo "$1"
  status=1
}

INCLUDE_RE='^[[:space:]]*#[[:space:]]*include[[:space:]]*(["<])([^">]+)[">]'
checked=0
while IFS= read -r -d '' file; do
  rel=${file#"$ROOT"/}
  if [[ $rel == include/* ]]; then
    from=api
  else
    from=$(layer_of_dir "$(dirname "${rel#src/}")")
    if [[ -z $from ]]; then
      report "$rel:1: error: folder $(dirname "$rel") is not in the layer table of scripts/check-layers.sh"
      continue
    fi
  fi
  checked=$((checked + 1))
  # #include "x" and #include <x>, with the line number.
  while IFS=: read -r line text; do
    [[ $text =~ $INCLUDE_RE ]] || continue
    kind=${BASH_REMATCH[1]}
    inc=${BASH_REMATCH[2]}
    if [[ -f $ROOT/src/$inc ]]; then
      to=$(layer_of_dir "$(dirname "$inc")")
      [[ -n $to ]] || to="src/$(dirname "$inc") (not in the table)"
    elif [[ -f $ROOT/include/$inc ]]; then
      to=api
    elif [[ $kind == '"' ]]; then
      report "$rel:$line: error: \"$inc\" names no header of src/ or include/"
      continue
    else
      continue  # <system header>
    fi
    if [[ ${REACH[$from]} != *" $to "* ]]; then
      report "$rel:$line: error: layer $from includes \"$inc\" of layer $to; $from may include only:${REACH[$from]}"
    fi
  done < <(grep -n -E '^[[:space:]]*#[[:space:]]*include' "$file" || true)
done < <(find "$ROOT/src" "$ROOT/include" -type f \( -name '*.h' -o -name '*.hpp' -o -name '*.cc' -o -name '*.c' \) -print0 | sort -z)

if ((status == 0)); then
  echo "check-layers: $checked files, every include within its layer's reach"
fi
exit $status
