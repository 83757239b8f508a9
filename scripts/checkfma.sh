#!/usr/bin/env bash
# checkfma.sh: the consensus arithmetic (decoding contributions, their content checks,
# aggregation, the outer step) must give the same bits on every architecture. Go may fuse
# x*y + z into one fused multiply-add (one rounding instead of two) on arm64, ppc64(le), s390x,
# riscv64, loong64 and amd64 built with GOAMD64=v3 or later; float64(x*y) + z forces the
# rounding. This script cross-compiles the consensus code for each of those targets and fails
# if any fused instruction appears in it, or if it calls a math function whose result may
# differ between architectures (only exact ones are allowed: Sqrt, Abs, Floor, ...).
# 32-bit arm is not listed: its multiply-accumulate (VMLA) rounds the product first, and it
# fuses only math.FMA, which the math check refuses anyway.
#
# Checked: every function compiled into training/aggregate and training/round, every
# function of training/compress except the sender's own work (encoding: power iteration,
# QR, quantisation (int4 and 2-bit), rank adaptation; its output is bytes that every receiver reads alike),
# and the outer step and flattening of package training. The inner optimiser and the
# models are each node's private work and are not checked.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=$(go list -m)
pkgs=(./training ./training/aggregate ./training/round ./training/compress)
targets=(arm64 ppc64le ppc64 s390x riscv64 loong64 amd64/v3)

# Symbols (without the module prefix) that are checked in package training, and those that
# are not checked in training/compress.
outer='^training\.(\(\*Nesterov\)\.Step|Flatten|Unflatten)$'
sender='^training/compress\.(\(\*Encoder\)\..*|\(\*lowRank\)\..*|newLowRank|mulMQ|mulMtP|transpose|general|quantise|quantise2|quantiseCols|bf16Up|putCode)(\.func[0-9.]*)?$'
fused='^(V?FN?M(ADD|SUB)[0-9]*[SDFP]?[SD]?(CC)?|WFN?M[AS][DS]B|VFN?M[AS]|FN?MUL[AS][DF]|XS[A-Z]*M(ADD|SUB)[AM][DS]P|XV[A-Z]*M(ADD|SUB)[AM][DS]P)$'
exact='^math\.(arch)?([Ss]qrt|[Aa]bs|[Ff]loor|[Cc]eil|[Tt]runc|[Rr]ound|RoundToEven|IsNaN|IsInf|Inf|NaN|Float(32|64)(from)?bits|Nextafter(32)?|Copysign|Signbit|[Mm]ax|[Mm]in)\(SB\)$'

fail=0
for t in "${targets[@]}"; do
  arch=${t%/*} level=""
  [[ $t == */* ]] && level=${t#*/}
  out=$(GOOS=linux GOARCH=$arch GOAMD64=${level:-v1} go build -gcflags=-S "${pkgs[@]}" 2>&1) || {
    echo "checkfma: build for $t failed:" >&2; echo "$out" >&2; exit 1; }
  hits=$(awk -F'\t' -v mod="$mod/" -v root="$PWD/" -v goroot="$(go env GOROOT)/src/" -v outer="$outer" -v sender="$sender" -v fused="$fused" -v exact="$exact" '
    /^# / { pkg = substr($0, 3); sub("^" mod, "", pkg); next }
    / STEXT / {
      fn = $1; sub(" .*", "", fn); sub("^" mod, "", fn)
      on = pkg == "training" ? fn ~ outer : pkg == "training/compress" ? fn !~ sender : 1
      next
    }
    on && NF >= 3 && $2 ~ /^0x/ {
      ins = $3; arg = $4; where = $2; sub(/^[^(]*\(/, "", where); sub(/\)$/, "", where)
      if (index(where, root) == 1) where = substr(where, length(root) + 1)
      if (index(where, goroot) == 1) where = substr(where, length(goroot) + 1)
      if (ins ~ fused) print fn " (" where "): fused multiply-add " ins
      else if (ins == "CALL" && arg ~ /^math\./ && arg !~ exact) print fn " (" where "): calls " arg
      else if (ins == "CALL" && arg ~ /^gonum\.org\//) print fn " (" where "): calls " arg
    }' <<<"$out" | sort -u)
  if [[ -n $hits ]]; then
    echo "checkfma: $t:" >&2; sed 's/^/  /' <<<"$hits" >&2; fail=1
  fi
done
# Where this machine runs amd64 v3 code, the consensus packages' tests also run as v3 code
# (fused multiply-add allowed), so a fusion the scan above missed fails the tests that pin
# exact bits.
runs_v3() {
  local flags f
  [[ $(go env GOARCH) == amd64 ]] || return 1
  flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null) "
  for f in avx2 fma bmi1 bmi2 f16c movbe; do [[ $flags == *" $f "* ]] || return 1; done
}
if runs_v3; then
  GOAMD64=v3 go test -count=1 ./training/aggregate ./training/compress ./training/round || fail=1
fi
[[ $fail == 0 ]] && echo "checkfma: no fused multiply-add or inexact math call in the consensus code (${targets[*]})"
exit $fail
