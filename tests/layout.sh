#!/bin/sh
# The layout rules of docs/architecture.md and STYLE.md, checked on every
# run so that they stay true as the code grows: fs/ includes and links
# nothing of the network; no production .c over 1,500 lines and no
# function over 150; no dated measurement text in *.c/*.h (the evidence
# lives in docs/benchmarks.md); the README stays a user guide (≤ 16 KiB);
# every script ctest runs is executable (a fresh clone keeps git's mode).
# Reads the source tree only.
. "$(dirname "$0")/e2e/lib.sh"
cd "$TWINFS_SRC" || fail "no source tree at $TWINFS_SRC"

prod_c=$(find common conf fs journal netsync src bench -name '*.c' | sort)

inc=$(grep -hn '#include "' fs/*.c fs/*.h | grep -vE '#include "(fs|journal|common)/|#include "[a-z0-9_]+\.h"' || true)
[ -n "$inc" ] && echo "$inc" >&2
check "fs/ includes only fs/, journal/ and common/ headers" [ -z "$inc" ]
check "twinfs_fs links no libevent and no replication library" \
	sh -c '! grep -A3 "target_link_libraries(twinfs_fs" fs/CMakeLists.txt | grep -qiE "event|wire|primary|secondary|control|delta|roles"'

big=$(wc -l $prod_c | awk '$2 != "total" && $1 > 1500 {print $2 " (" $1 ")"}')
[ -n "$big" ] && echo "over 1,500 lines: $big" >&2
check "no production .c file over 1,500 lines" [ -z "$big" ]

# A function body runs from a '{' alone in column 0 to the next '}' alone
# in column 0 (the house style puts a function's braces there and nothing else).
long=$(awk 'FNR == 1 { open = 0 }
	/^\{$/ { open = FNR; next }
	/^\}/ && open { n = FNR - open + 1; if (n > 150) print FILENAME ":" open ": " n " lines"; open = 0 }' $prod_c)
[ -n "$long" ] && echo "functions over 150 lines: $long" >&2
check "no function over 150 lines" [ -z "$long" ]

dated=$(grep -nE '20[0-9]{2}-[01][0-9]-[0-3][0-9]|[0-2][0-9]:[0-5][0-9] UTC|measured on' \
	$(find common conf fs journal netsync src bench -name '*.[ch]') || true)
[ -n "$dated" ] && echo "$dated" >&2
check "no dated measurement text in *.c/*.h" [ -z "$dated" ]

noexec=$(grep -rhoE 'twinfs_e2e_test\([a-z0-9_]+ [^ )]+' --include='*.cmake' --include=CMakeLists.txt . |
	awk '{print $2}' | sort -u | while read -r f; do [ -x "$f" ] || echo "$f"; done)
[ -n "$noexec" ] && echo "not executable: $noexec" >&2
check "every script ctest runs is executable" [ -z "$noexec" ]

size=$(wc -c <README.md)
check "README.md is a user guide of at most 16 KiB ($size bytes)" [ "$size" -le 16384 ]
finish
