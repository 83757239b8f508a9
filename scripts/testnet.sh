#!/usr/bin/env bash
# testnet.sh: a local lowband network of real processes on loopback that trains.
#
# Makes one network spec for the run (`lowband testnet spec`: simulated TEE evidence from a
# generated sim root, equal genesis stakes for the N nodes, genesis now, the default charlm
# task with a short round), starts one bootstrap node and N nodes, each with its own home
# under DIR, and waits until every node sees every other node. Then they train: each node's
# status is saved every second as DIR/nodeI/status.json, and once R rounds have closed on
# every node they are stopped, a table is printed and DIR/summary.json written. Without -r
# they train until Ctrl-C (the summary is written on exit); --once exits as soon as the
# swarm has formed. Every process it started is stopped on exit, Ctrl-C or error: SIGTERM
# first, SIGKILL for anything still alive after 10 s. A node that dies, or no round closing
# on every node within TIMEOUT_S, ends the run with exit status 1. With --adversaries
# KIND,KIND,... the spec allows adversary modes and the first nodes run those kinds
# (`lowband run --adversary`); summary.json marks them, and the table judges agreement over
# the honest nodes only and says whom the honest nodes slashed. With --pprof PORT, node I
# serves Go's runtime profiles on 127.0.0.1:PORT+I (`lowband run --pprof`).
#
# usage: scripts/testnet.sh [-n N] [-r ROUNDS] [-d DIR] [-b BINARY] [-t TIMEOUT_S] [--once]
#                           [--adversaries KIND,...] [--pprof PORT]
set -euo pipefail

n=4 rounds=0 dir="" bin="" timeout=120 once=0 adversaries="" pprof=""
usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [[ $# -gt 0 ]]; do
  case $1 in
    -n) n=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    -d) dir=$2; shift 2 ;;
    -b) bin=$2; shift 2 ;;
    -t) timeout=$2; shift 2 ;;
    --once) once=1; shift ;;
    --adversaries) adversaries=$2; shift 2 ;;
    --pprof) pprof=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "testnet: unknown argument $1" >&2; usage 2 ;;
  esac
done
[[ $n =~ ^[0-9]+$ && $n -ge 1 ]] || { echo "testnet: -n wants a positive number, got $n" >&2; exit 2; }
[[ $rounds =~ ^[0-9]+$ ]] || { echo "testnet: -r wants a number of rounds, got $rounds" >&2; exit 2; }
[[ $timeout =~ ^[0-9]+$ && $timeout -ge 1 ]] || { echo "testnet: -t wants a positive number, got $timeout" >&2; exit 2; }
[[ -z $pprof || $pprof =~ ^[0-9]+$ && $((pprof + n)) -le 65535 ]] || { echo "testnet: --pprof wants a port, got $pprof" >&2; exit 2; }
advs=()
[[ -n $adversaries ]] && IFS=, read -r -a advs <<<"$adversaries"
[[ ${#advs[@]} -le $n ]] || { echo "testnet: ${#advs[@]} adversaries for $n nodes" >&2; exit 2; }

root=$(cd "$(dirname "$0")/.." && pwd)
[[ -n $dir ]] || dir=$(mktemp -d "${TMPDIR:-/tmp}/lowband-testnet.XXXXXX")
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if [[ -z $bin ]]; then
  bin=$dir/bin/lowband
  echo "testnet: building lowband into $bin"
  (cd "$root" && go build -o "$bin" ./cmd/lowband)
fi

pids=() names=() training=0
statuses=()
for i in $(seq "$n"); do statuses+=("$dir/node$i/status.json"); done

# summarise prints the table and writes summary.json from the statuses saved last.
summarise() {
  for f in "${statuses[@]}"; do [[ -s $f ]] || { echo "testnet: no status saved for $(basename "$(dirname "$f")"); no summary" >&2; return 1; }; done
  local args=(--out "$dir/summary.json")
  [[ $rounds -gt 0 ]] && args+=(--rounds "$rounds")
  "$bin" testnet summary "${args[@]}" "${statuses[@]}" || return 1
  echo "testnet: wrote $dir/summary.json"
}

busy="" # the status request in flight, if any
cleanup() {
  local code=$?
  trap - EXIT INT TERM
  [[ -z $busy ]] || kill "$busy" 2>/dev/null || true
  if [[ ${#pids[@]} -gt 0 ]]; then
    kill -TERM "${pids[@]}" 2>/dev/null || true
    for _ in $(seq 100); do
      local alive=0
      for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
      [[ $alive == 0 ]] && break
      sleep 0.1
    done
    kill -KILL "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
    echo "testnet: stopped ${#pids[@]} processes; homes and logs are in $dir"
  fi
  if [[ $training == 1 ]]; then
    summarise || { [[ $code == 0 ]] && code=1; }
  fi
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

lb() { "$bin" "$@"; }

# start NAME ROLE [ARG...]: start a node whose home is $dir/NAME, logging to
# $dir/NAME/node.log; the ARGs go to `lowband run`.
start() {
  local home=$dir/$1
  "$bin" run --home "$home" --role "$2" "${@:3}" >"$home/node.log" 2>&1 &
  pids+=($!)
  names+=("$1")
  for _ in $(seq $((timeout * 10))); do
    [[ -s $home/api.addr ]] && return 0
    kill -0 "${pids[-1]}" 2>/dev/null || { echo "testnet: $1 exited; its log:" >&2; cat "$home/node.log" >&2; return 1; }
    sleep 0.1
  done
  echo "testnet: $1 did not start within ${timeout}s" >&2
  return 1
}

# check_alive exits with a message naming the first process that died, and its log's end.
check_alive() {
  local k
  for k in "${!pids[@]}"; do
    kill -0 "${pids[$k]}" 2>/dev/null && continue
    echo "testnet: ${names[$k]} (pid ${pids[$k]}) died; the end of its log ($dir/${names[$k]}/node.log):" >&2
    tail -n 20 "$dir/${names[$k]}/node.log" >&2
    exit 1
  done
}

# peer_id HOME prints the peer ID of a home.
peer_id() { lb id --home "$1" --json | sed -n 's/.*"peer_id": *"\([^"]*\)".*/\1/p'; }

# A fresh network for this run: new identities, so nothing of an earlier run's homes is kept.
homes=("$dir/boot")
for i in $(seq "$n"); do homes+=("$dir/node$i"); done
ids=()
for h in "${homes[@]}"; do
  rm -f "$h/store.db" "$h/peers.json" "$h/status.json"
  lb init --home "$h" --profile local --force >/dev/null
  [[ $h == "$dir/boot" ]] || ids+=("$(peer_id "$h")")
done
rm -f "$dir/sim-root.key" "$dir/summary.json"
lb attest sim-keygen --out "$dir/sim-root.key" >/dev/null
spec_args=()
[[ ${#advs[@]} -gt 0 ]] && spec_args+=(--allow-adversaries)
lb testnet spec --base "$dir/node1/network.toml" --sim-key "$dir/sim-root.key" --out "$dir/network.toml" "${spec_args[@]}" "${ids[@]}" |
  sed 's/^/testnet: /'
lb testnet install --spec "$dir/network.toml" --sim-key "$dir/sim-root.key" "${homes[@]}"

echo "testnet: bootstrap node and $n nodes under $dir"
start boot bootstrap
boot_id=$(peer_id "$dir/boot")
boot_maddr=$(lb status --home "$dir/boot" --json | grep -o "/ip4/127.0.0.1/tcp/[0-9]*/p2p/$boot_id" | head -n1)
[[ -n $boot_maddr ]] || { echo "testnet: the bootstrap node has no loopback TCP address" >&2; exit 1; }

for i in $(seq "$n"); do
  lb bootstrap add --home "$dir/node$i" "$boot_maddr" >/dev/null
  args=()
  [[ -n $pprof ]] && args+=(--pprof "127.0.0.1:$((pprof + i))")
  if [[ $i -le ${#advs[@]} ]]; then
    echo "testnet: node$i runs the adversary mode ${advs[$((i - 1))]}"
    args+=(--adversary "${advs[$((i - 1))]}")
  fi
  start "node$i" node "${args[@]}"
done

start_s=$(date +%s)
deadline=$((start_s + timeout))
while :; do
  missing=0
  for i in $(seq "$n"); do
    seen=$(lb peers --home "$dir/node$i" --json 2>/dev/null || true)
    for j in $(seq "$n"); do
      [[ $i == "$j" ]] && continue
      grep -q "${ids[$((j - 1))]}" <<<"$seen" || missing=$((missing + 1))
    done
  done
  [[ $missing == 0 ]] && break
  if [[ $(date +%s) -ge $deadline ]]; then
    echo "testnet: after ${timeout}s, $missing node pairs still do not see each other" >&2
    exit 1
  fi
  sleep 0.5
done

echo "testnet: all $n nodes see each other after $(($(date +%s) - start_s))s"
printf '%-6s %-54s %s\n' NAME PEER_ID "PEERS API"
printf '%-6s %-54s %s\n' boot "$boot_id" "$(lb status --home "$dir/boot" --json | sed -n 's/.*"connected_peers": *\([0-9]*\).*/\1/p')     $(cat "$dir/boot/api.addr")"
for i in $(seq "$n"); do
  h=$dir/node$i
  printf '%-6s %-54s %s\n' "node$i" "${ids[$((i - 1))]}" "$(lb status --home "$h" --json | sed -n 's/.*"connected_peers": *\([0-9]*\).*/\1/p')     $(cat "$h/api.addr")"
done
echo "testnet: bootstrap at $boot_maddr"
[[ $once == 1 ]] && exit 0

# save_statuses saves each node's status; a node too busy to answer keeps its last one.
save_statuses() {
  local f
  for f in "${statuses[@]}"; do
    # In the background, so that Ctrl-C is handled at once, not after a busy node answers.
    lb status --home "$(dirname "$f")" --json >"$f.tmp" 2>/dev/null &
    busy=$!
    if wait "$busy"; then
      busy=""
      mv "$f.tmp" "$f"
    else
      busy=""
      rm -f "$f.tmp"
    fi
  done
}

training=1 of=""
[[ $rounds -gt 0 ]] && of=/$rounds
echo "testnet: training${of:+ $rounds rounds}; Ctrl-C stops every node"
closed=0 progress_s=$(date +%s) why=""
while [[ $rounds == 0 || $closed -lt $rounds ]]; do
  sleep 1 & wait $!
  check_alive
  save_statuses
  if now=$(lb testnet rounds "${statuses[@]}" 2>&1); then
    if [[ $now -gt $closed ]]; then
      closed=$now progress_s=$(date +%s) why=""
      echo "testnet: rounds closed on every node: $closed$of"
    fi
  else
    why=$now
  fi
  if [[ $(($(date +%s) - progress_s)) -ge $timeout ]]; then
    echo "testnet: no round closed on every node in ${timeout}s (after $closed)${why:+: $why}" >&2
    exit 1
  fi
done
echo "testnet: $rounds rounds closed on every node; stopping"
