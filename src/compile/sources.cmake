# sk_compile: nodes, storage (the arena's layout), steps (fuse, launch order), the planner, token buckets.
list(APPEND SK_SOURCES
  compile/arena_plan.c
  compile/compile.c
  compile/fuse.c
  compile/launch_order.c
  compile/node_deps.c
  compile/plan_schedule.c
  compile/planner.c
  compile/tokens.c
)
