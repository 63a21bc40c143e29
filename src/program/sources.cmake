# The compiled program as data: its lifetime and queries, its plans, describe.
list(APPEND SK_SOURCES
  program/describe.c
  program/plan_format.c
  program/program.c
)
