# SPDX-License-Identifier: MIT
# The etcd over TLS (etcds://) lease tests' wiring, included by tests/CMakeLists.txt.
# tests/unit/test_lease_etcds.c needs nothing beyond the unit-test loop: it
# starts its etcd with scripts/etcd-test-server.sh start-tls and makes its
# certificates with scripts/etcd-test-certs.sh (openssl), both found through
# IDM_TEST_DATA, and talks to etcd through the lease library alone.
# tests/unit/test_lease_etcd_reattach.c calls the etcd backend's operations
# directly (backend.h) and counts its round trips (etcd_internal.h).
target_include_directories(test_lease_etcd_reattach PRIVATE ${PROJECT_SOURCE_DIR}/src/lease)
