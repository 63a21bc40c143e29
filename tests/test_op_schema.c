/* Op schemas (sk_op_count, sk_op_info, sk_op_info_by_name) against what
 * sk_graph_add_op accepts: every attribute and slot a schema lists is
 * accepted by name, anything else is refused as unknown, ranges and kinds
 * are enforced as declared; and sk_op_infer / sk_op_supported without a
 * graph. */
#include <stdbool.h>
#include <string.h>

#include "harness.h"

/* Adds op with the one given attribute (and no inputs) to a fresh graph. */
static sk_status add_with_attr(const char *op, sk_attr attr) {
  sk_graph *g = NULL;
  sk_graph_create(&g);
  sk_op_desc d = {.op = op, .attrs = &attr, .n_attrs = 1};
  sk_value out[8];
  sk_status st = sk_graph_add_op(g, &d, out, 8, NULL);
  sk_graph_destroy(g);
  return st;
}

static sk_attr valid_value(const sk_op_attr_info *a) {
  static const int64_t ints[] = {1};
  sk_attr v = {.name = a->name, .kind = a->kind};
  if (a->kind == SK_ATTR_KIND_INT) v.i = a->has_range ? a->min : 0;
  if (a->kind == SK_ATTR_KIND_FLOAT) v.f = a->default_float;
  if (a->kind == SK_ATTR_KIND_INTS) v.ints = ints, v.n_ints = 1;
  return v;
}

static void test_schemas_are_complete(void) {
  CHECK(sk_op_count() >= 10);
  for (size_t i = 0; i < sk_op_count(); i++) {
    sk_op_schema s;
    CHECK_OK(sk_op_info(i, &s));
    CHECK(s.name && *s.name && s.doc && *s.doc);
    CHECK_MSG(s.n_outputs >= 1, "%s declares no outputs", s.name);
    CHECK_MSG(s.n_inputs >= 1 && s.n_inputs <= 8, "%s: %zu input slots", s.name, s.n_inputs);
    for (size_t k = 0; k < s.n_inputs; k++) CHECK(s.inputs[k].name && s.inputs[k].doc && *s.inputs[k].doc);
    for (size_t k = 0; k < s.n_attrs; k++) {
      const sk_op_attr_info *a = &s.attrs[k];
      CHECK(a->name && a->doc && *a->doc);
      CHECK_MSG(!(a->is_required && a->has_default), "%s.%s: required and defaulted", s.name, a->name);
      CHECK_MSG(!a->has_range || a->min <= a->max, "%s.%s: empty range", s.name, a->name);
      if (a->has_default && a->has_range && a->kind == SK_ATTR_KIND_INT)
        CHECK_MSG(a->default_int >= a->min && a->default_int <= a->max, "%s.%s: default outside its range", s.name,
                  a->name);
    }
    sk_op_schema by_name;
    CHECK_OK(sk_op_info_by_name(s.name, &by_name));
    CHECK(by_name.inputs == s.inputs && by_name.n_attrs == s.n_attrs);
  }
  sk_op_schema s;
  CHECK_FAILS(sk_op_info(sk_op_count(), &s), SK_STATUS_NOT_FOUND, "sk_op_info");
  CHECK_FAILS(sk_op_info_by_name("no_such_op", &s), SK_STATUS_NOT_FOUND, "no_such_op");
  CHECK_FAILS(sk_op_info(0, NULL), SK_STATUS_INVALID_ARGUMENT, "schema_out");
}

/* Every listed attribute is known to add_op (whatever else fails, it is not
 * "unknown" or of the wrong kind); an unlisted one is refused as unknown,
 * naming the accepted ones; a ranged int past its range is refused naming
 * the range. */
static void test_attributes_round_trip(void) {
  for (size_t i = 0; i < sk_op_count(); i++) {
    sk_op_schema s;
    CHECK_OK(sk_op_info(i, &s));
    for (size_t k = 0; k < s.n_attrs; k++) {
      const sk_op_attr_info *a = &s.attrs[k];
      sk_status st = add_with_attr(s.name, valid_value(a));
      CHECK_MSG(!strstr(sk_last_error(), "unknown attribute") && !strstr(sk_last_error(), "expected kind"),
                "%s.%s: %s (%s)", s.name, a->name, sk_status_string(st), sk_last_error());
      if (a->kind == SK_ATTR_KIND_INT && a->has_range && a->max < INT64_MAX) {
        sk_attr past = valid_value(a);
        past.i = a->max + 1;
        CHECK_FAILS(add_with_attr(s.name, past), SK_STATUS_INVALID_ATTRIBUTE, s.name, a->name, "expected");
      }
      if (a->kind != SK_ATTR_KIND_FLOAT) { /* a float where an int (list) is declared */
        sk_attr wrong = {.name = a->name, .kind = SK_ATTR_KIND_FLOAT, .f = 1.0};
        CHECK_FAILS(add_with_attr(s.name, wrong), SK_STATUS_INVALID_ATTRIBUTE, a->name, "expected kind");
      }
    }
    CHECK_FAILS(add_with_attr(s.name, SK_ATTR_INT("no_such_attr", 1)), SK_STATUS_INVALID_ATTRIBUTE, s.name,
                "unknown attribute 'no_such_attr'", "accepted:");
  }
}

/* Every listed slot is known; required slots left out are named; a single
 * slot given a list is refused. */
static void test_slots_round_trip(void) {
  sk_graph *g = NULL;
  CHECK_OK(sk_graph_create(&g));
  sk_value v[2];
  CHECK_OK(sk_graph_add_input(g, "a", SK_FP32, 1, (int64_t[]){4}, &v[0]));
  CHECK_OK(sk_graph_add_input(g, "b", SK_FP32, 1, (int64_t[]){4}, &v[1]));
  for (size_t i = 0; i < sk_op_count(); i++) {
    sk_op_schema s;
    CHECK_OK(sk_op_info(i, &s));
    for (size_t k = 0; k < s.n_inputs; k++) {
      sk_op_input in = {s.inputs[k].name, v, s.inputs[k].is_list ? 2 : 1};
      sk_op_desc d = {.op = s.name, .inputs = &in, .n_inputs = 1};
      sk_value out[8];
      sk_graph_add_op(g, &d, out, 8, NULL);
      CHECK_MSG(!strstr(sk_last_error(), "unknown input"), "%s.%s: %s", s.name, s.inputs[k].name, sk_last_error());
      if (!s.inputs[k].is_list) {
        in.count = 2;
        CHECK_FAILS(sk_graph_add_op(g, &d, out, 8, NULL), SK_STATUS_INVALID_ARGUMENT, s.inputs[k].name,
                    "expected 1 tensor, got 2");
      }
    }
    for (size_t k = 0; k < s.n_inputs; k++) {
      if (s.inputs[k].is_optional) continue;
      sk_op_desc d = {.op = s.name};
      sk_value out[8];
      CHECK_FAILS(sk_graph_add_op(g, &d, out, 8, NULL), SK_STATUS_INVALID_ARGUMENT, s.inputs[k].name);
      break; /* the first required slot is the one named */
    }
    sk_op_input bogus = {"bogus", v, 1};
    sk_op_desc d = {.op = s.name, .inputs = &bogus, .n_inputs = 1};
    sk_value out[8];
    CHECK_FAILS(sk_graph_add_op(g, &d, out, 8, NULL), SK_STATUS_INVALID_ARGUMENT, "unknown input 'bogus'");
  }
  sk_graph_destroy(g);
}

static void test_infer_without_a_graph(void) {
  sk_tensor_meta in[2] = {{SK_FP16, 2, {64, 128}}, {SK_FP16, 2, {128, 32}}}, out[4];
  size_t n = 0;
  sk_value dummy[1] = {0};
  sk_op_input ins[] = {{"x", dummy, 1}, {"weight", dummy, 1}};
  sk_op_desc d = {.op = "grouped_matmul", .inputs = ins, .n_inputs = 2};
  CHECK_OK(sk_op_infer(&d, in, 2, out, 4, &n));
  CHECK(n == 1 && out[0].dtype == SK_FP16 && out[0].rank == 2 && out[0].shape[0] == 64 && out[0].shape[1] == 32);
  CHECK_OK(sk_op_supported(&d, in, 2));

  in[1].shape[0] = 127; /* the same error, with the same message, as the graph gives */
  CHECK_FAILS(sk_op_infer(&d, in, 2, out, 4, &n), SK_STATUS_INVALID_SHAPE, "grouped_matmul", "weight[0]", "128");
  CHECK_FAILS(sk_op_supported(&d, in, 2), SK_STATUS_INVALID_SHAPE, "weight[0]");
  in[1].shape[0] = 128;
  CHECK_FAILS(sk_op_infer(&d, in, 1, out, 4, &n), SK_STATUS_INVALID_ARGUMENT, "2 tensors but 1 metas");
  CHECK_FAILS(sk_op_infer(&d, in, 2, out, 0, &n), SK_STATUS_INVALID_ARGUMENT, "1 outputs but room for 0");
  CHECK_FAILS(sk_op_infer(&d, in, 2, NULL, 4, &n), SK_STATUS_INVALID_ARGUMENT, "outputs is NULL");
  in[0].rank = 9;
  CHECK_FAILS(sk_op_infer(&d, in, 2, out, 4, &n), SK_STATUS_INVALID_SHAPE, "input x[0]", "rank");
  in[0].rank = 2, in[0].dtype = (sk_dtype)42;
  CHECK_FAILS(sk_op_infer(&d, in, 2, out, 4, &n), SK_STATUS_INVALID_DTYPE, "input x[0]", "42");
  sk_op_desc unknown = {.op = "no_such_op"};
  CHECK_FAILS(sk_op_supported(&unknown, NULL, 0), SK_STATUS_NOT_FOUND, "no_such_op");
  CHECK_FAILS(sk_op_supported(NULL, NULL, 0), SK_STATUS_INVALID_ARGUMENT, "NULL");

  /* A three-output op and an op that derives a default from its inputs. */
  sk_tensor_meta gate = {SK_BF16, 2, {7, 64}};
  sk_attr k = SK_ATTR_INT("k", 8);
  sk_op_desc topk = {.op = "moe_gating_topk", .inputs = ins, .n_inputs = 1, .attrs = &k, .n_attrs = 1};
  CHECK_OK(sk_op_infer(&topk, &gate, 1, out, 4, &n));
  CHECK(n == 3 && out[0].dtype == SK_BF16 && out[1].dtype == SK_INT32 && out[2].dtype == SK_FP32);
  CHECK(out[1].shape[0] == 7 && out[1].shape[1] == 8 && out[2].shape[1] == 64);
}

/* The one-byte dtypes through sk_op_supported: the ops that take any dtype
 * accept them, the others say which dtypes they take, naming the one given. */
static void test_supported_one_byte_dtypes(void) {
  sk_value v[2] = {0, 0};
  sk_op_input xy[] = {{"x", &v[0], 1}, {"y", &v[1], 1}}, x1[] = {{"x", &v[0], 1}, {"weight", &v[1], 1}};
  sk_tensor_meta b[2] = {{SK_BOOL, 2, {4, 8}}, {SK_BOOL, 1, {8}}}, u[2] = {{SK_UINT8, 2, {4, 8}}, {SK_UINT8, 2, {8, 4}}};
  sk_attr to_bool = SK_ATTR_INT("dtype", SK_BOOL), scalar = SK_ATTR_FLOAT("scalar", 1.0);
  sk_op_desc add = {.op = "add", .inputs = xy, .n_inputs = 2};
  sk_op_desc cast = {.op = "cast", .inputs = xy, .n_inputs = 1, .attrs = &to_bool, .n_attrs = 1};
  sk_op_desc mul_scalar = {.op = "mul", .inputs = xy, .n_inputs = 1, .attrs = &scalar, .n_attrs = 1};
  sk_op_desc gmm = {.op = "grouped_matmul", .inputs = x1, .n_inputs = 2};
  CHECK_OK(sk_op_supported(&add, b, 2));
  CHECK_OK(sk_op_supported(&cast, u, 1));
  CHECK_OK(sk_op_supported(&mul_scalar, u, 1));
  CHECK_FAILS(sk_op_supported(&mul_scalar, b, 1), SK_STATUS_INVALID_DTYPE, "mul", "bool");
  CHECK_FAILS(sk_op_supported(&gmm, u, 2), SK_STATUS_INVALID_DTYPE, "grouped_matmul", "got uint8");
  b[1].dtype = SK_UINT8;
  CHECK_FAILS(sk_op_supported(&add, b, 2), SK_STATUS_INVALID_DTYPE, "add", "expected dtype bool", "uint8");
}

TEST_MAIN(TEST_CASE(test_schemas_are_complete), TEST_CASE(test_attributes_round_trip), TEST_CASE(test_slots_round_trip),
          TEST_CASE(test_infer_without_a_graph), TEST_CASE(test_supported_one_byte_dtypes))
