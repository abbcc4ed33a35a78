// SPDX-License-Identifier: Apache-2.0
/*
 * icectl keygen: an Ed25519 key pair for the controller's plans
 * (common/ice_plan.h, docs/security.md). DIR/NAME.key is the private key
 * (PEM PKCS#8, 0600) for ice-controller --key; DIR/NAME.pub its public key
 * (PEM, 0644) for the agents' plan_pubkeys. Neither file may exist already:
 * a key is never overwritten. Prints the key id plans will carry. Redis is
 * not touched.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "icectl.h"
#include "ice_config.h"
#include "ice_plan.h"

/* text into a new file (O_EXCL: never over a key) of that mode */
static int write_new(const char *path, const char *text, mode_t mode)
{
	size_t len = strlen(text);
	int fd, ret = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0) {
		ret = -errno;
		fprintf(stderr, "icectl keygen: cannot create %s: %s%s\n", path, strerror(-ret),
			ret == -EEXIST ? " (keys are never overwritten: remove it or give another "
					 "--name)"
				       : "");
		return ret;
	}
	if (fchmod(fd, mode) < 0 || write(fd, text, len) != (ssize_t)len || fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
	if (ret < 0) {
		fprintf(stderr, "icectl keygen: cannot write %s: %s\n", path, strerror(-ret));
		unlink(path);
	}
	return ret;
}

int ictl_keygen(struct ictl *x)
{
	char key_path[PATH_MAX], pub_path[PATH_MAX];
	struct ice_plan_key k;
	char *priv = NULL, *pub = NULL;
	int ret = ICTL_EXIT_BAD;

	if (x->name[0] == '\0' || !ice_cfg_name_ok(x->name)) {
		fprintf(stderr,
			"icectl keygen: --name '%s': expected letters, digits, '.', '-' or '_'\n",
			x->name);
		return ICTL_EXIT_REDIS;
	}
	if ((size_t)snprintf(key_path, sizeof(key_path), "%s/%s.key", x->out, x->name) >=
		    sizeof(key_path) ||
	    (size_t)snprintf(pub_path, sizeof(pub_path), "%s/%s.pub", x->out, x->name) >=
		    sizeof(pub_path)) {
		fprintf(stderr, "icectl keygen: --out %s: path too long\n", x->out);
		return ICTL_EXIT_REDIS;
	}
	if (ice_plan_key_generate(&k) < 0) {
		fprintf(stderr, "icectl keygen: cannot make an Ed25519 key (OpenSSL)\n");
		return ICTL_EXIT_BAD;
	}
	priv = ice_plan_key_pem(&k, true);
	pub = ice_plan_key_pem(&k, false);
	if (priv == NULL || pub == NULL) {
		fprintf(stderr, "icectl keygen: cannot write the key as PEM: %s\n",
			strerror(errno));
		goto out;
	}
	if (write_new(key_path, priv, 0600) < 0)
		goto out;
	if (write_new(pub_path, pub, 0644) < 0) {
		unlink(key_path);
		goto out;
	}
	if (x->json) {
		json_t *o =
			json_pack("{s:s,s:s,s:s}", "kid", k.kid, "key", key_path, "pub", pub_path);

		ictl_json_print(o);
		json_decref(o);
	} else {
		printf("key id %s\n"
		       "  %s  private (0600): the controller's --key; keep it on the controller "
		       "hosts only\n"
		       "  %s  public (0644): append it to each agent's plan_pubkeys file\n",
		       k.kid, key_path, pub_path);
	}
	ret = 0;
out:
	if (priv != NULL) {
		explicit_bzero(priv, strlen(priv));
		free(priv);
	}
	free(pub);
	ice_plan_key_fini(&k);
	return ret;
}
