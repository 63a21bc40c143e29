list(APPEND SK_SOURCES
  superkernel/fuse.c
  superkernel/interp.c
  superkernel/launch.c
  superkernel/launch_state.c
  superkernel/launch_order.c
  superkernel/node_deps.c
  superkernel/options.c
  superkernel/options_lists.c
  superkernel/plan.c
  superkernel/plan_format.c
  superkernel/plan_schedule.c
)
