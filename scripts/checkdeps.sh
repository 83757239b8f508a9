#!/usr/bin/env bash
# checkdeps.sh: enforce lowband's package rules (docs/architecture.md, "Who may import whom").
#   - training, verify, incentives, node/core and node/checkpoint are pure: no networking, no os, os/exec or syscall, no
#     filesystem, no clock (time.Now and friends), no entropy source (crypto/rand; seeded generators come in), and none of p2p,
#     node, configs, bench or cmd (node/core may import the other pure packages and itself);
#   - p2p moves bytes: it imports none of training, verify, incentives, node, configs;
#   - configs and version import none of lowband's packages; nothing but cmd imports node or cmd.
# Only non-test files count: tests may read files and use the clock.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=$(go list -m)
fail=0
bad() { echo "checkdeps: $*" >&2; fail=1; }

while read -r pkg imports; do
  rel=${pkg#"$mod"}; rel=${rel#/}
  for imp in $imports; do
    ours=""; [[ $imp == "$mod"/* ]] && ours=${imp#"$mod"/}
    case $rel in
      training|training/*|verify|verify/*|incentives|incentives/*|node/core|node/core/*|node/checkpoint)
        case $imp in
          net|net/*|os|os/*|syscall|io/ioutil|path/filepath|crypto/rand)
            bad "$rel imports $imp: pure packages take I/O, time and randomness as arguments" ;;
        esac
        case $ours in
          node/core|node/core/*) [[ $rel == node/core* ]] || bad "$rel imports $ours" ;;
          p2p*|node*|configs*|bench*|cmd*) bad "$rel imports $ours: pure packages import no wiring" ;;
          training*) [[ $rel == training* || $rel == node/core* || $rel == node/checkpoint ]] || bad "$rel imports $ours" ;;
          incentives*) [[ $rel == incentives* || $rel == node/core* || $rel == node/checkpoint ]] || bad "$rel imports $ours" ;;
        esac ;;
      p2p|p2p/*)
        case $ours in
          training*|verify*|incentives*|node*|configs*|bench*|cmd*) bad "$rel imports $ours: p2p moves bytes only" ;;
        esac ;;
      configs|configs/*|version)
        [[ -n $ours ]] && bad "$rel imports $ours: $rel is a leaf" ;;
    esac
    case $ours in
      node|node/*) [[ $rel == cmd/* || $rel == node* || $rel == bench* ]] || bad "$rel imports $ours: only cmd may use node" ;;
      cmd/*) bad "$rel imports $ours" ;;
    esac
  done
done < <(go list -f '{{.ImportPath}} {{join .Imports " "}}' ./...)

# The clock: pure packages take time as an argument. (time.Time and time.Duration are fine.)
clock='time\.(Now|Since|Until|Sleep|After|AfterFunc|Tick|NewTimer|NewTicker)\('
if hits=$(grep -rEn --include='*.go' --exclude='*_test.go' "$clock" training verify incentives node/core node/checkpoint 2>/dev/null); then
  bad "pure packages read the clock:"$'\n'"$hits"
fi

[[ $fail == 0 ]] && echo "checkdeps: package rules hold"
exit $fail
