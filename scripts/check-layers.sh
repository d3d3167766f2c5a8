#!/usr/bin/env bash
# check-layers.sh [--links FILE] [ROOT] -- the layering of src/ and include/, checked on the
# sources. One line per violation, as file:line, then exit 1; exit 0 when there is none.
# ROOT defaults to this checkout.
#
#   - A file includes only headers of its own layer and of the layers its layer uses (the
#     table below). Anything else is an upward include (a layer that uses this one), an
#     include of a layer reached only through another (to be linked directly), or a sideways
#     one (provider/rdma <-> provider/sim, qp <-> ece, engine -> provider/sim, ...).
#   - Every layer a layer uses is included by at least one of its files (no dead link).
#   - A folder of src/ outside the table is an error, and so is a "quoted" include that names
#     no header of src/ or include/.
#   - --links FILE (written by src/CMakeLists.txt: build/layers/links.txt, one line per layer
#     target: "<folder> <folder it links>...") must say what the table says, so the table is
#     the CMake link graph and not a copy that can drift from it.
set -euo pipefail

LINKS=
if [[ ${1:-} == --links ]]; then
  LINKS=$2
  shift 2
fi
ROOT=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
[[ -d $ROOT/src ]] || { echo "check-layers: no src/ under $ROOT" >&2; exit 2; }

# The layers, bottom up, and what each uses directly. "api" is include/wireup, the public
# headers: they include nothing of src/.
# layer           uses
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
api
host             topo config provider common
capi             wireup host provider provider/rdma config common api
testsupport      wireup capi provider/sim common
fault            provider common
bootstrap
'

declare -A USES=()
LAYERS=()
while read -r layer deps; do
  [[ -n $layer ]] || continue
  LAYERS+=("$layer")
  USES[$layer]=" $deps "
done <<<"$LAYER_TABLE"

# REACH[l]: l and every layer below it through the table.
declare -A REACH=()
for layer in "${LAYERS[@]}"; do
  seen=" $layer "
  todo=(${USES[$layer]})
  while ((${#todo[@]})); do
    l=${todo[0]}
    todo=("${todo[@]:1}")
    [[ $seen == *" $l "* ]] && continue
    seen+="$l "
    todo+=(${USES[$l]})
  done
  REACH[$layer]=$seen
done

# The layer of a folder under src/: itself or the nearest enclosing folder in the table, in
# LAYER ("" when none). A variable rather than $(...): the check runs it once per include, and
# a subshell each time made the whole check take half a minute.
layer_of_dir() {
  local d=$1
  LAYER=
  while [[ -n $d && $d != . ]]; do
    [[ -n ${USES[$d]+set} ]] && { LAYER=$d; return; }
    [[ $d == */* ]] && d=${d%/*} || d=
  done
}
# The folder part of a relative path ("." for a bare file name), as dirname without a fork.
dir_of() { [[ $1 == */* ]] && DIR=${1%/*} || DIR=.; }

status=0
report() {
  echo "$1"
  status=1
}

declare -A INCLUDED=()   # "from to" -> 1 once some file of layer from includes layer to
declare -A FIRST_FILE=() # a file of each layer, to name the layer in a report
declare -A FILE_LAYER=() # file (relative) -> its layer, for the files the table places
INCLUDE_RE='^[[:space:]]*#[[:space:]]*include[[:space:]]*(["<])([^">]+)[">]'
checked=0
files=()
while IFS= read -r -d '' file; do
  rel=${file#"$ROOT"/}
  if [[ $rel == include/* ]]; then
    from=api
  else
    dir_of "${rel#src/}"
    layer_of_dir "$DIR"
    from=$LAYER
    if [[ -z $from ]]; then
      dir_of "$rel"
      report "$rel:1: error: folder $DIR is not in the layer table of scripts/check-layers.sh"
      continue
    fi
  fi
  : "${FIRST_FILE[$from]:=$rel}"
  FILE_LAYER[$rel]=$from
  files+=("$rel")
  checked=$((checked + 1))
done < <(find "$ROOT/src" "$ROOT/include" -type f \( -name '*.h' -o -name '*.hpp' -o -name '*.cc' -o -name '*.c' \) -print0 | sort -z)

# Every include line of those files, from one grep ("file:line:text", files in sorted order).
while IFS= read -r hit; do
  rel=${hit%%:*}
  rest=${hit#*:}
  line=${rest%%:*}
  text=${rest#*:}
  from=${FILE_LAYER[$rel]}
  [[ $text =~ $INCLUDE_RE ]] || continue
  kind=${BASH_REMATCH[1]}
  inc=${BASH_REMATCH[2]}
  if [[ -f $ROOT/src/$inc ]]; then
    dir_of "$inc"
    layer_of_dir "$DIR"
    to=$LAYER
    if [[ -z $to ]]; then
      report "$rel:$line: error: \"$inc\" is in src/$DIR, which is not in the layer table"
      continue
    fi
  elif [[ -f $ROOT/include/$inc || -f $ROOT/cmake/${inc##*/}.in && $inc == wireup/* ]]; then
    # include/wireup, or a public header CMake generates from cmake/<name>.in (wireup_version.h)
    to=api
  elif [[ $kind == '"' ]]; then
    report "$rel:$line: error: \"$inc\" names no header of src/ or include/"
    continue
  else
    continue  # <system header>
  fi
  INCLUDED["$from $to"]=1
  [[ $to == "$from" || ${USES[$from]} == *" $to "* ]] && continue
  if [[ ${REACH[$to]} == *" $from "* ]]; then
    why="upward include: layer $from is below $to"
  elif [[ ${REACH[$from]} == *" $to "* ]]; then
    why="layer $from reaches $to only through another layer; add it to what $from uses"
  else
    why="sideways include: layer $from does not use $to"
  fi
  uses=${USES[$from]// /}
  report "$rel:$line: error: \"$inc\" (layer $to): $why (uses:${uses:+${USES[$from]% }}${uses:- nothing})"
done < <(((${#files[@]})) && cd "$ROOT" && grep -n -H -E '^[[:space:]]*#[[:space:]]*include' -- "${files[@]}" || true)

# No dead entry in the table: each layer it says a layer uses is included by one of its files.
for layer in "${LAYERS[@]}"; do
  [[ -n ${FIRST_FILE[$layer]:-} ]] || continue  # layer absent from this tree
  for dep in ${USES[$layer]}; do
    [[ -n ${INCLUDED["$layer $dep"]:-} ]] ||
      report "${FIRST_FILE[$layer]}:1: error: layer $layer uses $dep in the table, but none of its files includes a header of $dep"
  done
done

# Consumers: transports/ (the Open MPI BTL) and examples/ link libwireup.a as an outside
# transport would, so they include the public headers (<wireup/...>) and nothing of src/.
consumers=0
while IFS= read -r hit; do
  rel=${hit#"$ROOT"/}
  rel=${rel%%:*}
  rest=${hit#*:}
  line=${rest%%:*}
  text=${rest#*:}
  [[ $text =~ $INCLUDE_RE ]] || continue
  inc=${BASH_REMATCH[2]}
  if [[ -f $ROOT/src/$inc ]]; then
    report "$rel:$line: error: \"$inc\" is inside the library (src/): a consumer uses only include/wireup"
  elif [[ $inc == wireup/* && ! -f $ROOT/include/$inc && ! -f $ROOT/cmake/${inc##*/}.in ]]; then
    report "$rel:$line: error: <$inc> is no public header (include/wireup)"
  fi
done < <(for d in transports examples; do
           [[ -d $ROOT/$d ]] && grep -rn -H -E '^[[:space:]]*#[[:space:]]*include' --include='*.c' --include='*.h' --include='*.cc' --include='*.hpp' "$ROOT/$d"
         done || true)
consumers=$(for d in transports examples; do [[ -d $ROOT/$d ]] && find "$ROOT/$d" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.hpp' \); done | wc -l)

# The CMake link graph says the same as the table.
if [[ -n $LINKS ]]; then
  [[ -f $LINKS ]] || { echo "check-layers: no links file $LINKS" >&2; exit 2; }
  declare -A LINKED=() UNBUILT=()
  while read -r layer deps; do
    [[ -n $layer ]] || continue
    # "!unbuilt <folder>": an optional layer this build left out (its dependency is absent).
    if [[ $layer == '!unbuilt' ]]; then
      UNBUILT[$deps]=1
      continue
    fi
    LINKED[$layer]=$(tr ' ' '\n' <<<"$deps" | sed '/^$/d' | sort | tr '\n' ' ')
  done <"$LINKS"
  for layer in "${LAYERS[@]}"; do
    want=$(tr ' ' '\n' <<<"${USES[$layer]}" | sed '/^$/d' | sort | tr '\n' ' ')
    if [[ -z ${LINKED[$layer]+set} && -n ${UNBUILT[$layer]+set} ]]; then
      continue
    elif [[ -z ${LINKED[$layer]+set} ]]; then
      report "$LINKS:1: error: layer $layer of the table has no target in the build"
    elif [[ ${LINKED[$layer]} != "$want" ]]; then
      report "$LINKS:1: error: layer $layer links [${LINKED[$layer]% }] in CMake, the table says [${want% }]"
    fi
  done
  for layer in "${!LINKED[@]}"; do
    [[ -n ${USES[$layer]+set} ]] || report "$LINKS:1: error: target of folder $layer is not in the layer table"
  done
fi

if ((status == 0)); then
  echo "check-layers: $checked files, ${#LAYERS[@]} layers${LINKS:+, CMake links as the table}: every include within its layer's uses; $consumers consumer files (transports/, examples/) on the public headers only"
fi
exit $status
