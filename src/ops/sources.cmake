list(APPEND SK_SOURCES
  ops/registry.c
  ops/reshape.c
  ops/elementwise.c
  ops/cast.c
  ops/concat.c
  ops/grouped_matmul.c
  ops/grouped_matmul_tiling.c
  ops/quant_param.c
)
