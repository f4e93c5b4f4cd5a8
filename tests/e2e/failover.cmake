# Failover, failback and split brain (issue 23): two nodes in network
# namespaces the tests create; promote, demote, resolve, keepalived.
twinfs_e2e_test(e2e_failover_failback tests/e2e/failover_failback.sh TIMEOUT 120)
twinfs_e2e_test(e2e_failover_second_primary tests/e2e/failover_second_primary.sh TIMEOUT 90)
twinfs_e2e_test(e2e_failover_split_brain tests/e2e/failover_split_brain.sh TIMEOUT 120)
twinfs_e2e_test(e2e_failover_keepalived tests/e2e/failover_keepalived.sh TIMEOUT 120)
twinfs_e2e_test(e2e_failover_silent_primary tests/e2e/failover_silent_primary.sh TIMEOUT 90)
twinfs_e2e_test(e2e_failover_split_fuzz tests/e2e/failover_split_fuzz.sh TIMEOUT 120)
