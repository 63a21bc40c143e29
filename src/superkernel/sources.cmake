# super-kernel sources (options, planner, ...)
list(APPEND SK_SOURCES
  superkernel/options.c
  superkernel/options_lists.c
)
