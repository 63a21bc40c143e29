list(APPEND SK_SOURCES
  graph/add_op.c
  graph/graph.c
  graph/scope.c
  graph/tokens.c
)
