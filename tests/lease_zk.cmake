# SPDX-License-Identifier: MIT
# The ZooKeeper (zk://) lease tests' wiring, included by tests/CMakeLists.txt.
# idm_zktest: the test servers (scripts/zk-test-server.sh) and a plain
# ZooKeeper session of the test's own, on the C client the backend uses.
add_library(idm_zktest STATIC util/zktest.c)
target_include_directories(idm_zktest PUBLIC util ${ZOOKEEPER_INCLUDE_DIR})
target_link_libraries(idm_zktest PUBLIC idm_testutil ${ZOOKEEPER_MT_LIBRARY} Threads::Threads)
# The C client's synchronous calls are declared for the threaded library only.
target_compile_definitions(idm_zktest PRIVATE THREADED)
# test_lease_zk reaches the backend's hidden parser and counters through
# src/lease/zookeeper_internal.h.
if(TARGET test_lease_zk)
  target_link_libraries(test_lease_zk PRIVATE idm_zktest)
  target_include_directories(test_lease_zk PRIVATE ${PROJECT_SOURCE_DIR}/src/lease)
endif()
# test_lease_zk_reattach calls the backend's ops through src/lease/backend.h.
if(TARGET test_lease_zk_reattach)
  target_link_libraries(test_lease_zk_reattach PRIVATE idm_zktest)
  target_include_directories(test_lease_zk_reattach PRIVATE ${PROJECT_SOURCE_DIR}/src/lease)
endif()
