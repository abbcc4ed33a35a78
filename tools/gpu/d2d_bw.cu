// SPDX-License-Identifier: Apache-2.0
/*
 * The GPU's device-to-device cudaMemcpy bandwidth (read + write traffic,
 * GB/s): the reference tools/gpu-check holds the transport's reduction
 * kernels against. Usage: d2d_bw [MIB] (default 1024: far beyond L2).
 * Prints "d2d_copy_gbps X" (the best of 10 timed copies after 2 warm-up
 * ones, as ice-devprof keeps its best repetition); exit 1 on a CUDA error.
 */
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define CK(x)                                                                                      \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "d2d_bw: %s: %s\n", #x, cudaGetErrorString(e_));          \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], nullptr, 10) : 1024;
	size_t len = mib << 20;
	float ms[10];
	void *a, *b;
	cudaEvent_t e0, e1;

	CK(cudaMalloc(&a, len));
	CK(cudaMalloc(&b, len));
	CK(cudaMemset(a, 1, len));
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	for (int i = -2; i < 10; i++) {
		float t;

		CK(cudaEventRecord(e0));
		CK(cudaMemcpyAsync(b, a, len, cudaMemcpyDeviceToDevice));
		CK(cudaEventRecord(e1));
		CK(cudaEventSynchronize(e1));
		CK(cudaEventElapsedTime(&t, e0, e1));
		if (i >= 0)
			ms[i] = t;
	}
	std::sort(ms, ms + 10);
	printf("d2d_copy_gbps %.1f\n", 2.0 * (double)len / (ms[0] * 1e-3) / 1e9);
	return 0;
}
