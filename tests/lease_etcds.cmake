# SPDX-License-Identifier: MIT
# The etcd over TLS (etcds://) lease tests' wiring, included by tests/CMakeLists.txt.
# tests/unit/test_lease_etcds.c needs nothing beyond the unit-test loop: it
# starts its etcd with scripts/etcd-test-server.sh start-tls and makes its
# certificates with scripts/etcd-test-certs.sh (openssl), both found through
# IDM_TEST_DATA, and talks to etcd through the lease library alone.
