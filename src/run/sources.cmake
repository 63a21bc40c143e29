# Running a program: run contexts, binding, the run loop.
list(APPEND SK_SOURCES
  run/bind.c
  run/run.c
  run/tokens.c
)
