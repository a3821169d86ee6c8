# SPDX-License-Identifier: MIT
# The model check of the lease protocol: spin explores tests/model/lease.pml
# with all its rules and with each removed (test_model.sh). ctest label
# "model"; the plain build runs it.
add_test(NAME model.lease COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/model/test_model.sh)
set_tests_properties(model.lease PROPERTIES LABELS model TIMEOUT 300)
