// SPDX-License-Identifier: Apache-2.0
/*
 * ccl_real_probe: calls into the real libnccl.so.2 (linked normally) and
 * prints what it saw, one "key value" line each, so test_ccl_real.sh can
 * compare a run with LD_PRELOAD=libice-ccl.so against one without.
 *   ccl_real_probe        no GPU needed: version, unique id, group, destroy
 *   ccl_real_probe gpu    one rank on GPU 0: init, all-reduce, destroy
 *                         (libcudart is opened at run time)
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef struct {
	char internal[128];
} probe_uid_t;

int ncclGetVersion(int *v);
int ncclGetUniqueId(probe_uid_t *id);
int ncclGroupStart(void);
int ncclGroupEnd(void);
int ncclCommDestroy(void *c);
int ncclCommInitRank(void **c, int n, probe_uid_t id, int r);
int ncclAllReduce(const void *s, void *r, size_t n, int t, int op, void *c, void *st);
const char *ncclGetErrorString(int rc);

static int probe_gpu(void)
{
	void *rt = dlopen("libcudart.so", RTLD_NOW);
	int (*set_dev)(int), (*dmalloc)(void **, size_t), (*sync)(void);
	void *comm = NULL, *buf = NULL;
	probe_uid_t id;
	int rc;

	if (rt == NULL)
		rt = dlopen("libcudart.so.13", RTLD_NOW);
	if (rt == NULL) {
		printf("cudart missing\n");
		return 77;
	}
	set_dev = (int (*)(int))dlsym(rt, "cudaSetDevice");
	dmalloc = (int (*)(void **, size_t))dlsym(rt, "cudaMalloc");
	sync = (int (*)(void))dlsym(rt, "cudaDeviceSynchronize");
	if (set_dev == NULL || dmalloc == NULL || sync == NULL || set_dev(0) != 0 ||
	    dmalloc(&buf, 1 << 20) != 0) {
		printf("no usable GPU\n");
		return 77;
	}
	printf("uniqueid_rc %d\n", ncclGetUniqueId(&id));
	rc = ncclCommInitRank(&comm, 1, id, 0);
	printf("init_rc %d\n", rc);
	if (rc != 0)
		return 1;
	for (int i = 0; i < 10; i++)
		rc |= ncclAllReduce(buf, buf, 1 << 18, 7, 0, comm, NULL);
	printf("allreduce_rc %d\n", rc);
	printf("sync_rc %d\n", sync());
	printf("destroy_rc %d\n", ncclCommDestroy(comm));
	return 0;
}

int main(int argc, char **argv)
{
	probe_uid_t id;
	int v = 0, rc;

	if (argc > 1 && strcmp(argv[1], "gpu") == 0)
		return probe_gpu();
	rc = ncclGetVersion(&v);
	printf("version_rc %d\nversion %d\n", rc, v);
	memset(&id, 0, sizeof(id));
	rc = ncclGetUniqueId(&id);
	/* the id is fresh each run: compare the result and that it was filled */
	{
		int filled = 0;

		for (size_t i = 0; i < sizeof(id.internal); i++)
			filled |= id.internal[i] != 0;
		printf("uniqueid_rc %d\nuniqueid_filled %d\n", rc, filled);
	}
	printf("groupstart_rc %d\n", ncclGroupStart());
	printf("groupend_rc %d\n", ncclGroupEnd());
	printf("destroy_null_rc %d\n", ncclCommDestroy(NULL));
	return 0;
}
