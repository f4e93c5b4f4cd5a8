twinfs_e2e_test(e2e_conf tests/e2e/conf.sh TIMEOUT 60)
twinfs_e2e_test(e2e_conf_manpage tests/e2e/conf_manpage.py TIMEOUT 60)
