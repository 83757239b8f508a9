#!/usr/bin/env bash
# deps.sh: install what lowband's tests and benchmarks need beyond Go itself: Fashion-MNIST
# from Debian's dataset-fashion-mnist package, and Debian's chromium and firefox-esr for the
# dashboard's browser tests, and nftables, jq and curl for the NAT lab (scripts/natlab.sh).
# Idempotent.
set -euo pipefail
pkgs=()
[[ -d /usr/share/datasets/fashion-mnist ]] || pkgs+=(dataset-fashion-mnist)
command -v chromium >/dev/null || pkgs+=(chromium)
command -v firefox-esr >/dev/null || command -v firefox >/dev/null || pkgs+=(firefox-esr)
command -v nft >/dev/null || pkgs+=(nftables)
command -v jq >/dev/null || pkgs+=(jq)
command -v curl >/dev/null || pkgs+=(curl)
if (( ${#pkgs[@]} == 0 )); then
  exit 0
fi
sudo=""
[[ $(id -u) == 0 ]] || sudo=sudo
echo "deps: installing ${pkgs[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${pkgs[@]}" >/dev/null
