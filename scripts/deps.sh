#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install the Debian packages idmint needs that are missing. Idempotent and
# silent when everything is there; on a fresh machine it runs apt-get update
# once before installing. Groups: (none) build and test; "bench" adds the
# JavaScript peers' runtime.
set -euo pipefail

pkgs=(cmake make gcc libc6-dev pkg-config libcmocka-dev python3)
case "${1:-}" in
  "") ;;
  bench) pkgs=(nodejs npm) ;;
  *) echo "deps.sh: unknown group '$1' (want nothing or 'bench')" >&2; exit 2 ;;
esac

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    # A package may be absent while its command is present some other way
    # (node from another source, say); only the bench group accepts that.
    if [ "${1:-}" = bench ] && command -v "${p/nodejs/node}" >/dev/null 2>&1; then
      continue
    fi
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
  else
    echo "deps.sh: missing ${missing[*]}; run as root or install sudo" >&2
    exit 1
  fi
fi
command -v apt-get >/dev/null 2>&1 || {
  echo "deps.sh: missing ${missing[*]} and no apt-get to install them (idmint targets Debian 12)" >&2
  exit 1
}

echo "deps: installing ${missing[*]}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo[@]}" apt-get update -qq >"$log" 2>&1 ||
   ! "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$log" 2>&1; then
  cat "$log" >&2
  echo "deps.sh: installing ${missing[*]} failed" >&2
  exit 1
fi
