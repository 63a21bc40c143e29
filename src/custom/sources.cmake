# Custom (user) kernels: registration as ops, runtime-only fusion.
list(APPEND SK_SOURCES
  custom/kernel.c
  custom/runtime_fusion.c
)
