# SPDX-License-Identifier: MIT
# The PostgreSQL (postgres://) lease tests' wiring, included by tests/CMakeLists.txt.

# test_lease_pg holds locks and transactions open with libpq sessions of its
# own (P7), besides the lease library's.
target_link_libraries(test_lease_pg PRIVATE PkgConfig::LIBPQ)
