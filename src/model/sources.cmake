list(APPEND SK_SOURCES
  model/config_read.c
  model/families.c
  model/family_llama.c
  model/family_qwen3_moe.c
  model/family_mixtral.c
  model/family_olmoe.c
  model/family_deepseek.c
  model/graph_build.c
  model/attention_graph.c
  model/ffn_graph.c
  model/w8a8_graph.c
  model/weight_store.c
  model/decoder_graph.c
  model/moe_block.c
  model/model.c)
