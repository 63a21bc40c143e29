/* From a compiled program's nodes and the graph's scopes to the run's steps:
 * eager launches and super kernels (one plan per scope, or per part when
 * strict-scope-check splits a scope), in an order that respects every data
 * and event edge. */
#ifndef SK_COMPILE_FUSE_H
#define SK_COMPILE_FUSE_H

#include "program/program.h"
#include "compile/node_deps.h"
#include "options/options.h"

/* Fills p->steps. Needs p->executor, p->tiled_cores and the nodes; the
 * graph gives the scopes. default_options applies to scopes that give none. */
sk_status sk__program_build_steps(sk_program *p, const sk_graph *g, const char *default_options);


#endif
