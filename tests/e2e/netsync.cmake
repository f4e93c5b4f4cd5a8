# netsync e2e tests (wire layer): a real `twinfs serve` on 127.0.0.1 fed by
# a scripted primary (wire_client) that speaks, or breaks, the protocol.
add_executable(twinfs_wire_client ${CMAKE_SOURCE_DIR}/tests/e2e/wire_client.c)
target_link_libraries(twinfs_wire_client PRIVATE twinfs_wire twinfs_control twinfs_common)
set_target_properties(twinfs_wire_client PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/e2e)
twinfs_e2e_test(e2e_netsync_caps tests/e2e/netsync_caps.sh TIMEOUT 120)
twinfs_e2e_test(e2e_netsync_serve tests/e2e/netsync_serve.sh TIMEOUT 120)
# A hostile peer against the per-connection caps (netsync/wire/limits.h).
add_executable(twinfs_hostile_peer ${CMAKE_SOURCE_DIR}/tests/e2e/hostile_peer.c)
target_link_libraries(twinfs_hostile_peer PRIVATE twinfs_wire twinfs_common)
set_target_properties(twinfs_hostile_peer PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/e2e)
# libFuzzer targets (tests/fuzz/), built with clang and run briefly.
twinfs_e2e_test(e2e_fuzz_smoke tests/fuzz/smoke.sh TIMEOUT 600)
twinfs_e2e_test(e2e_netsync_gate tests/e2e/netsync_gate.sh TIMEOUT 180)
