# Live replication: a replicating mount against a real `serve` peer on
# 127.0.0.1 (or in network namespaces the test creates).
twinfs_e2e_test(e2e_replication_cli tests/e2e/replication_cli.sh TIMEOUT 90)
twinfs_e2e_test(e2e_status_json tests/e2e/status_json.sh TIMEOUT 120)
twinfs_e2e_test(e2e_progress tests/e2e/progress.sh TIMEOUT 180)
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
twinfs_e2e_test(e2e_replication_tls tests/e2e/replication_tls.sh TIMEOUT 180)
# The fault-injection suite (tests/faults/): two namespaces, one scenario
# per fault, a table of the results in the build folder.
twinfs_e2e_test(e2e_faults tests/faults/faults.py TIMEOUT 600)
twinfs_e2e_test(e2e_replication_verify tests/e2e/replication_verify.sh TIMEOUT 120)
twinfs_e2e_test(e2e_metrics tests/e2e/metrics.sh TIMEOUT 120)
