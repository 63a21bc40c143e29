/* The families the model builder takes: adding one is a family_*.c file
 * and a line here. */
#include <string.h>

#include "model/family.h"

extern const sk__family sk__family_llama, sk__family_qwen3_moe, sk__family_mixtral, sk__family_olmoe,
    sk__family_deepseek;

static const sk__family *const families[] = {&sk__family_llama, &sk__family_qwen3_moe, &sk__family_mixtral,
                                             &sk__family_olmoe, &sk__family_deepseek};

const sk__family *sk__family_find(const char *model_type) {
  for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
    if (model_type && sk__word_in_list(model_type, families[i]->model_types)) return families[i];
  return NULL;
}

const char *sk__family_names(void) { return "llama, mistral, qwen2, qwen3, qwen2_moe, qwen3_moe, mixtral, olmoe, deepseek_v2, deepseek_v3"; }
