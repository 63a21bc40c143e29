/*
 * json.c — json.h's strict reader: recursive descent over a bounded buffer
 * (the text need not be NUL-terminated), depth-limited so a hostile file
 * cannot exhaust the stack.
 */
#include "json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct reader {
  const char *p, *end, *start;
  char *msg;
  size_t msg_size;
  bool failed;
} reader;

static bool fail(reader *r, const char *fmt, ...) {
  if (r->failed) return false;
  r->failed = true;
  if (!r->msg || !r->msg_size) return false;
  char why[160];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  snprintf(r->msg, r->msg_size, "invalid JSON at byte %zu: %s", (size_t)(r->p - r->start), why);
  return false;
}

static void skip_space(reader *r) {
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) r->p++;
}

static bool literal(reader *r, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0) return fail(r, "unexpected character");
  r->p += n;
  return true;
}

static int hex4(const char *p) {
  int v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

static size_t put_utf8(char *out, unsigned cp) {
  if (cp < 0x80) return out[0] = (char)cp, 1;
  if (cp < 0x800) return out[0] = (char)(0xC0 | cp >> 6), out[1] = (char)(0x80 | (cp & 0x3F)), 2;
  if (cp < 0x10000)
    return out[0] = (char)(0xE0 | cp >> 12), out[1] = (char)(0x80 | (cp >> 6 & 0x3F)), out[2] = (char)(0x80 | (cp & 0x3F)), 3;
  out[0] = (char)(0xF0 | cp >> 18), out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
  out[2] = (char)(0x80 | (cp >> 6 & 0x3F)), out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* A string at r->p (its opening quote): decoded into a new buffer. The
 * decoded text is never longer than the escaped one. */
static char *string(reader *r) {
  if (r->p >= r->end || *r->p != '"') return fail(r, "expected a string"), NULL;
  const char *q = ++r->p;
  while (q < r->end && *q != '"') q += *q == '\\' && q + 1 < r->end ? 2 : 1;
  if (q >= r->end) return fail(r, "unterminated string"), NULL;
  char *out = malloc((size_t)(q - r->p) + 1), *w = out;
  if (!out) return fail(r, "out of memory"), NULL;
  while (r->p < q) {
    unsigned char c = (unsigned char)*r->p;
    if (c < 0x20) return free(out), fail(r, "control character in a string"), NULL;
    if (c != '\\') {
      *w++ = (char)c, r->p++;
      continue;
    }
    char e = r->p[1];
    r->p += 2;
    const char *simple = strchr("\"\\/bfnrt", e);
    if (e && simple) {
      *w++ = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
      continue;
    }
    if (e != 'u' || q - r->p < 4) return free(out), fail(r, "bad escape in a string"), NULL;
    int cp = hex4(r->p);
    r->p += 4;
    if (cp >= 0xD800 && cp < 0xDC00) { /* a surrogate pair: the low half must follow */
      int lo = q - r->p >= 6 && r->p[0] == '\\' && r->p[1] == 'u' ? hex4(r->p + 2) : -1;
      if (lo < 0xDC00 || lo > 0xDFFF) return free(out), fail(r, "unpaired surrogate in a string"), NULL;
      r->p += 6;
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    } else if (cp < 0 || (cp >= 0xDC00 && cp <= 0xDFFF)) {
      return free(out), fail(r, "bad \\u escape in a string"), NULL;
    }
    if (cp == 0) return free(out), fail(r, "NUL character in a string"), NULL;
    w += put_utf8(w, (unsigned)cp);
  }
  *w = '\0';
  r->p = q + 1;
  return out;
}

static bool number(reader *r, skj_value *v) {
  const char *s = r->p, *p = s;
  bool integral = true;
  if (p < r->end && *p == '-') p++;
  if (p < r->end && *p == '0') p++;
  else if (p < r->end && *p >= '1' && *p <= '9')
    while (p < r->end && *p >= '0' && *p <= '9') p++;
  else
    return fail(r, "unexpected character");
  if (p < r->end && *p == '.') {
    integral = false, p++;
    if (p >= r->end || *p < '0' || *p > '9') return r->p = p, fail(r, "digits expected after '.'");
    while (p < r->end && *p >= '0' && *p <= '9') p++;
  }
  if (p < r->end && (*p == 'e' || *p == 'E')) {
    integral = false, p++;
    if (p < r->end && (*p == '+' || *p == '-')) p++;
    if (p >= r->end || *p < '0' || *p > '9') return r->p = p, fail(r, "digits expected in the exponent");
    while (p < r->end && *p >= '0' && *p <= '9') p++;
  }
  char buf[128];
  if ((size_t)(p - s) >= sizeof buf) return fail(r, "number longer than %zu characters", sizeof buf - 1);
  memcpy(buf, s, (size_t)(p - s));
  buf[p - s] = '\0';
  v->type = SKJ_NUMBER;
  v->number = strtod(buf, NULL);
  if (integral) {
    errno = 0;
    long long i = strtoll(buf, NULL, 10);
    v->is_integer = errno == 0;
    v->integer = i;
  }
  r->p = p;
  return true;
}

static bool value(reader *r, skj_value *v, int depth);

/* The items of an array or object after its opening bracket; keys only for
 * objects. */
static bool items(reader *r, skj_value *v, char close, int depth) {
  size_t cap = 0;
  skip_space(r);
  if (r->p < r->end && *r->p == close) return r->p++, true;
  for (;;) {
    if (v->n == cap) {
      cap = cap ? cap * 2 : 4;
      skj_value *it = realloc(v->items, cap * sizeof *it);
      if (!it) return fail(r, "out of memory");
      v->items = it;
      if (close == '}') {
        char **k = realloc(v->keys, cap * sizeof *k);
        if (!k) return fail(r, "out of memory");
        v->keys = k;
      }
    }
    skj_value *item = &v->items[v->n];
    memset(item, 0, sizeof *item);
    skip_space(r);
    if (close == '}') {
      char *key = string(r);
      if (!key) return false;
      v->keys[v->n] = key;
      skip_space(r);
      if (r->p >= r->end || *r->p != ':') {
        v->n++; /* the key is freed with v */
        return fail(r, "expected ':' after a member name");
      }
      r->p++;
    }
    v->n++;
    if (!value(r, item, depth + 1)) return false;
    skip_space(r);
    if (r->p < r->end && *r->p == ',') {
      r->p++;
      continue;
    }
    if (r->p < r->end && *r->p == close) return r->p++, true;
    return fail(r, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
  }
}

static bool value(reader *r, skj_value *v, int depth) {
  if (depth > SKJ_MAX_DEPTH) return fail(r, "nested deeper than %d", SKJ_MAX_DEPTH);
  skip_space(r);
  if (r->p >= r->end) return fail(r, "unexpected end of text");
  switch (*r->p) {
    case '{': r->p++, v->type = SKJ_OBJECT; return items(r, v, '}', depth);
    case '[': r->p++, v->type = SKJ_ARRAY; return items(r, v, ']', depth);
    case '"': v->type = SKJ_STRING; return (v->string = string(r)) != NULL;
    case 't': v->type = SKJ_BOOL, v->boolean = true; return literal(r, "true");
    case 'f': v->type = SKJ_BOOL; return literal(r, "false");
    case 'n': return literal(r, "null");
    default: return number(r, v);
  }
}

bool skj_parse(const char *text, size_t len, skj_value *root, char *msg, size_t msg_size) {
  memset(root, 0, sizeof *root);
  reader r = {.p = text, .end = text + len, .start = text, .msg = msg, .msg_size = msg_size};
  if (!text) return fail(&r, "no text");
  bool ok = value(&r, root, 0);
  if (ok) {
    skip_space(&r);
    if (r.p != r.end) ok = fail(&r, "text after the value");
  }
  if (!ok) {
    skj_free(root);
    memset(root, 0, sizeof *root);
  }
  return ok;
}

void skj_free(skj_value *v) {
  if (!v) return;
  for (size_t i = 0; i < v->n; i++) {
    skj_free(&v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->string);
  v->items = NULL, v->keys = NULL, v->string = NULL, v->n = 0;
}

const skj_value *skj_get(const skj_value *v, const char *key) {
  if (!v || v->type != SKJ_OBJECT) return NULL;
  for (size_t i = v->n; i-- > 0;)
    if (strcmp(v->keys[i], key) == 0) return &v->items[i];
  return NULL;
}

const char *skj_type_name(skj_type type) {
  static const char *const names[] = {"null", "boolean", "number", "string", "array", "object"};
  return (unsigned)type < sizeof names / sizeof names[0] ? names[type] : "?";
}
