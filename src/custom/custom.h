/* Custom (user) kernels: the internal side of the "Custom kernels" section
 * of superkernel.h.
 *
 * A registered kernel is an op like the built-in ones: sk_kernel_register
 * generates an sk__op_def for it (one input slot "x" holding a list of
 * tensors; tile = block_count; run_block calls the entry; no footprint, so
 * consumers inside a super kernel wait for all of its blocks) and adds it to
 * the op registry. Runtime-only fusion (runtime_fusion.c) uses the same
 * op definition on nodes of an internal program that has no tensors: there
 * the node's params carry the launch's argument list instead. */
#ifndef SK_CUSTOM_CUSTOM_H
#define SK_CUSTOM_CUSTOM_H

#include "ops/op.h"
#include "runtime/barrier.h"

struct sk_kernel {
  sk__op_def def;      /* first: the registry points here */
  sk_kernel_desc desc; /* a copy; desc.name points at name */
  char name[64];
};

/* An exec node's params for a custom kernel. In a graph node args is NULL
 * (the argument list is built from the bound tensors for each block); in
 * runtime-only fusion it is the current launch's argument list. */
typedef struct sk__custom_params {
  const sk_kernel *kernel;
  void *const *args;
} sk__custom_params;

struct sk_kernel_ctx {
  sk__barrier_t *barrier; /* NULL: a one-participant view (returns at once) */
  const sk_kernel *kernel;
  const sk__node_io *io;  /* the node's tensors (none without a graph) */
};

#endif
