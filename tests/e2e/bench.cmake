# bench/: the copy benchmark, IO patterns and the thread sweep on temporary
# folders (no mount needed), and the HTML report rendered by headless
# Chromium. Together about two minutes.
twinfs_e2e_test(e2e_bench_copy tests/e2e/bench_copy.sh TIMEOUT 120)
twinfs_e2e_test(e2e_bench_io tests/e2e/bench_io.sh TIMEOUT 120)
twinfs_e2e_test(e2e_bench_sweep tests/e2e/bench_sweep.sh TIMEOUT 60)
twinfs_e2e_test(e2e_bench_io_vs_fio tests/e2e/bench_io_vs_fio.sh TIMEOUT 90)
twinfs_e2e_test(e2e_bench_report_browser tests/e2e/bench_report_browser.sh TIMEOUT 300)
