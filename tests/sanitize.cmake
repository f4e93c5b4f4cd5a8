# The sanitizer subset: tests labelled `sanitize` run in the ASan + UBSan
# build by tests/sanitize.sh (CI), within about four minutes on two busy
# cores. Every unit test, and the end-to-end tests that drive the wire and
# the receiver: frames good and bad, the gate, the caps against a hostile
# peer, TLS and a key rotation, apply errors, a full store, a baseline
# with PRUNE, resume after a killed peer, verify. The whole suite passes in that build too
# (ctest in build-asan, about 15 minutes); tests/README.md says how.
set(TWINFS_SANITIZE_E2E
  e2e_netsync_serve
  e2e_netsync_gate
  e2e_netsync_caps
  e2e_replication_tls
  e2e_replication_tls_rotate
  e2e_replication_disk_full
  e2e_replication_baseline
  e2e_replication_peer_kill
  e2e_replication_verify
  e2e_fidelity_apply_error
)
foreach(t ${TWINFS_SANITIZE_E2E})
  set_property(TEST ${t} APPEND PROPERTY LABELS sanitize)
endforeach()
