# The JIT executor (docs/jit.md): codegen, the compiler, the cache, loading.
list(APPEND SK_SOURCES
  jit/cache.c
  jit/cache_dir.c
  jit/codegen.c
  jit/compile.c
  jit/jit.c
  jit/sha256.c
  jit/spawn.c
)
