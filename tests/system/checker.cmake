# SPDX-License-Identifier: MIT
# The whole-system fault suite's checker: syscheck reads a run's id logs and
# events (system/syslog.h) and checks them; test_syscheck runs it on
# synthetic runs, clean ones and one for each kind of violation.
add_executable(syscheck ${CMAKE_CURRENT_LIST_DIR}/syscheck.c)
target_include_directories(syscheck PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(syscheck PRIVATE idmint_static)

add_executable(test_syscheck ${CMAKE_CURRENT_LIST_DIR}/test_syscheck.c)
target_include_directories(test_syscheck PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(test_syscheck PRIVATE idmint_static)

add_test(NAME system.test_syscheck COMMAND test_syscheck $<TARGET_FILE:syscheck>)
set_tests_properties(system.test_syscheck PROPERTIES LABELS checker TIMEOUT 120
  ENVIRONMENT "IDM_SYSCHECK=$<TARGET_FILE:syscheck>")
