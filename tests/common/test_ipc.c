// SPDX-License-Identifier: Apache-2.0
/*
 * common/ice_ipc and the refusals built on it: what ice_ipc_check() lets
 * through and why it refuses; a control block that is a link, gives others
 * access or belongs to another user is refused by ice_ctrl_create() and
 * ice_ctrl_open() with the path and the reason in the log, and left alone;
 * a stale one that passes is replaced; a created block has the mode it
 * should; an event sender reports only to root's or its own socket, and
 * finds its agent again after a restart. Parts
 * that chown need root and are skipped without.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "ice_ctrl.h"
#include "ice_event.h"
#include "ice_ipc.h"
#include "ice_log.h"

#define OTHER_UID 54321 /* no such user: "another user's" file */

static char dir[] = "/tmp/ice-test-ipc-XXXXXX";
static char addr[32], shm[96];
static char logged[4096];

static void sink(int level, uint32_t sub, const char *line, void *arg)
{
	size_t n = strlen(logged);

	snprintf(logged + n, sizeof(logged) - n, "%s\n", line);
}

static void logged_has(const char *a, const char *b)
{
	if (strstr(logged, a) == NULL || (b != NULL && strstr(logged, b) == NULL))
		fail_msg("log lacks '%s' / '%s':\n%s", a, b != NULL ? b : "", logged);
	logged[0] = '\0';
}

static struct stat fake(mode_t mode, uid_t uid, gid_t gid)
{
	struct stat st = {.st_mode = mode, .st_uid = uid, .st_gid = gid};

	return st;
}

static void refused(const struct stat *st, mode_t type, const struct ice_ipc_perm *p,
		    const char *why_has)
{
	char why[160] = "";

	assert_int_equal(ice_ipc_check(st, type, p, why, sizeof(why)), -EPERM);
	if (strstr(why, why_has) == NULL)
		fail_msg("reason '%s' lacks '%s'", why, why_has);
}

static void test_check(void **state)
{
	struct ice_ipc_perm none, grp;
	struct group *g = getgrgid(getegid());
	uid_t me = geteuid();
	gid_t gid;
	struct stat st;
	char why[160];

	assert_non_null(g);
	assert_int_equal(ice_ipc_perm_init(&none, "icenosuchgroupxyz"), -ENOENT);
	assert_false(none.grouped);
	assert_int_equal(none.mode, 0600);
	assert_int_equal(ice_ipc_perm_init(&grp, g->gr_name), 0);
	assert_true(grp.grouped);
	assert_int_equal(grp.mode, 0660);
	gid = grp.gid;
	assert_int_equal(ice_ipc_perm_init(&grp, "a-group-name-longer-than-thirty-one-bytes"),
			 -EINVAL);
	assert_int_equal(ice_ipc_perm_init(&grp, g->gr_name), 0);
	setenv(ICE_IPC_GROUP_ENV, "icenosuchgroupxyz", 1);
	assert_string_equal(ice_ipc_group_default(), "icenosuchgroupxyz");
	unsetenv(ICE_IPC_GROUP_ENV);
	assert_string_equal(ice_ipc_group_default(), "ice");

	/* what passes */
	st = fake(S_IFREG | 0600, me, 4242);
	assert_int_equal(ice_ipc_check(&st, S_IFREG, &none, why, sizeof(why)), 0);
	st = fake(S_IFREG | 0600, 0, 4242);
	assert_int_equal(ice_ipc_check(&st, S_IFREG, &none, why, sizeof(why)), 0);
	st = fake(S_IFSOCK | 0660, 0, gid);
	assert_int_equal(ice_ipc_check(&st, S_IFSOCK, &grp, why, sizeof(why)), 0);
	st = fake(S_IFREG | 0640, me, gid);
	assert_int_equal(ice_ipc_check(&st, S_IFREG, &grp, why, sizeof(why)), 0);

	/* what does not, and why */
	st = fake(S_IFLNK | 0777, me, gid);
	refused(&st, S_IFREG, &grp, "is a symbolic link, expected a regular file");
	st = fake(S_IFREG | 0600, me, gid);
	refused(&st, S_IFSOCK, &grp, "is a regular file, expected a socket");
	st = fake(S_IFIFO | 0600, me, gid);
	refused(&st, S_IFREG, &grp, "is a FIFO");
	st = fake(S_IFREG | 0600, me == OTHER_UID ? 1 : OTHER_UID, gid);
	refused(&st, S_IFREG, &grp, "owned by uid");
	st = fake(S_IFSOCK | 0666, 0, gid);
	refused(&st, S_IFSOCK, &grp, "mode 0666 gives others access");
	st = fake(S_IFREG | 0604, 0, gid);
	refused(&st, S_IFREG, &grp, "gives others access");
	st = fake(S_IFREG | 04600, 0, gid);
	refused(&st, S_IFREG, &grp, "set-id or sticky");
	st = fake(S_IFREG | 0660, 0, gid + 1);
	refused(&st, S_IFREG, &grp, "expected group");
	st = fake(S_IFREG | 0660, 0, gid);
	refused(&st, S_IFREG, &none, "group 'icenosuchgroupxyz' does not exist");
}

static void test_check_dir(void **state)
{
	struct ice_ipc_perm p;
	char d[128], why[160];

	ice_ipc_perm_init(&p, "icenosuchgroupxyz");
	snprintf(d, sizeof(d), "%s/d", dir);
	assert_int_equal(mkdir(d, 0755), 0);
	assert_int_equal(ice_ipc_check_dir(d, &p, why, sizeof(why)), 0);
	assert_int_equal(chmod(d, 0775), 0);
	assert_int_equal(ice_ipc_check_dir(d, &p, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "lets group or others replace files"));
	assert_int_equal(chmod(d, 01777), 0); /* like /tmp: nobody replaces ours */
	assert_int_equal(ice_ipc_check_dir(d, &p, why, sizeof(why)), 0);
	assert_int_equal(ice_ipc_check_dir("/nonexistent/ice", &p, why, sizeof(why)), -ENOENT);
	rmdir(d);
}

static bool is_root(void)
{
	return geteuid() == 0;
}

static void put_file(const char *path, mode_t mode, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, mode);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void test_ctrl_refusals(void **state)
{
	struct ice_ipc_perm p;
	char target[128];
	struct ice_ctrl *c;
	struct stat st;

	ice_ipc_perm_init(&p, "icenosuchgroupxyz");
	setenv(ICE_IPC_GROUP_ENV, "icenosuchgroupxyz", 1);
	unlink(shm);

	/* a link: never followed, never removed, the target untouched */
	snprintf(target, sizeof(target), "%s/target", dir);
	put_file(target, 0600, 0);
	assert_int_equal(symlink(target, shm), 0);
	errno = 0;
	assert_null(ice_ctrl_create(addr, &p));
	assert_int_equal(errno, ELOOP);
	logged_has(shm, "is a symbolic link");
	assert_null(ice_ctrl_open(addr, NULL));
	assert_int_equal(errno, ELOOP);
	logged_has(shm, "symbolic link");
	assert_int_equal(lstat(shm, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(stat(target, &st), 0);
	assert_int_equal(st.st_size, 0);
	unlink(shm);

	/* others may write it: refused and left there */
	put_file(shm, 0666, sizeof(struct ice_ctrl));
	assert_null(ice_ctrl_create(addr, &p));
	assert_int_equal(errno, EPERM);
	logged_has(shm, "mode 0666 gives others access");
	assert_null(ice_ctrl_open(addr, NULL));
	assert_int_equal(errno, EPERM);
	logged_has(shm, "gives others access");
	assert_int_equal(access(shm, F_OK), 0);
	unlink(shm);

	/* another user's */
	if (is_root()) {
		put_file(shm, 0600, sizeof(struct ice_ctrl));
		assert_int_equal(chown(shm, OTHER_UID, OTHER_UID), 0);
		assert_null(ice_ctrl_create(addr, &p));
		assert_int_equal(errno, EPERM);
		logged_has(shm, "owned by uid 54321");
		assert_int_equal(access(shm, F_OK), 0);
		unlink(shm);
	}

	/* ours but stale (a dead process's, not a block): replaced */
	put_file(shm, 0600, 100);
	c = ice_ctrl_create(addr, &p);
	assert_non_null(c);
	logged_has(shm, "stale");
	assert_int_equal(stat(shm, &st), 0);
	assert_int_equal(st.st_size, sizeof(struct ice_ctrl));
	assert_int_equal(st.st_mode & 07777, 0600);
	ice_ctrl_close(c);

	/* a transport maps it; a second create takes it over with its slots */
	c = ice_ctrl_open(addr, NULL);
	assert_non_null(c);
	assert_int_equal(ice_ctrl_claim(c, 77), 0);
	ice_ctrl_close(c);
	c = ice_ctrl_create(addr, &p);
	assert_non_null(c);
	assert_int_equal(ice_ctrl_find(c, 77), 0);
	ice_ctrl_close(c);
	assert_int_equal(ice_ctrl_unlink(addr), 0);
	unsetenv(ICE_IPC_GROUP_ENV);
}

/* A group: the block is created root:<group> 0660, and taken over (and
 * given the group) from an earlier 0600 one. Root only (fchown). */
static void test_ctrl_group(void **state)
{
	struct ice_ipc_perm p;
	struct group *g;
	struct ice_ctrl *c;
	struct stat st;

	if (!is_root())
		skip();
	g = getgrgid(0);
	assert_non_null(g);
	assert_int_equal(ice_ipc_perm_init(&p, g->gr_name), 0);
	unlink(shm);
	umask(077); /* the mode is set, not left to the umask */
	c = ice_ctrl_create(addr, &p);
	umask(022);
	assert_non_null(c);
	assert_int_equal(stat(shm, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0660);
	assert_int_equal(st.st_gid, 0);
	ice_ctrl_close(c);
	/* a reader of another group name refuses the group bits */
	setenv(ICE_IPC_GROUP_ENV, "icenosuchgroupxyz", 1);
	assert_null(ice_ctrl_open(addr, NULL));
	assert_int_equal(errno, EPERM);
	logged_has(shm, "does not exist");
	unsetenv(ICE_IPC_GROUP_ENV);
	assert_non_null(c = ice_ctrl_open(addr, &p));
	ice_ctrl_close(c);
	assert_int_equal(chmod(shm, 0600), 0);
	c = ice_ctrl_create(addr, &p);
	assert_non_null(c);
	assert_int_equal(stat(shm, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0660);
	ice_ctrl_close(c);
	ice_ctrl_unlink(addr);
}

static void test_event_peer(void **state)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct ice_event_tx *tx;
	char path[sizeof(sa.sun_path)];
	int fd;

	snprintf(path, sizeof(path), "%s/agent.sock", dir);
	setenv("ICE_AGENT_SOCK", path, 1);
	/* no agent yet: a sender all the same (sends are dropped) */
	tx = ice_event_tx_open("127.0.0.1", "test");
	assert_non_null(tx);
	ice_event_tx_close(tx);
	/* not a socket */
	put_file(path, 0600, 0);
	assert_null(ice_event_tx_open("127.0.0.1", "test"));
	assert_int_equal(errno, EPERM);
	logged_has(path, "is not a socket");
	unlink(path);
	/* our own socket (whatever its mode: the kernel checks the senders) */
	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	tx = ice_event_tx_open("127.0.0.1", "test");
	assert_non_null(tx);
	ice_event_tx_close(tx);
	/* another user's: someone else is listening there */
	if (is_root()) {
		assert_int_equal(chown(path, OTHER_UID, OTHER_UID), 0);
		assert_null(ice_event_tx_open("127.0.0.1", "test"));
		assert_int_equal(errno, EPERM);
		logged_has(path, "owned by uid 54321");
	}
	close(fd);
	unlink(path);
	unsetenv("ICE_AGENT_SOCK");
}

/* A socket bound at path, the agent's end. */
static int agent_at(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* the agent at fd got one datagram of want events, the first of seq `seq` */
static void got(int fd, unsigned int want, uint64_t seq)
{
	struct ice_event ev[4];

	assert_int_equal(recv(fd, ev, sizeof(ev), MSG_DONTWAIT), (ssize_t)(want * sizeof(ev[0])));
	assert_int_equal(ev[0].magic, ICE_EVENT_MAGIC);
	assert_int_equal(ev[0].seq, seq);
	assert_int_equal(recv(fd, ev, sizeof(ev), MSG_DONTWAIT), -1);
}

/* The sender connects to the agent's socket: none at first (dropped, and
 * looked for again a second later), then one, then a new one after the
 * first went away (looked for at once), then none again. */
static void test_event_link(void **state)
{
	struct ice_event ev = {.kind = ICE_EV_COMM_INIT}, three[3] = {{0}};
	struct ice_event_tx *tx;
	char path[108];
	int fd, fd2;

	snprintf(path, sizeof(path), "%s/agent-link.sock", dir);
	setenv("ICE_AGENT_SOCK", path, 1);
	tx = ice_event_tx_open("127.0.0.1", "test");
	assert_non_null(tx);
	assert_int_equal(ice_event_send(tx, &ev), -ENOENT);
	assert_int_equal(ice_event_send_many(tx, three, 3), -ENOENT);
	assert_int_equal(ice_event_dropped(tx), 4);
	/* an agent now: not looked for before the second is up */
	fd = agent_at(path);
	assert_int_equal(ice_event_send(tx, &ev), -ENOENT);
	usleep(1100 * 1000);
	assert_int_equal(ice_event_send(tx, &ev), 0);
	got(fd, 1, 6);
	assert_int_equal(ice_event_send_many(tx, three, 3), 3);
	got(fd, 3, 7);
	/* the agent restarts: the next event reaches the new one */
	close(fd);
	unlink(path);
	fd2 = agent_at(path);
	assert_int_equal(ice_event_send(tx, &ev), 0);
	got(fd2, 1, 10);
	/* and goes away */
	close(fd2);
	unlink(path);
	assert_int_equal(ice_event_send(tx, &ev), -ENOENT);
	assert_int_equal(ice_event_dropped(tx), 6);
	ice_event_tx_close(tx);
	unsetenv("ICE_AGENT_SOCK");
}

static int setup(void **state)
{
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(addr, sizeof(addr), "127.98.%d.%d", (int)(getpid() / 250 % 250),
		 (int)(getpid() % 250 + 1));
	snprintf(shm, sizeof(shm), ICE_CTRL_PATH_FMT, addr);
	ice_log_set_sink(sink, NULL);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	ice_log_set_sink(NULL, NULL);
	unlink(shm);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check),	      cmocka_unit_test(test_check_dir),
		cmocka_unit_test(test_ctrl_refusals), cmocka_unit_test(test_ctrl_group),
		cmocka_unit_test(test_event_peer),    cmocka_unit_test(test_event_link),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
