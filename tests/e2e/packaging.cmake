twinfs_e2e_test(e2e_packaging tests/e2e/packaging.sh TIMEOUT 600 SERIAL)
