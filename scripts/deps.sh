#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install the Debian packages idmint needs that are missing. Idempotent and
# silent when everything is there; on a fresh machine it runs apt-get update
# once before installing. Groups: (none) build and test; "bench" adds what
# the benchmarks' peers need.
#
# An entry "package:command" is satisfied either by the package or by the
# command being on PATH already (Node.js, say, installed from another
# source, which brings its own npm and conflicts with Debian's).
set -euo pipefail

want=(cmake make gcc libc6-dev pkg-config libcmocka-dev python3
      clang libclang-rt-dev            # libFuzzer runs in make test
      postgresql                       # interoperability: PostgreSQL's uuid type
      postgresql-server-dev-15         # the idmint extension (PGXS), and pgbench
      libcurl4-openssl-dev libjson-c-dev   # the etcd lease backend
      libsqlite3-dev libpq-dev         # the segment ticket stores
      libmicrohttpd-dev curl           # idmintd, and its black-box tests
      libsystemd-dev                   # idmintd's sd_notify (Type=notify)
      systemd                          # systemd-analyze verify of the unit
      man-db                           # ... which runs man for Documentation=
      etcd-server etcd-client          # etcd servers the lease tests start
      libzookeeper-mt-dev              # the zk:// lease backend
      zookeeper libslf4j-java          # ZooKeeper servers the lease tests start
      faketime                         # a PostgreSQL server on a clock set forward
      openssl                          # certificates for the etcd TLS tests
      spin                             # the model check of the lease protocol
      procps                           # pgrep: the fault suite freezes servers
      python3-venv python3-setuptools python3-wheel   # the Python binding (an offline venv)
      python3-dev                      # ... and its compiled accelerator (Python.h)
      nodejs:node npm:npm              # interoperability: npm uuid and ulid; the Node.js binding
      chromium                         # the browser test of idmintd's console (headless, over CDP)
      fonts-dejavu-core)               # ... a font to draw text (it only Recommends fonts-liberation)
case "${1:-}" in
  "") ;;
  bench) want=(uuid-dev nodejs:node npm:npm wrk) ;;
  *) echo "deps.sh: unknown group '$1' (want nothing or 'bench')" >&2; exit 2 ;;
esac

missing=()
for entry in "${want[@]}"; do
  pkg=${entry%%:*}
  cmd=${entry#*:}
  [ "$cmd" != "$entry" ] && command -v "$cmd" >/dev/null 2>&1 && continue
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" && continue
  missing+=("$pkg")
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
