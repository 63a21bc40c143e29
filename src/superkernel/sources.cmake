list(APPEND SK_SOURCES
  superkernel/fuse.c
  superkernel/interp.c
  superkernel/options.c
  superkernel/options_lists.c
  superkernel/plan.c
  superkernel/plan_format.c
  superkernel/plan_schedule.c
)
