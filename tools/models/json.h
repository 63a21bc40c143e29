/*
 * json.h — a small strict JSON reader (RFC 8259) for the files a checkpoint
 * directory holds: config.json and the safetensors headers (checkpoint.c,
 * safetensors.c). It builds a tree; nothing in it is modified after parsing.
 *
 * Strict on purpose, since the input comes from files anyone may hand us:
 * one value and only whitespace around it, no trailing commas or comments,
 * strings valid escapes without control characters or NUL, nesting at most
 * SKJ_MAX_DEPTH deep, numbers by the JSON grammar. Errors name the byte
 * offset where parsing stopped.
 */
#ifndef SK_TOOLS_JSON_H
#define SK_TOOLS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SKJ_MAX_DEPTH 64

typedef enum skj_type { SKJ_NULL, SKJ_BOOL, SKJ_NUMBER, SKJ_STRING, SKJ_ARRAY, SKJ_OBJECT } skj_type;

typedef struct skj_value skj_value;
struct skj_value {
  skj_type type;
  bool boolean;
  double number;
  /* SKJ_NUMBER written as an integer (no fraction or exponent) that fits
   * int64: its exact value (a double loses digits above 2^53). */
  bool is_integer;
  int64_t integer;
  char *string;      /* SKJ_STRING: decoded UTF-8, NUL-terminated */
  size_t n;          /* SKJ_ARRAY / SKJ_OBJECT: the items */
  skj_value *items;  /* the elements, or the members' values */
  char **keys;       /* SKJ_OBJECT: the members' names, decoded */
};

/* Parses text[0..len) into *root. On failure returns false, writes why
 * (with the byte offset) into msg, and leaves *root empty (SKJ_NULL). */
bool skj_parse(const char *text, size_t len, skj_value *root, char *msg, size_t msg_size);
/* Frees what skj_parse allocated under v (v itself is the caller's). */
void skj_free(skj_value *v);

/* The value of member `key` of an object; NULL when v is not an object or
 * has no such member (the last one when the text repeats it). */
const skj_value *skj_get(const skj_value *v, const char *key);
/* "null", "boolean", "number", "string", "array", "object". */
const char *skj_type_name(skj_type type);

#endif
