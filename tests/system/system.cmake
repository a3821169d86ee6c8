# SPDX-License-Identifier: MIT
# The whole-system fault suite (tests/system/): a fleet of minters under a
# nemesis (fleet.py), its programs (sysmint, sysproxy, the diskfault shim)
# and its checker (checker.cmake). ctest label "system"; `make test` runs a
# short seeded run in the plain build, `make soak` a long one.
find_package(CURL REQUIRED)

add_executable(sysmint system/sysmint.c)
target_include_directories(sysmint PRIVATE system)
target_link_libraries(sysmint PRIVATE idmint_lease_static idmint_static CURL::libcurl
  Threads::Threads)

add_executable(sysproxy system/sysproxy.c util/tcpproxy.c)
target_include_directories(sysproxy PRIVATE util)
target_link_libraries(sysproxy PRIVATE Threads::Threads)

# Loaded with LD_PRELOAD into minters of the fleet: never sanitized, as the
# programs it is loaded into are not.
add_library(diskfault MODULE system/diskfault.c)
target_compile_options(diskfault PRIVATE -fno-sanitize=all)
target_link_options(diskfault PRIVATE -fno-sanitize=all)
target_link_libraries(diskfault PRIVATE ${CMAKE_DL_LIBS})

include(${CMAKE_CURRENT_SOURCE_DIR}/system/checker.cmake)

find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME system.fleet COMMAND ${Python3_EXECUTABLE}
  ${CMAKE_CURRENT_SOURCE_DIR}/system/fleet.py --build ${PROJECT_BINARY_DIR}
  --seed 1 --seconds 60 --min-ids 1000000)
# It loads both cores: nothing else runs beside it.
set_tests_properties(system.fleet PROPERTIES LABELS system TIMEOUT 400 RUN_SERIAL TRUE)

# The same fleet with no nemesis and one rogue minter (a coordinator of its
# own for an id space the fleet leases elsewhere): passes only if the
# checker finds the duplicates and overlaps, so a clean fleet run above
# means something.
add_test(NAME system.fleet_rogue COMMAND ${Python3_EXECUTABLE}
  ${CMAKE_CURRENT_SOURCE_DIR}/system/fleet.py --build ${PROJECT_BINARY_DIR}
  --seed 1 --seconds 5 --min-ids 10000 --min-faults 0 --rogue)
set_tests_properties(system.fleet_rogue PROPERTIES LABELS system TIMEOUT 300 RUN_SERIAL TRUE)
