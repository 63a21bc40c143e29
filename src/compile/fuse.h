/* From a compiled program's nodes and the graph's scopes to the run's steps:
 * eager launches and super kernels (one plan per scope, or per part when
 * strict-scope-check splits a scope), in an order that respects every data
 * and event edge. */
#ifndef SK_SUPERKERNEL_FUSE_H
#define SK_SUPERKERNEL_FUSE_H

#include "program/program.h"
#include "compile/node_deps.h"
#include "options/options.h"

/* Fills p->steps. Needs p->executor, p->tiled_cores and the nodes; the
 * graph gives the scopes. default_options applies to scopes that give none. */
sk_status sk__program_build_steps(sk_program *p, const sk_graph *g, const char *default_options);

/* The step builder both compile paths share: sk_compile (above, from a
 * graph) and runtime-only fusion (one scope of kernels in a chain). Each
 * node's scope is p->nodes[i].scope (-1: none); scope s is named names[s]
 * and runs under options[s]; d gives every node's dependencies. */
sk_status sk__build_steps(sk_program *p, size_t n_scopes, const char *const *names, const sk__options *options,
                          const sk__node_deps *d);

#endif
