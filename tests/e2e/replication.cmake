# Live replication: a replicating mount against a real `serve` peer on
# 127.0.0.1 (or in network namespaces the test creates).
twinfs_e2e_test(e2e_replication_cli tests/e2e/replication_cli.sh TIMEOUT 90)
twinfs_e2e_test(e2e_replication_posix tests/e2e/replication_posix.sh TIMEOUT 90)
twinfs_e2e_test(e2e_replication_sync_mode tests/e2e/replication_sync_mode.sh TIMEOUT 90)
twinfs_e2e_test(e2e_replication_open_writer tests/e2e/replication_open_writer.sh TIMEOUT 120)
twinfs_e2e_test(e2e_replication_resend tests/e2e/replication_resend.sh TIMEOUT 120)
twinfs_e2e_test(e2e_replication_open_writer_crash tests/e2e/replication_open_writer_crash.sh TIMEOUT 180)
twinfs_e2e_test(e2e_replication_peer_kill tests/e2e/replication_peer_kill.sh TIMEOUT 120)
twinfs_e2e_test(e2e_replication_primary_kill tests/e2e/replication_primary_kill.sh TIMEOUT 240)
twinfs_e2e_test(e2e_replication_netcut tests/e2e/replication_netcut.sh TIMEOUT 120)
twinfs_e2e_test(e2e_replication_baseline tests/e2e/replication_baseline.sh TIMEOUT 90)
twinfs_e2e_test(e2e_replication_needs_scan tests/e2e/replication_needs_scan.sh TIMEOUT 90)
twinfs_e2e_test(e2e_replication_baseline_busy tests/e2e/replication_baseline_busy.sh TIMEOUT 90)
twinfs_e2e_test(e2e_replication_demo tests/e2e/replication_demo.sh TIMEOUT 120)
twinfs_e2e_test(e2e_replication_lowfd tests/e2e/replication_lowfd.sh TIMEOUT 120)
# Fidelity: after `twinfs sync` the peer's store equals the primary's
# (tests/e2e/scan_cmp.py compares them completely).
twinfs_e2e_test(e2e_fidelity_overflow_removals tests/e2e/fidelity_overflow_removals.sh TIMEOUT 150)
twinfs_e2e_test(e2e_fidelity_offline_edits tests/e2e/fidelity_offline_edits.sh TIMEOUT 120)
twinfs_e2e_test(e2e_fidelity_apply_error tests/e2e/fidelity_apply_error.sh TIMEOUT 120)
twinfs_e2e_test(e2e_fidelity_sync_truth tests/e2e/fidelity_sync_truth.sh TIMEOUT 120)
