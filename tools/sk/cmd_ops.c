/*
 * sk ops [OP...] — print the built-in ops' schemas as the library declares
 * them (sk_op_info): each op's signature line, then its input slots with
 * their data rules, its attributes with defaults and ranges, its outputs.
 * The same table drives sk_graph_add_op's checks, the fuzzer, the
 * bad-input rows and the Python bindings; docs/ops.md's headings and the
 * public header's op list are checked against it (tests/python/test_op_docs.py).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sk.h"

static const char synopsis[] = "ops [OP...]";

static void usage(void) {
  printf("usage: sk %s\n\n"
         "Prints the schema of every built-in op (or of the OPs named, registered custom\n"
         "kernels included): a signature line \"op(slots; attributes) -> outputs\", then\n"
         "per input slot its dtypes, ranks and dtype rule, per attribute its kind, default\n"
         "and range, per output its doc line.\n\n"
         "  -h, --help    this help\n",
         synopsis);
}

/* "fp32|fp16|bf16" of a dtype mask; "any" for 0. */
static const char *dtypes_text(unsigned mask, char *buf, size_t size) {
  buf[0] = '\0';
  if (!mask) return "any dtype";
  for (int d = SK_DTYPE_INVALID + 1; d < SK_DTYPE_COUNT_; d++)
    if (mask & SK_DTYPE_BIT(d)) {
      size_t len = strlen(buf);
      snprintf(buf + len, size - len, "%s%s", len ? "|" : "", sk_dtype_name((sk_dtype)d));
    }
  return buf;
}

static const char *kind_text(sk_attr_kind kind) {
  return kind == SK_ATTR_KIND_INT ? "int" : kind == SK_ATTR_KIND_FLOAT ? "float" : "ints";
}

static void print_schema(const sk_op_schema *s) {
  printf("%s(", s->name);
  for (size_t i = 0; i < s->n_inputs; i++)
    printf("%s%s%s%s", i ? ", " : "", s->inputs[i].name, s->inputs[i].is_list ? "[]" : "",
           s->inputs[i].is_optional ? "?" : "");
  for (size_t i = 0; i < s->n_attrs; i++) printf("%s%s", i ? ", " : "; ", s->attrs[i].name);
  printf(") ->");
  for (size_t i = 0; i < s->n_outputs; i++)
    printf("%s %s%s", i ? "," : "", s->outputs[i].name, s->outputs[i].is_list ? "[]" : "");
  printf("%s\n    %s\n", s->is_view ? "  (a view)" : "", s->doc ? s->doc : "");
  for (size_t i = 0; i < s->n_inputs; i++) {
    const sk_op_slot_info *in = &s->inputs[i];
    /* Its rules as one comma-separated column: dtypes, rank, dtype rule, optional. */
    char dt[96], rules[256] = "";
    size_t len = 0;
#define RULE(...) (len += (size_t)snprintf(rules + len, len < sizeof rules ? sizeof rules - len : 0, __VA_ARGS__))
    if (in->dtypes || !in->same_dtype_as) RULE("%s", dtypes_text(in->dtypes, dt, sizeof dt));
    const char *sep = len ? ", " : "";
    if (in->max_rank < 0) RULE("%srank >= %d", sep, in->min_rank);
    else if (in->min_rank && in->min_rank == in->max_rank) RULE("%srank %d", sep, in->min_rank);
    else if (in->min_rank || in->max_rank) RULE("%srank %d..%d", sep, in->min_rank, in->max_rank);
    if (in->same_dtype_as) RULE("%sdtype of %s", len ? ", " : "", s->inputs[in->same_dtype_as - 1].name);
    if (in->is_optional) RULE("%soptional", len ? ", " : "");
#undef RULE
    printf("  input  %-24s %s  %s\n", in->name, rules, in->doc ? in->doc : "");
  }
  for (size_t i = 0; i < s->n_attrs; i++) {
    const sk_op_attr_info *a = &s->attrs[i];
    char def[64] = "", range[64] = "";
    if (a->is_required) snprintf(def, sizeof def, "required");
    else if (a->has_default && a->kind == SK_ATTR_KIND_FLOAT) snprintf(def, sizeof def, "default %g", a->default_float);
    else if (a->has_default && a->kind == SK_ATTR_KIND_INT) snprintf(def, sizeof def, "default %lld", (long long)a->default_int);
    else snprintf(def, sizeof def, a->kind == SK_ATTR_KIND_INTS ? "default empty" : "default from the inputs");
    if (a->has_range) snprintf(range, sizeof range, ", in %lld..%lld", (long long)a->min, (long long)a->max);
    printf("  attr   %-24s %s, %s%s  %s\n", a->name, kind_text(a->kind), def, range, a->doc ? a->doc : "");
  }
  for (size_t i = 0; i < s->n_outputs; i++)
    printf("  output %-24s %s\n", s->outputs[i].name, s->outputs[i].doc ? s->outputs[i].doc : "");
}

int sk_cmd_ops(int argc, char **argv) {
  const char **names = calloc((size_t)argc, sizeof *names);
  if (!names) {
    fprintf(stderr, "sk ops: out of memory\n");
    return SK_EXIT_FAIL;
  }
  cli_positional pos = {"OP", names, argc, 0};
  bool help;
  int rc = cli_parse_args("ops", synopsis, usage, argc, argv, NULL, 0, &pos, &help);
  for (int i = 0; rc == SK_EXIT_OK && !help && i < pos.n; i++) {
    sk_op_schema s;
    if (sk_op_info_by_name(names[i], &s) != SK_STATUS_OK) {
      fprintf(stderr, "sk ops: %s\n", sk_last_error());
      rc = SK_EXIT_USAGE;
    } else {
      print_schema(&s);
    }
  }
  free(names);
  if (rc != SK_EXIT_OK || help || pos.n > 0) return rc;
  for (size_t i = 0; i < sk_op_count(); i++) {
    sk_op_schema s;
    if (sk_op_info(i, &s) != SK_STATUS_OK) {
      fprintf(stderr, "sk ops: %s\n", sk_last_error());
      return SK_EXIT_FAIL;
    }
    print_schema(&s);
  }
  return SK_EXIT_OK;
}
