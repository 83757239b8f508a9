#!/usr/bin/env bash
# testnet.sh: a local lowband swarm of real processes on loopback.
#
# Starts one bootstrap node and N nodes, each with its own home under DIR, waits until every
# node sees every other node (through `lowband peers --json`), prints a summary, then keeps the
# swarm up until Ctrl-C (or exits at once with --once). Every process it started is stopped on
# exit, Ctrl-C or error: SIGTERM first, SIGKILL for anything still alive after 10 s.
#
# usage: scripts/testnet.sh [-n N] [-d DIR] [-b BINARY] [-t TIMEOUT_S] [--once]
set -euo pipefail

n=4 dir="" bin="" timeout=60 once=0
usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [[ $# -gt 0 ]]; do
  case $1 in
    -n) n=$2; shift 2 ;;
    -d) dir=$2; shift 2 ;;
    -b) bin=$2; shift 2 ;;
    -t) timeout=$2; shift 2 ;;
    --once) once=1; shift ;;
    -h|--help) usage 0 ;;
    *) echo "testnet: unknown argument $1" >&2; usage 2 ;;
  esac
done
[[ $n =~ ^[0-9]+$ && $n -ge 1 ]] || { echo "testnet: -n wants a positive number, got $n" >&2; exit 2; }

root=$(cd "$(dirname "$0")/.." && pwd)
[[ -n $dir ]] || dir=$(mktemp -d "${TMPDIR:-/tmp}/lowband-testnet.XXXXXX")
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if [[ -z $bin ]]; then
  bin=$dir/bin/lowband
  echo "testnet: building lowband into $bin"
  (cd "$root" && go build -o "$bin" ./cmd/lowband)
fi

pids=()
cleanup() {
  local code=$?
  trap - EXIT INT TERM
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
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

lb() { "$bin" "$@"; }

# start NAME ROLE: start a node whose home is $dir/NAME, logging to $dir/NAME/node.log.
start() {
  local home=$dir/$1
  "$bin" run --home "$home" --role "$2" >"$home/node.log" 2>&1 &
  pids+=($!)
  for _ in $(seq $((timeout * 10))); do
    [[ -s $home/api.addr ]] && return 0
    kill -0 "${pids[-1]}" 2>/dev/null || { echo "testnet: $1 exited; its log:" >&2; cat "$home/node.log" >&2; return 1; }
    sleep 0.1
  done
  echo "testnet: $1 did not start within ${timeout}s" >&2
  return 1
}

# peer_id HOME prints the peer ID of a home.
peer_id() { lb id --home "$1" --json | sed -n 's/.*"peer_id": *"\([^"]*\)".*/\1/p'; }

echo "testnet: bootstrap node and $n nodes under $dir"
lb init --home "$dir/boot" --profile local --force >/dev/null
start boot bootstrap
boot_id=$(peer_id "$dir/boot")
boot_maddr=$(lb status --home "$dir/boot" --json | grep -o "/ip4/127.0.0.1/tcp/[0-9]*/p2p/$boot_id" | head -n1)
[[ -n $boot_maddr ]] || { echo "testnet: the bootstrap node has no loopback TCP address" >&2; exit 1; }

ids=()
for i in $(seq "$n"); do
  h=$dir/node$i
  lb init --home "$h" --profile local --force >/dev/null
  lb bootstrap add --home "$h" "$boot_maddr" >/dev/null
  start "node$i" node
  ids+=("$(peer_id "$h")")
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
echo "testnet: running; Ctrl-C stops every node"
while :; do
  sleep 10 & wait $!
  up=0
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && up=$((up + 1)); done
  [[ $up == "${#pids[@]}" ]] || { echo "testnet: only $up of ${#pids[@]} processes are still running; stopping" >&2; exit 1; }
done
