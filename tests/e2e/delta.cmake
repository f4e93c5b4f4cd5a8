# The convergence engine (netsync/delta/): `twinfs mirror` to a serve peer
# and to a local folder, compared completely with treecmp.py; its refusals.
twinfs_e2e_test(e2e_delta_mirror tests/e2e/delta_mirror.sh TIMEOUT 120)
twinfs_e2e_test(e2e_delta_refusals tests/e2e/delta_refusals.sh TIMEOUT 120)
twinfs_e2e_test(e2e_delta_resync tests/e2e/delta_resync.sh TIMEOUT 120)
twinfs_e2e_test(e2e_delta_hash_loop tests/e2e/delta_hash_loop.sh TIMEOUT 120)
twinfs_e2e_test(e2e_delta_repair tests/e2e/delta_repair.sh TIMEOUT 120)
twinfs_e2e_test(e2e_delta_progress tests/e2e/delta_progress.sh TIMEOUT 60)
