list(APPEND SK_SOURCES
  core/alloc.c
  core/cpu.c
  core/dtype.c
  core/fsize_guard.c
  core/executor.c
  core/fork.c
  core/log.c
  core/run_error.c
  core/status.c
  core/struct_size.c
  core/tensor.c
  core/text.c
  core/version.c
)
