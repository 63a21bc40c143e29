list(APPEND SK_SOURCES
  exec/program.c
  exec/run.c
)
