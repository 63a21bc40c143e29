# The compiled program as data: its lifetime and queries, its plans, describe.
list(APPEND SK_SOURCES
  program/describe.c
  program/plan.c
  program/program.c
  program/run_context.c
  program/tokens.c
)
