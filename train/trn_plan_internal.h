// SPDX-License-Identifier: Apache-2.0
/*
 * What trn_plan.c (data parallel) and trn_plan_pp.c (pipelines) share:
 * the argument check and the local search both planners refine with.
 */
#ifndef TRN_PLAN_INTERNAL_H
#define TRN_PLAN_INTERNAL_H

#include <stddef.h>

#include "trn.h"

/* 0, or -EINVAL for a model, devices or network the predictor cannot price. */
int trn_plan_check(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		   const struct trn_net *net);

/* A local search over the plans next to a plan. */
struct trn_plan_climb {
	const struct trn_model *m;
	const struct trn_profile *dev;
	int ndev;
	const struct trn_net *net;
	/* Turns q, a copy of the current plan, into its neighbour i and
	 * predicts it (*step). Returns 1, 0 when there is no neighbour i, or a
	 * negative errno. */
	int (*move)(const struct trn_plan_climb *c, void *q, int i, double *step);
};

/* Steepest descent from the plan p of size bytes (predicted step): each
 * round moves p to the neighbour among 0..nmoves-1 that shortens the step
 * most, until none does or rounds ran out. scratch holds two plans. */
int trn_plan_climb(const struct trn_plan_climb *c, void *p, size_t size, void *scratch, double step,
		   int rounds, int nmoves);

/* trn_mem_rank from the sums of the rank's layers [a, e) (the split
 * search keeps them as prefix sums): parameters, layer inputs, in_a,
 * out_{e-1}, the outputs of [a, e - 1); widest: trn_model_widest(m). */
struct trn_mem_sums {
	double params, inputs, in_first, out_last, inner_outs;
};
void trn_mem_from(const struct trn_model *m, const struct trn_profile *d, int ndev,
		  const struct trn_mem_sums *x, double widest, int slots, int rows, bool first,
		  bool last, bool zb, bool dp, struct trn_mem *out);

#endif
