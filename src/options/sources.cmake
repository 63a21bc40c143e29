# The scope option set (docs/options.md): parsing, the default set, the lists.
list(APPEND SK_SOURCES
  options/options.c
  options/options_lists.c
)
