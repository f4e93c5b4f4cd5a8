/*
 * splitres — the secondary's part in `twinfs resolve` and `--restore`
 * (splitres.h). The plan is the one the primary computes
 * (netsync/roles/resolution.c), from this side: what this node loses goes
 * to STATE/conflicts/<stamp>-resolve before anything is sent, so that no
 * version depends on the connection surviving. Serve's loop thread.
 */
#include "netsync/secondary/splitres.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/json.h"
#include "common/log.h"
#include "netsync/control/ctljson.h"
#include "netsync/roles/conflicts.h"
#include "netsync/roles/resolution.h"
#include "netsync/secondary/versions.h"

static void splitres_reply(struct evbuffer *reply, const char *err, const char *result,
			   const struct resolution *plan)
{
	struct ctljson j;
	char line[4400];

	ctljson_begin(&j, reply);
	ctljson_bool(&j, "ok", err[0] == '\0');
	if (err[0])
		ctljson_str(&j, "error", err);
	else
		ctljson_str(&j, "result", result);
	json_key(ctljson_json(&j), "plan");
	json_array_begin(ctljson_json(&j));
	for (size_t i = 0; plan && i < plan->n; i++) {
		resolution_describe(plan, false, i, line, sizeof(line));
		json_string(ctljson_json(&j), line);
	}
	json_array_end(ctljson_json(&j));
	ctljson_end(&j);
}

void splitres_ctl_resolve(const struct divergence *d, struct evbuffer *peer,
			  const char *node, const char *word, bool dry, struct evbuffer *reply)
{
	struct proto_resolve m = { .step = PROTO_RS_REQUEST };
	struct resolution plan = { 0 };
	enum proto_keep keep;
	char err[300] = "", stamp[32];

	if (resolution_keep(word, false, &keep) < 0)
		snprintf(err, sizeof(err), "--keep wants local, peer or both");
	else if (!peer)
		snprintf(err, sizeof(err), "no split brain to resolve (the primary must be "
			 "connected and in a split brain: see twinfs status)");
	if (!err[0]) {
		resolution_stamp(stamp, sizeof(stamp));
		if (resolution_plan(d, false, keep, node, stamp, &plan) < 0)
			snprintf(err, sizeof(err), "out of memory");
	}
	if (!err[0] && !dry) {
		/* the primary leads: it answers with RESOLVE BEGIN */
		m.keep = (uint8_t)keep;
		if (proto_encode_resolve(peer, &m) < 0)
			snprintf(err, sizeof(err), "cannot ask the primary");
	}
	splitres_reply(reply, err, dry ? "dry-run" : "started", &plan);
	resolution_free(&plan);
}

const char *splitres_begin(const struct divergence *d, const struct proto_resolve *m,
			   const char *state, int store_fd, const char *node, struct evbuffer *out)
{
	struct proto_resolve r = { .step = PROTO_RS_FILES };
	struct resolution plan;
	static char err[300];
	long long rc;

	err[0] = '\0';
	rc = resolution_plan(d, false, (enum proto_keep)m->keep, m->name, m->stamp, &plan);
	/* a path held back after the primary planned: both plans must agree */
	if (rc >= 0 && m->seq != d->held)
		rc = -ESTALE;
	/* a folder the primary's replaces, or one that moved (whole): with
	 * what it holds */
	for (size_t i = 0; rc >= 0 && i < plan.n; i++)
		if (plan.it[i].s_saves)
			rc = (S_ISDIR(plan.it[i].e->peer.mode) && !plan.it[i].e->whole ?
			      conflicts_save : conflicts_save_tree)(state, plan.folder, store_fd,
								    plan.it[i].e->path);
	/* a folder where the primary has none, or one that moved, goes with
	 * what it holds; where both have one, its entries are listed on
	 * their own */
	for (size_t i = 0; rc >= 0 && i < plan.n; i++)
		if (plan.it[i].s_sends)
			rc = S_ISDIR(plan.it[i].e->peer.mode) && !plan.it[i].e->whole ?
			     versions_send(out, store_fd, plan.it[i].e->path, plan.it[i].e->path) :
			     versions_send_path(out, store_fd, plan.it[i].e->path);
	if (rc >= 0)
		conflicts_finish(state, plan.folder);
	if (rc < 0) {
		if (rc == -ESTALE)
			snprintf(err, sizeof(err), "%s held back another path meanwhile; "
				 "run resolve again", node);
		else
			snprintf(err, sizeof(err), "%s cannot send its versions: %s", node,
				 strerror((int)-rc));
		r.step = PROTO_RS_FAILED;
		r.name = err;
	}
	log_warn("RESOLVING the split brain as the primary asks", "keep=%u paths=%zu "
		 "conflicts=%s%s%s", m->keep, plan.n, plan.folder, err[0] ? " err=" : "", err);
	resolution_free(&plan);
	proto_encode_resolve(out, &r);
	return err[0] ? err : NULL;
}

void splitres_ctl_restore(const char *state, const char *folder, struct evbuffer *peer,
			  char *restoring, size_t len, struct evbuffer *reply)
{
	struct proto_resolve m = { .step = PROTO_RS_RESTORE };
	char err[300] = "", stamp[32], dir[4300];
	int fd = -1, n = 0;

	snprintf(dir, sizeof(dir), "%s/conflicts/%s", state, folder);
	if (!folder[0] || strchr(folder, '/') || folder[0] == '.')
		snprintf(err, sizeof(err), "name a folder of conflicts/ (twinfs status lists them)");
	else if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		snprintf(err, sizeof(err), "no folder conflicts/%s here", folder);
	else if (!peer)
		snprintf(err, sizeof(err), "the primary is not connected: the copies are written "
			 "through its mount");
	else if (restoring[0])
		snprintf(err, sizeof(err), "a restore of %s is running", restoring);
	if (!err[0]) {
		resolution_stamp(stamp, sizeof(stamp));
		m.stamp = stamp;
		proto_encode_resolve(peer, &m);
		n = versions_send_tree(peer, fd);
		m.step = PROTO_RS_FILES;
		proto_encode_resolve(peer, &m);
		if (n < 0)
			snprintf(err, sizeof(err), "cannot read conflicts/%s: %s", folder,
				 strerror(-n));
		else
			snprintf(restoring, len, "%s", folder);
	}
	if (fd >= 0)
		close(fd);
	splitres_reply(reply, err, "started", NULL);
}

void splitres_restored(const char *state, char *restoring, const struct proto_resolve *m,
		       char *err, size_t len)
{
	if (!restoring[0])
		return;
	if (m->step == PROTO_RS_DONE) {
		/* the copies are the store's content now, on both nodes */
		log_warn("RESTORED a folder of conflict copies into the primary's store",
			 "folder=%s", restoring);
		conflicts_remove(state, restoring);
	} else {
		log_error("the primary could not restore the conflict copies", "folder=%s "
			  "why=\"%s\"", restoring, m->name);
		snprintf(err, len, "restore of %s failed on the primary: %s", restoring, m->name);
	}
	restoring[0] = '\0';
}
