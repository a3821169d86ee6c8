# SPDX-License-Identifier: MIT
# The PostgreSQL extension's tests, included by tests/CMakeLists.txt when the
# extension is built (IDM_PGEXT_SO, the built idmint.so). test_extension.sh
# starts servers of its own (pg_regress on pg/sql, then the scenarios) and
# first checks that the installed idmint.so is this one: install it before
# (make -C pg install, or cmake --install, as root). It runs alone: its
# pgbench sessions and restarts want both cores and a quiet clock.
if(NOT IDM_PGEXT_SO)
  return()
endif()
add_test(NAME pg.extension
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/pg/test_extension.sh ${IDM_PGEXT_SO})
set_tests_properties(pg.extension PROPERTIES LABELS pg RUN_SERIAL TRUE TIMEOUT 600)
