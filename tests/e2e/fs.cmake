# fs/: the FUSE mount. The helpers are C programs run by the scripts.
add_executable(fs_posix_ops ${CMAKE_SOURCE_DIR}/tests/e2e/fs/posix_ops.c)
twinfs_e2e_test(e2e_fs_posix tests/e2e/fs_posix.sh TIMEOUT 120)
# The same without passthrough: every read and write through the daemon,
# with the kernel's writeback cache (non-root mounts, older kernels).
twinfs_e2e_test(e2e_fs_posix_nopt tests/e2e/fs_posix.sh TIMEOUT 120
                ENV TWINFS_MOUNT_ARGS=--no-passthrough)
add_executable(fs_fsx ${CMAKE_SOURCE_DIR}/tests/e2e/fs/fsx.c)
twinfs_e2e_test(e2e_fs_fsx tests/e2e/fs_fsx.sh TIMEOUT 300)
twinfs_e2e_test(e2e_fs_fsx_nopt tests/e2e/fs_fsx.sh TIMEOUT 300
                ENV TWINFS_MOUNT_ARGS=--no-passthrough)
twinfs_e2e_test(e2e_fs_passthrough tests/e2e/fs_passthrough.sh TIMEOUT 120)
# Requests through the per-CPU io_uring rings (the default where the
# kernel has them), and the same suites through /dev/fuse only.
twinfs_e2e_test(e2e_fs_uring tests/e2e/fs_uring.sh TIMEOUT 120)
twinfs_e2e_test(e2e_fs_posix_devfuse tests/e2e/fs_posix.sh TIMEOUT 120
                ENV TWINFS_MOUNT_ARGS=--no-uring)
twinfs_e2e_test(e2e_fs_fsx_devfuse tests/e2e/fs_fsx.sh TIMEOUT 300
                ENV TWINFS_MOUNT_ARGS=--no-uring)
add_executable(fs_pending ${CMAKE_SOURCE_DIR}/tests/e2e/fs/pending.c)
target_link_libraries(fs_pending PRIVATE twinfs_journal twinfs_common)
twinfs_e2e_test(e2e_fs_crash tests/e2e/fs_crash.sh TIMEOUT 120)
twinfs_e2e_test(e2e_fs_many_files tests/e2e/fs_many_files.sh TIMEOUT 60)
twinfs_e2e_test(e2e_fs_evict tests/e2e/fs_evict.sh TIMEOUT 120)
# Four processes making trees of files, hard links and symlinks at once,
# at the default fd limit and at 1,024: no EMFILE, no hang, fds in budget.
twinfs_e2e_test(e2e_fs_nsload tests/e2e/fs_nsload.sh TIMEOUT 180)
