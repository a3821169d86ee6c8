#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A build without the optional backends (IDM_WITH_ETCD, IDM_WITH_SQLITE,
# IDM_WITH_POSTGRES and IDM_WITH_ZOOKEEPER all OFF): each backend links only
# its own client library, so the libraries of this build need none of them, and a URL of a
# backend left out is refused naming the option, never taken for an unknown
# scheme. Run by scripts/test.sh on the build it makes (argument: its dir).
set -uo pipefail
dir=${1:?usage: test_minimal.sh BUILD-DIR}
fails=0
bad() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

for lib in libidmint_lease.so libidmint_segment.so; do
  [ -e "$dir/$lib" ] || { bad "$lib was not built"; continue; }
  got=$(needed "$dir/$lib")
  for client in libcurl libjson-c libsqlite3 libpq libzookeeper; do
    if grep -q "^$client" <<<"$got"; then bad "$lib needs $client: $(tr '\n' ' ' <<<"$got")"; fi
  done
done
for prog in idmint idmintd; do
  got=$(needed "$dir/$prog")
  for client in libcurl libjson-c libsqlite3 libpq libzookeeper; do
    if grep -q "^$client" <<<"$got"; then bad "$prog needs $client"; fi
  done
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect_refusal WHAT OPTION CMD...: CMD fails (exit 1 or 2) and says OPTION.
expect_refusal() {
  local what=$1 option=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  local rc=$?
  if [ $rc -ne 1 ] && [ $rc -ne 2 ]; then
    bad "$what: exit $rc, want 1 or 2"
  elif ! grep -q "not built in ($option)" "$tmp/err"; then
    bad "$what: the error does not name $option: $(cat "$tmp/err")"
  fi
}
expect_refusal "lease list etcd://" IDM_WITH_ETCD=OFF \
  "$dir/idmint" lease list etcd://127.0.0.1:1/idmint
expect_refusal "lease list etcds://" IDM_WITH_ETCD=OFF \
  "$dir/idmint" lease list etcds://127.0.0.1:1/idmint
expect_refusal "lease list zk://" IDM_WITH_ZOOKEEPER=OFF \
  "$dir/idmint" lease list zk://127.0.0.1:1/idmint
expect_refusal "lease list postgres://" IDM_WITH_POSTGRES=OFF \
  "$dir/idmint" lease list postgres://idmint@127.0.0.1:1/idmint
expect_refusal "seq list sqlite://" IDM_WITH_SQLITE=OFF \
  "$dir/idmint" seq list --store "sqlite://$tmp/s.db"
expect_refusal "seq list postgres://" IDM_WITH_POSTGRES=OFF \
  "$dir/idmint" seq list --store postgres://idmint@127.0.0.1:1/idmint
# idmintd's --check-config asks the libraries: its default store is sqlite://.
expect_refusal "idmintd --check-config (default store)" IDM_WITH_SQLITE=OFF \
  "$dir/idmintd" --check-config --data-dir "$tmp/var"
expect_refusal "idmintd --check-config --lease etcd://" IDM_WITH_ETCD=OFF \
  "$dir/idmintd" --check-config --data-dir "$tmp/var" --store postgresql://u@h/db \
  --lease etcd://127.0.0.1:1/idmint
[ -e "$tmp/s.db" ] && bad "a sqlite:// URL created its file in a build without SQLite"

# What is built still works: a file:// lease and ids minted under it.
if ! out=$("$dir/idmint" next --lease "file://$tmp/leases" --layout twitter --node datacenter=1 -n 3 2>"$tmp/err"); then
  bad "idmint next --lease file:// failed: $(cat "$tmp/err")"
elif [ "$(wc -l <<<"$out")" -ne 3 ]; then
  bad "idmint next --lease file:// printed $(wc -l <<<"$out") ids, want 3"
fi

if [ $fails -ne 0 ]; then
  echo "minimal build: $fails failure(s)" >&2
  exit 1
fi
echo "minimal build: no client library linked; etcd://, etcds://, zk://, sqlite://, postgres:// refused naming their options"
