# Service integration: crash recovery, one writer per store, refusals that
# change nothing, exit codes, sd_notify readiness, fstab helpers.
twinfs_e2e_test(e2e_service_crash tests/e2e/service_crash.sh TIMEOUT 120)
twinfs_e2e_test(e2e_service_writers tests/e2e/service_writers.sh TIMEOUT 120)
twinfs_e2e_test(e2e_service_refusals tests/e2e/service_refusals.sh TIMEOUT 120)
twinfs_e2e_test(e2e_service_config tests/e2e/service_config.sh TIMEOUT 120)
twinfs_e2e_test(e2e_service_notify tests/e2e/service_notify.py TIMEOUT 120)
twinfs_e2e_test(e2e_service_units tests/e2e/service_units.sh TIMEOUT 180)
twinfs_e2e_test(e2e_service_fstab tests/e2e/service_fstab.sh TIMEOUT 120)
twinfs_e2e_test(e2e_service_logfile tests/e2e/service_logfile.sh TIMEOUT 60)
twinfs_e2e_test(e2e_service_manpage tests/e2e/service_manpage.sh TIMEOUT 60)
twinfs_e2e_test(e2e_service_statedir tests/e2e/service_statedir.sh TIMEOUT 60)
