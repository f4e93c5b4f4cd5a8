twinfs_e2e_test(e2e_conf tests/e2e/conf.sh TIMEOUT 60)
