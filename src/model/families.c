/* The families the model builder takes: adding one is a family_*.c file
 * and a line here. */
#include <pthread.h>
#include <string.h>

#include "model/family.h"

extern const sk__family sk__family_llama, sk__family_qwen3_moe, sk__family_mixtral, sk__family_olmoe,
    sk__family_deepseek;

static const sk__family *const families[] = {&sk__family_llama, &sk__family_qwen3_moe, &sk__family_mixtral,
                                             &sk__family_olmoe, &sk__family_deepseek};
#define N_FAMILIES (sizeof families / sizeof families[0])

const sk__family *sk__family_find(const char *model_type) {
  for (size_t i = 0; i < N_FAMILIES; i++)
    if (model_type && sk__word_in_list(model_type, families[i]->model_types)) return families[i];
  return NULL;
}

/* The list for messages, made once from the table: "llama, mistral, ...". */
static char names[512];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void make_names(void) {
  size_t n = 0;
  for (size_t i = 0; i < N_FAMILIES; i++)
    for (const char *p = families[i]->model_types; *p && n + 3 < sizeof names; p++) {
      const bool first_letter = p == families[i]->model_types;
      if (first_letter && n) names[n++] = ',', names[n++] = ' ';
      if (*p == ' ') names[n++] = ',';
      names[n++] = *p;
    }
  names[n] = '\0';
}

const char *sk__family_names(void) {
  pthread_once(&names_once, make_names);
  return names;
}
