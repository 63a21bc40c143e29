list(APPEND SK_SOURCES
  checkpoint/safetensors.c
  checkpoint/checkpoint.c)
