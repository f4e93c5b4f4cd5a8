/* Unit tests for netsync/roles/resolution (the plan of `twinfs resolve`,
 * computed alike on both nodes), tail (STATE/tail round trip), conflicts
 * (a copy kept, dropped when the store holds the same), a moved folder
 * sent beside with --keep both, and the rule of
 * inventory_entry_same that a demoted primary's tail relies on. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "netsync/delta/inventory.h"
#include "netsync/roles/conflicts.h"
#include "netsync/roles/resolution.h"
#include "netsync/roles/tail.h"

/* "x" changed on both, "p" only on the primary, "s" only on the
 * secondary (which deleted it); seen from the primary (here = primary). */
static void make_div(struct divergence *d, struct div_entry *e)
{
	memset(d, 0, sizeof(*d));
	memset(e, 0, 3 * sizeof(*e));
	e[0] = (struct div_entry){ .path = "x", .changed_here = true, .changed_peer = true,
				   .here = { .mode = S_IFREG | 0644 },
				   .peer = { .mode = S_IFREG | 0644 } };
	e[1] = (struct div_entry){ .path = "p", .changed_here = true,
				   .here = { .mode = S_IFREG | 0644 },
				   .peer = { .mode = S_IFREG | 0644 } };
	e[2] = (struct div_entry){ .path = "s", .changed_peer = true,
				   .here = { .mode = S_IFREG | 0644 } };
	d->e = e;
	d->n = 3;
	d->complete = true;
}

/* The secondary's view of the same list: here and peer swapped. */
static void swap_sides(struct div_entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct div_side t = e[i].here;
		bool c = e[i].changed_here;

		e[i].here = e[i].peer;
		e[i].peer = t;
		e[i].changed_here = e[i].changed_peer;
		e[i].changed_peer = c;
	}
}

static void test_keep_words(void **state)
{
	enum proto_keep k;

	(void)state;
	assert_int_equal(resolution_keep("local", true, &k), 0);
	assert_int_equal(k, PROTO_KEEP_PRIMARY);
	assert_int_equal(resolution_keep("local", false, &k), 0);
	assert_int_equal(k, PROTO_KEEP_SECONDARY);
	assert_int_equal(resolution_keep("peer", false, &k), 0);
	assert_int_equal(k, PROTO_KEEP_PRIMARY);
	assert_int_equal(resolution_keep("both", false, &k), 0);
	assert_int_equal(k, PROTO_KEEP_BOTH);
	assert_int_equal(resolution_keep("mine", true, &k), -EINVAL);
}

static void test_plans_agree(void **state)
{
	static const enum proto_keep keeps[] = { PROTO_KEEP_PRIMARY, PROTO_KEEP_SECONDARY,
						  PROTO_KEEP_BOTH };
	struct div_entry ep[3], es[3];
	struct divergence dp, ds;

	(void)state;
	make_div(&dp, ep);
	make_div(&ds, es);
	swap_sides(es, 3);
	for (size_t k = 0; k < 3; k++) {
		struct resolution rp, rs;

		assert_int_equal(resolution_plan(&dp, true, keeps[k], "nodeb", "T", &rp), 0);
		assert_int_equal(resolution_plan(&ds, false, keeps[k], "nodeb", "T", &rs), 0);
		assert_int_equal(rp.n, 3);
		for (size_t i = 0; i < 3; i++) {
			assert_int_equal(rp.it[i].s_sends, rs.it[i].s_sends);
			assert_int_equal(rp.it[i].s_saves, rs.it[i].s_saves);
			assert_int_equal(rp.it[i].p_saves, rs.it[i].p_saves);
			assert_int_equal(!rp.it[i].dest, !rs.it[i].dest);
		}
		if (keeps[k] == PROTO_KEEP_PRIMARY) {
			/* nothing travels; the secondary keeps x and p aside */
			assert_false(rp.it[0].s_sends || rp.it[1].s_sends || rp.it[2].s_sends);
			assert_true(rp.it[0].s_saves && rp.it[1].s_saves);
			assert_false(rp.it[2].s_saves);	/* absent there: nothing to keep */
		} else if (keeps[k] == PROTO_KEEP_SECONDARY) {
			/* every version travels, the primary keeps its own aside */
			assert_true(rp.it[0].s_sends && rp.it[1].s_sends && rp.it[2].s_sends);
			assert_true(rp.it[0].p_saves && rp.it[1].p_saves && rp.it[2].p_saves);
			assert_string_equal(rp.it[2].dest, "s");
		} else {
			/* x: the secondary's beside the primary's; s: its delete;
			 * p: the primary's stays */
			assert_string_equal(rp.it[0].dest, "x.conflict-nodeb-T");
			assert_string_equal(rp.it[2].dest, "s");
			assert_null(rp.it[1].dest);
			assert_false(rp.it[0].p_saves || rp.it[0].s_saves);
		}
		resolution_free(&rp);
		resolution_free(&rs);
	}
}

/* With --keep both, a folder changed on both nodes keeps the primary's and
 * sends nothing (its entries are listed alone), unless it moved (whole):
 * then the secondary's goes beside it with what it holds. */
static void test_whole_folder_beside(void **state)
{
	struct div_entry e = { .path = "d", .changed_here = true, .changed_peer = true,
			       .here = { .mode = S_IFDIR | 0755 },
			       .peer = { .mode = S_IFDIR | 0700 } };
	struct divergence d = { .e = &e, .n = 1 };
	struct resolution r;

	(void)state;
	assert_int_equal(resolution_plan(&d, true, PROTO_KEEP_BOTH, "nodeb", "T", &r), 0);
	assert_false(r.it[0].s_sends);
	resolution_free(&r);
	e.whole = true;
	assert_int_equal(resolution_plan(&d, true, PROTO_KEEP_BOTH, "nodeb", "T", &r), 0);
	assert_true(r.it[0].s_sends);
	assert_string_equal(r.it[0].dest, "d.conflict-nodeb-T");
	resolution_free(&r);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_tail_and_conflicts(void **state)
{
	char dir[] = "/tmp/twinfs-resolution-XXXXXX", store[128], st[128], p[256], q[256];
	struct tail t = { 0 }, r;
	char id[CONFLICTS_ID_MAX];
	int sfd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(store, sizeof(store), "%s/store", dir);
	snprintf(st, sizeof(st), "%s/state", dir);
	assert_int_equal(mkdir(store, 0755), 0);
	assert_int_equal(mkdir(st, 0700), 0);
	snprintf(p, sizeof(p), "%s/a", store);
	write_file(p, "mine\n");
	sfd = open(store, O_RDONLY | O_DIRECTORY);
	assert_true(sfd >= 0);
	/* tail round trip */
	assert_int_equal(tail_load(st, &r), 0);
	snprintf(t.id, sizeof(t.id), "folder");
	assert_int_equal(tail_add(&t, "a"), 0);
	assert_int_equal(tail_add(&t, "d/b c"), 0);
	assert_int_equal(tail_add_moved(&t, "d/b c"), 0);	/* a mark, not a path */
	assert_int_equal(t.n, 2);
	assert_int_equal(tail_save(st, &t), 0);
	assert_int_equal(tail_load(st, &r), 1);
	assert_string_equal(r.id, "folder");
	assert_int_equal(r.n, 2);
	assert_true(tail_moved(r.paths + strlen("a") + 1 + strlen("d/b c") + 1));
	assert_false(tail_moved(r.paths));
	assert_memory_equal(r.paths, t.paths, t.len);
	tail_free(&r);
	tail_free(&t);
	assert_int_equal(tail_remove(st), 0);
	/* a copy is kept while the store differs, dropped once it is the same */
	assert_int_equal(conflicts_begin(st, "test", id, sizeof(id)), 0);
	assert_int_equal(conflicts_save(st, id, sfd, "a"), 1);
	assert_int_equal(conflicts_save(st, id, sfd, "gone"), 0);
	/* a path below a symlink is no path of the store: nothing is kept
	 * (not the file the symlink leads to), and the copy of "a" stays */
	snprintf(q, sizeof(q), "%s/via", store);
	assert_int_equal(symlink(".", q), 0);
	assert_int_equal(conflicts_save(st, id, sfd, "via/a"), 0);
	assert_int_equal(conflicts_save_tree(st, id, sfd, "via/a"), 0);
	snprintf(q, sizeof(q), "%s/conflicts/%s/via", st, id);
	assert_int_equal(access(q, F_OK), -1);
	assert_int_equal(conflicts_drop_same(st, id, sfd, "via/a"), 0);	/* no copy */
	write_file(p, "theirs\n");
	assert_int_equal(conflicts_drop_same(st, id, sfd, "a"), 1);
	write_file(p, "mine\n");
	assert_int_equal(conflicts_drop_same(st, id, sfd, "a"), 0);
	assert_int_equal(conflicts_finish(st, id), 0);	/* empty: removed */
	snprintf(p, sizeof(p), "%s/conflicts/%s", st, id);
	assert_int_equal(access(p, F_OK), -1);
	close(sfd);
	snprintf(p, sizeof(p), "rm -rf %s", dir);
	assert_int_equal(system(p), 0);
}

/* Two versions of a regular file are the same only when both contents
 * were hashed: a file past the tail's hash budget goes by block hashes. */
static void test_entry_same_needs_hashes(void **state)
{
	struct proto_entry a = { .path = "f", .mode = S_IFREG | 0644, .size = 5,
				 .mtime_ns = 7, .nlink = 1 }, b = a;

	(void)state;
	assert_false(inventory_entry_same(&a, &b));
	a.flags = PROTO_ENTRY_F_HASHED;
	assert_false(inventory_entry_same(&a, &b));
	b.flags = PROTO_ENTRY_F_HASHED;
	assert_true(inventory_entry_same(&a, &b));
	b.hash[0] = 1;
	assert_false(inventory_entry_same(&a, &b));
	a.mode = b.mode = S_IFDIR | 0755;	/* folders have no content hash */
	a.flags = b.flags = 0;
	memset(a.hash, 0, 16);
	memset(b.hash, 0, 16);
	assert_true(inventory_entry_same(&a, &b));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keep_words),
		cmocka_unit_test(test_plans_agree),
		cmocka_unit_test(test_whole_folder_beside),
		cmocka_unit_test(test_tail_and_conflicts),
		cmocka_unit_test(test_entry_same_needs_hashes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
