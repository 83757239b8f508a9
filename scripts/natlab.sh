#!/usr/bin/env bash
# natlab.sh: two lowband nodes behind two real NATs, and a bootstrap node on the "internet".
#
# Needs root, ip netns and nft. Builds five network namespaces joined by veth pairs:
#
#   home1 (192.168.1.2) -- nat1 (192.168.1.1 | 5.0.1.2) --+
#                                                         +-- pub (5.0.1.1, 5.0.2.1): bootstrap node, relay service
#   home2 (192.168.2.2) -- nat2 (192.168.2.1 | 5.0.2.2) --+
#
# pub forwards between the two NATs' outside links, as the internet would. Each NAT
# namespace masquerades its home's traffic (nft masquerade) and lets in only replies, so a
# home node can dial the bootstrap node but not the other home node, whose private address
# nobody routes and whose NAT drops what it did not ask for. The 5.0.x.x addresses stand
# for public ones (no traffic leaves the lab), so the nodes' public_only filter keeps them.
#
# The home nodes run the public profile's NAT keys (AutoNAT, NAT service, hole punching,
# relay client) on the local profile, since the public profile refuses the simulated
# attestation the lab uses. The script waits until both have closed ROUNDS rounds with
# both contributions on one state root, then prints for each home node how it reaches the
# other (through /p2p-circuit, or directly after a hole punch), and for every node what
# AutoNAT found (libp2p_autonat_reachability_status: 0 unknown, 1 public, 2 private).
# Everything it made (processes, namespaces) is removed on exit; homes and logs stay in DIR.
#
# usage: scripts/natlab.sh [-r ROUNDS] [-d DIR] [-b BINARY] [-t TIMEOUT_S]
set -euo pipefail

rounds=2 dir="" bin="" timeout=60
usage() { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [[ $# -gt 0 ]]; do
  case $1 in
    -r) rounds=$2; shift 2 ;;
    -d) dir=$2; shift 2 ;;
    -b) bin=$2; shift 2 ;;
    -t) timeout=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "natlab: unknown argument $1" >&2; usage 2 ;;
  esac
done
[[ $(id -u) == 0 ]] || { echo "natlab: needs root (network namespaces)" >&2; exit 3; }
command -v nft >/dev/null || { echo "natlab: needs nft (apt-get install nftables)" >&2; exit 3; }
command -v jq >/dev/null || { echo "natlab: needs jq" >&2; exit 3; }

root=$(cd "$(dirname "$0")/.." && pwd)
[[ -n $dir ]] || dir=$(mktemp -d "${TMPDIR:-/tmp}/lowband-natlab.XXXXXX")
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if [[ -z $bin ]]; then
  bin=$dir/bin/lowband
  echo "natlab: building lowband into $bin"
  (cd "$root" && go build -o "$bin" ./cmd/lowband)
fi

tag=lbnat$$
ns_pub=$tag-pub ns_nat1=$tag-nat1 ns_nat2=$tag-nat2 ns_home1=$tag-home1 ns_home2=$tag-home2
namespaces=("$ns_pub" "$ns_nat1" "$ns_nat2" "$ns_home1" "$ns_home2")
pids=()

cleanup() {
  local code=$?
  trap - EXIT INT TERM
  if [[ ${#pids[@]} -gt 0 ]]; then
    kill -TERM "${pids[@]}" 2>/dev/null || true
    for _ in $(seq 50); do
      local alive=0
      for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
      [[ $alive == 0 ]] && break
      sleep 0.1
    done
    kill -KILL "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
  fi
  for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  echo "natlab: stopped ${#pids[@]} processes, removed the namespaces; homes and logs are in $dir"
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

inns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

# link NS1 IF1 ADDR1 NS2 IF2 ADDR2: a veth pair between two namespaces, addressed and up.
link() {
  ip link add "$2" netns "$1" type veth peer name "$5" netns "$4"
  inns "$1" ip addr add "$3" dev "$2"
  inns "$4" ip addr add "$6" dev "$5"
  inns "$1" ip link set "$2" up
  inns "$4" ip link set "$5" up
}

# nat NS INSIDE OUTSIDE: masquerade what leaves by OUTSIDE, let in only replies to it.
nat() {
  inns "$1" sysctl -qw net.ipv4.ip_forward=1
  inns "$1" nft -f - <<EOF
table ip nat {
  chain postrouting { type nat hook postrouting priority srcnat; oifname "$3" masquerade; }
}
table ip filter {
  chain forward {
    type filter hook forward priority filter; policy drop;
    iifname "$2" oifname "$3" accept
    iifname "$3" oifname "$2" ct state established,related accept
  }
}
EOF
}

setup_network() {
  for ns in "${namespaces[@]}"; do
    ip netns add "$ns"
    inns "$ns" ip link set lo up
  done
  link "$ns_pub" pub1 5.0.1.1/24 "$ns_nat1" out1 5.0.1.2/24
  link "$ns_pub" pub2 5.0.2.1/24 "$ns_nat2" out2 5.0.2.2/24
  link "$ns_nat1" in1 192.168.1.1/24 "$ns_home1" eth0 192.168.1.2/24
  link "$ns_nat2" in2 192.168.2.1/24 "$ns_home2" eth0 192.168.2.2/24
  inns "$ns_pub" sysctl -qw net.ipv4.ip_forward=1
  inns "$ns_nat1" ip route add default via 5.0.1.1
  inns "$ns_nat2" ip route add default via 5.0.2.1
  inns "$ns_home1" ip route add default via 192.168.1.1
  inns "$ns_home2" ip route add default via 192.168.2.1
  nat "$ns_nat1" in1 out1
  nat "$ns_nat2" in2 out2
}

# dial NS ADDR PORT: whether a TCP connection from NS to ADDR:PORT opens within 2 s.
dial() { inns "$1" timeout 2 bash -c "exec 3<>/dev/tcp/$2/$3" 2>/dev/null; }

# check_network, once the nodes listen: each home dials the bootstrap node's port; neither
# dials the other home node's port, on its NAT's outside address or its own.
check_network() {
  dial "$ns_home1" 5.0.1.1 4001 || { echo "natlab: home1 cannot dial the bootstrap node" >&2; exit 1; }
  dial "$ns_home2" 5.0.2.1 4001 || { echo "natlab: home2 cannot dial the bootstrap node" >&2; exit 1; }
  if dial "$ns_home1" 5.0.2.2 4001 || dial "$ns_home1" 192.168.2.2 4001 || dial "$ns_home2" 5.0.1.2 4001; then
    echo "natlab: one home node dials the other directly: the NATs are not in the way" >&2
    exit 1
  fi
  echo "natlab: each home node dials the bootstrap node through its NAT, neither dials the other"
}

lb() { "$bin" "$@"; }
peer_id() { lb id --home "$1" --json | jq -r .peer_id; }

# start NS NAME ROLE: start the node of $dir/NAME in namespace NS, logging to its node.log.
start() {
  local home=$dir/$2
  ip netns exec "$1" "$bin" run --home "$home" --role "$3" >"$home/node.log" 2>&1 & # ip execs the node: $! is its PID
  pids+=($!)
  for _ in $(seq $((timeout * 10))); do
    [[ -s $home/api.addr ]] && return 0
    kill -0 "${pids[-1]}" 2>/dev/null || { echo "natlab: $2 exited; its log:" >&2; cat "$home/node.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "natlab: $2 did not start within ${timeout}s" >&2
  exit 1
}

# homes: a bootstrap home and two node homes on one generated network.
make_homes() {
  rm -rf "$dir/boot" "$dir/home1" "$dir/home2" "$dir/sim-root.key" "$dir/network.toml"
  lb init --home "$dir/boot" --profile bootstrap >/dev/null
  local h
  for h in home1 home2; do
    lb init --home "$dir/$h" --profile public >/dev/null
    sed -i "s/^profile = .public./profile = 'local'/" "$dir/$h/config.toml"
  done
  lb attest sim-keygen --out "$dir/sim-root.key" >/dev/null
  lb testnet spec --base "$dir/home1/network.toml" --sim-key "$dir/sim-root.key" --out "$dir/network.toml" \
    "$(peer_id "$dir/home1")" "$(peer_id "$dir/home2")" | sed 's/^/natlab: /'
  lb testnet install --spec "$dir/network.toml" --sim-key "$dir/sim-root.key" "$dir/boot" "$dir/home1" "$dir/home2"
  local boot
  boot=$(peer_id "$dir/boot")
  lb bootstrap add --home "$dir/home1" "/ip4/5.0.1.1/tcp/4001/p2p/$boot" >/dev/null
  lb bootstrap add --home "$dir/home2" "/ip4/5.0.2.1/tcp/4001/p2p/$boot" >/dev/null
}

status() { inns "$1" "$bin" status --home "$dir/$2" --json; }

# together: how many rounds home1 and home2 both closed with both contributions, on one root.
together() {
  jq -s '[.[0].training.rounds // [] | .[] | select((.included | length) == 2) | {round, state_root}] as $a
    | [.[1].training.rounds // [] | .[] | select((.included | length) == 2) | {round, state_root}] as $b
    | [$a[] | select(. as $r | $b | index($r))] | length' <(status "$ns_home1" home1) <(status "$ns_home2" home2)
}

# sum_metric TEXT KIND: the sum of libp2p_host_addrs_KIND over its labels.
sum_metric() { awk -v m="libp2p_host_addrs_$2{" 'index($0, m) == 1 { s += $NF } END { print s + 0 }' <<<"$1"; }

# report NS NAME OTHER: how NAME reaches OTHER, and what AutoNAT says of NAME.
report() {
  local addrs reach metrics
  if [[ -n $3 ]]; then
    addrs=$(inns "$1" "$bin" peers --home "$dir/$2" --json | jq -r --arg id "$3" '.[] | select(.id == $id) | .addresses[]' | tr '\n' ' ')
    case $addrs in
      "") echo "natlab: $2 has no connection to the other home node" ;;
      *p2p-circuit*) echo "natlab: $2 reaches the other home node through the relay: $addrs" ;;
      *) echo "natlab: $2 reaches the other home node directly (hole punched): $addrs" ;;
    esac
  fi
  metrics=$(inns "$1" curl -s "http://$(cat "$dir/$2/api.addr")/metrics")
  reach=$(sed -n 's/^libp2p_autonat_reachability_status \(.*\)/\1/p' <<<"$metrics")
  if grep -q "^reachability = '[a-z]" "$dir/$2/config.toml"; then
    echo "natlab: $2: reachability set in config.toml: $(sed -n "s/^reachability = '\(.*\)'/\1/p" "$dir/$2/config.toml")"
  else case $reach in
    1) echo "natlab: $2: AutoNAT v1 says public" ;;
    2) echo "natlab: $2: AutoNAT v1 says private" ;;
    *) echo "natlab: $2: AutoNAT v1 has not decided (${reach:-no metric})" ;;
  esac; fi
  # AutoNAT v2's verdict per address: libp2p_host_addrs_{reachable,unreachable,unknown}.
  echo "natlab: $2: AutoNAT v2 addresses reachable $(sum_metric "$metrics" reachable), unreachable $(sum_metric "$metrics" unreachable), unknown $(sum_metric "$metrics" unknown)"
  echo "natlab: $2 announces: $(status "$1" "$2" | jq -r '.addresses | join(" ")')"
}

setup_network
make_homes
start "$ns_pub" boot bootstrap
start "$ns_home1" home1 node
start "$ns_home2" home2 node
check_network
echo "natlab: bootstrap node in pub, home1 and home2 behind their NATs; waiting for $rounds rounds together"

start_s=$(date +%s) got=0
while [[ $got -lt $rounds ]]; do
  sleep 1
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || { echo "natlab: a node died; see $dir/*/node.log" >&2; exit 1; }; done
  now=$(together 2>/dev/null || echo 0)
  if [[ $now -gt $got ]]; then
    got=$now
    echo "natlab: rounds closed by both home nodes with both contributions on one root: $got after $(($(date +%s) - start_s))s"
  fi
  if [[ $(($(date +%s) - start_s)) -ge $timeout ]]; then
    echo "natlab: after ${timeout}s, $got of $rounds rounds closed together" >&2
    report "$ns_home1" home1 "$(peer_id "$dir/home2")" >&2 || true
    report "$ns_home2" home2 "$(peer_id "$dir/home1")" >&2 || true
    exit 1
  fi
done
report "$ns_pub" boot ""
report "$ns_home1" home1 "$(peer_id "$dir/home2")"
report "$ns_home2" home2 "$(peer_id "$dir/home1")"
echo "natlab: ok"
