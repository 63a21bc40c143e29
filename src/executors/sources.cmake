# The executors behind sk__step_executor (program/step.h): each a file, the
# JIT a folder (docs/jit.md); the launch services the super kernels share.
list(APPEND SK_SOURCES
  executors/eager.c
  executors/interpreter.c
  executors/launch.c
  executors/launch_state.c
  executors/jit/cache.c
  executors/jit/cache_dir.c
  executors/jit/codegen.c
  executors/jit/compile.c
  executors/jit/jit.c
  executors/jit/sha256.c
  executors/jit/spawn.c
)
