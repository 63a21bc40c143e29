list(APPEND SK_SOURCES
  exec/describe.c
  exec/compile.c
  exec/program.c
  exec/run.c
  exec/bind.c
  exec/run_context.c
  exec/tokens.c
)
