list(APPEND SK_SOURCES
  core/alloc.c
  core/amx_state.c
  core/cpu.c
  core/dtype.c
  core/fsize_guard.c
  core/executor.c
  core/fork.c
  core/log.c
  core/numerics.c
  core/run_error.c
  core/status.c
  core/struct_size.c
  core/tensor.c
  core/text.c
  core/version.c
)
# TILERELEASE: run only on a thread whose tiles the AMX kernel configured.
set_source_files_properties(core/amx_state.c PROPERTIES COMPILE_OPTIONS "-mamx-tile")
