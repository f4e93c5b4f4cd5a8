# fs/: the FUSE mount. The helpers are C programs run by the scripts.
add_executable(fs_posix_ops ${CMAKE_SOURCE_DIR}/tests/e2e/fs/posix_ops.c)
twinfs_e2e_test(e2e_fs_posix tests/e2e/fs_posix.sh TIMEOUT 120)
