/* Super-kernel options: every legal value of every option, the defaults, the
 * syntax rules (quotes, '_' for '-', whitespace, empty pairs, the pair
 * without '=' warning), every error kind with a message naming the key and
 * the accepted values, rendering, layering, op-type matching, and
 * copy / equal / free (run under ASan for leaks). */
#include <stddef.h>

#include "core/error.h"
#include "harness.h"
#include "options/options.h"

#define DEFAULTS                                                                          \
  "func-align=512:preload-code=per-func:early-start=1:stream-fusion=0:feed-sync-all=0:" \
  "profiling=0:split-mode=4:debug-dcci-all=0:debug-sync-all=0:debug-aic-num=0:debug-aiv-num=0"

/* sk_options_render into a static buffer ("<error>" when it fails). */
static const char *rendered(const char *s) {
  static char buf[2048];
  size_t needed = 0;
  if (sk_options_render(s, buf, sizeof buf, &needed) != SK_STATUS_OK) return "<error>";
  CHECK(needed == strlen(buf));
  return buf;
}

#define CHECK_RENDER(s, want)                                                             \
  do {                                                                                    \
    const char *got_ = rendered(s);                                                       \
    CHECK_MSG(strcmp(got_, (want)) == 0, "render(\"%s\"):\n got  %s\n want %s", (s), got_, \
              (want));                                                                    \
  } while (0)

/* Two strings that must mean the same options (rendered identically). */
#define CHECK_SAME(s, t)                                                                  \
  do {                                                                                    \
    char a_[2048], b_[2048];                                                              \
    sk_status sa_ = sk_options_render((s), a_, sizeof a_, NULL);                          \
    CHECK_MSG(sa_ == SK_STATUS_OK, "\"%s\": %s", (s), sk_last_error());                  \
    sk_status sb_ = sk_options_render((t), b_, sizeof b_, NULL);                          \
    CHECK_MSG(sb_ == SK_STATUS_OK, "\"%s\": %s", (t), sk_last_error());                  \
    CHECK_MSG(sa_ == SK_STATUS_OK && sb_ == SK_STATUS_OK && strcmp(a_, b_) == 0,          \
              "\"%s\" gives %s\n\"%s\" gives %s", (s), a_, (t), b_);                      \
  } while (0)

static int field(const sk__options *o, size_t offset) { return *(const int *)((const char *)o + offset); }

/* Parses s, checks field at offset == want and that option id is marked given. */
static void check_value(const char *s, size_t offset, int want, sk__option_id id) {
  sk__options o;
  sk_status st = sk__options_parse(s, &o);
  CHECK_MSG(st == SK_STATUS_OK, "\"%s\": %s", s, sk_last_error());
  CHECK_MSG(field(&o, offset) == want, "\"%s\": got %d, want %d", s, field(&o, offset), want);
  CHECK_MSG(o.explicit_mask == (1u << id), "\"%s\": mask %#x", s, o.explicit_mask);
  sk__options_free(&o);
}

#define OFF(f) offsetof(sk__options, f)

/* ---- defaults and legal values ------------------------------------------- */

static void test_defaults(void) {
  sk__options o;
  sk__options_init_defaults(&o);
  CHECK(o.func_align == 512 && o.preload_code == SK_PRELOAD_PER_FUNC && o.early_start == 1);
  CHECK(o.stream_fusion == 0 && o.feed_sync_all == 0 && o.profiling == 0);
  CHECK(o.split_mode == 4 && o.debug_dcci_all == 0 && o.debug_sync_all == 0);
  CHECK(o.debug_aic_num == 0 && o.debug_aiv_num == 0);
  CHECK(o.n_compile_options == 0 && o.compile_options == NULL);
  CHECK(o.strict_scope_check == SK_STRICT_UNSET);
  CHECK(o.dcci_before_kernel_start.count == 0 && o.dcci_after_kernel_end.count == 0 &&
        o.dcci_disable_on_kernel.count == 0);
  CHECK(o.explicit_mask == 0);
  /* Everything that means "no options". */
  const char *empty[] = {NULL, "", "   ", "\"\"", " \" \" ", ":", "::", " : : "};
  for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++) {
    sk__options p;
    CHECK_OK(sk__options_parse(empty[i], &p));
    CHECK_MSG(sk__options_equal(&o, &p) && p.explicit_mask == 0, "case %zu", i);
    sk__options_free(&p);
    CHECK_OK(sk_options_validate(empty[i]));
    CHECK_RENDER(empty[i], DEFAULTS);
  }
  CHECK(strcmp(sk__options_key(SK_OPT_FUNC_ALIGN), "func-align") == 0);
  CHECK(strcmp(sk__options_key(SK_OPT_DCCI_DISABLE_ON_KERNEL), "dcci-disable-on-kernel") == 0);
  CHECK(sk__options_key(SK_OPT_COUNT) == NULL);
}

static void test_legal_values(void) {
  const int aligns[] = {0, 2, 4, 64, 512, 4096};
  for (size_t i = 0; i < sizeof aligns / sizeof aligns[0]; i++) {
    char s[64];
    snprintf(s, sizeof s, "func-align=%d", aligns[i]);
    check_value(s, OFF(func_align), aligns[i], SK_OPT_FUNC_ALIGN);
  }
  check_value("preload-code=per-func", OFF(preload_code), SK_PRELOAD_PER_FUNC, SK_OPT_PRELOAD_CODE);
  check_value("preload-code=max", OFF(preload_code), SK_PRELOAD_MAX, SK_OPT_PRELOAD_CODE);
  check_value("preload-code=none", OFF(preload_code), SK_PRELOAD_NONE, SK_OPT_PRELOAD_CODE);
  check_value("early-start=0", OFF(early_start), 0, SK_OPT_EARLY_START);
  check_value("early-start=1", OFF(early_start), 1, SK_OPT_EARLY_START);
  check_value("early-start=2", OFF(early_start), 2, SK_OPT_EARLY_START);
  static const struct { const char *key; size_t off; sk__option_id id; } bools[] = {
      {"stream-fusion", OFF(stream_fusion), SK_OPT_STREAM_FUSION},
      {"feed-sync-all", OFF(feed_sync_all), SK_OPT_FEED_SYNC_ALL},
      {"profiling", OFF(profiling), SK_OPT_PROFILING},
      {"debug-dcci-all", OFF(debug_dcci_all), SK_OPT_DEBUG_DCCI_ALL},
      {"debug-sync-all", OFF(debug_sync_all), SK_OPT_DEBUG_SYNC_ALL},
  };
  for (size_t i = 0; i < sizeof bools / sizeof bools[0]; i++)
    for (int v = 0; v <= 1; v++) {
      char s[64];
      snprintf(s, sizeof s, "%s=%d", bools[i].key, v);
      check_value(s, bools[i].off, v, bools[i].id);
    }
  for (int v = 1; v <= 64; v++) {
    char s[64];
    snprintf(s, sizeof s, "split-mode=%d", v);
    check_value(s, OFF(split_mode), v, SK_OPT_SPLIT_MODE);
  }
  const int nums[] = {0, 1, 7, 64, 2147483647};
  for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
    char s[64];
    snprintf(s, sizeof s, "debug-aic-num=%d", nums[i]);
    check_value(s, OFF(debug_aic_num), nums[i], SK_OPT_DEBUG_AIC_NUM);
    snprintf(s, sizeof s, "debug-aiv-num=%d", nums[i]);
    check_value(s, OFF(debug_aiv_num), nums[i], SK_OPT_DEBUG_AIV_NUM);
  }
  /* Decimal, never octal: a leading zero is harmless. */
  check_value("split-mode=010", OFF(split_mode), 10, SK_OPT_SPLIT_MODE);
  check_value("strict-scope-check=abort", OFF(strict_scope_check), SK_STRICT_ABORT,
              SK_OPT_STRICT_SCOPE_CHECK);
  check_value("strict-scope-check=bypass", OFF(strict_scope_check), SK_STRICT_BYPASS,
              SK_OPT_STRICT_SCOPE_CHECK);

  sk__options o;
  CHECK_OK(sk__options_parse("compile-options=-O2, -g ,-march=native", &o));
  CHECK(o.n_compile_options == 3 && o.explicit_mask == 1u << SK_OPT_COMPILE_OPTIONS);
  if (o.n_compile_options == 3)
    CHECK(!strcmp(o.compile_options[0], "-O2") && !strcmp(o.compile_options[1], "-g") &&
          !strcmp(o.compile_options[2], "-march=native"));
  sk__options_free(&o);
  CHECK_OK(sk__options_parse("compile-options=-O1", &o));
  CHECK(o.n_compile_options == 1 && !strcmp(o.compile_options[0], "-O1"));
  sk__options_free(&o);

  const struct { const char *key; size_t off; sk__option_id id; } lists[] = {
      {"dcci-before-kernel-start", OFF(dcci_before_kernel_start), SK_OPT_DCCI_BEFORE_KERNEL_START},
      {"dcci-after-kernel-end", OFF(dcci_after_kernel_end), SK_OPT_DCCI_AFTER_KERNEL_END},
      {"dcci-disable-on-kernel", OFF(dcci_disable_on_kernel), SK_OPT_DCCI_DISABLE_ON_KERNEL},
  };
  for (size_t i = 0; i < 3; i++) {
    char s[128];
    snprintf(s, sizeof s, "%s=grouped_.*, quant_matmul,add|mul", lists[i].key);
    CHECK_OK(sk__options_parse(s, &o));
    const sk__op_pattern_list *l = (const sk__op_pattern_list *)((const char *)&o + lists[i].off);
    CHECK(l->count == 3 && o.explicit_mask == 1u << lists[i].id);
    if (l->count == 3)
      CHECK(!strcmp(l->patterns[0], "grouped_.*") && !strcmp(l->patterns[1], "quant_matmul") &&
            !strcmp(l->patterns[2], "add|mul"));
    CHECK(sk__options_match(l, "grouped_matmul") && sk__options_match(l, "mul"));
    sk__options_free(&o);
  }
}

/* ---- syntax ----------------------------------------------------------------- */

static void test_syntax(void) {
  /* Quotes around the whole string, a pair, a key, a value. */
  CHECK_SAME("\"early-start=0:split-mode=8\"", "early-start=0:split-mode=8");
  CHECK_SAME("early-start=\"0\"", "early-start=0");
  CHECK_SAME("\"early-start\"=0", "early-start=0");
  CHECK_SAME("\"early-start=0\":split-mode=8", "early-start=0:split-mode=8");
  CHECK_RENDER("compile-options=\"-O2,-g\"",
               DEFAULTS ":compile-options=-O2,-g");
  CHECK_RENDER("\"profiling=1:compile-options=\"-O2,-g\"\"",
               "func-align=512:preload-code=per-func:early-start=1:stream-fusion=0:feed-sync-all=0:"
               "profiling=1:split-mode=4:debug-dcci-all=0:debug-sync-all=0:debug-aic-num=0:"
               "debug-aiv-num=0:compile-options=-O2,-g");
  /* '_' for '-' in keys, in any position. */
  CHECK_SAME("debug_sync_all=1", "debug-sync-all=1");
  CHECK_SAME("dcci_before-kernel_start=add", "dcci-before-kernel-start=add");
  /* Whitespace around keys, values, pairs and quotes. */
  CHECK_SAME("  early-start = 0 :\tsplit-mode= 8\n", "early-start=0:split-mode=8");
  CHECK_SAME(" \" early-start = 0 \" ", "early-start=0");
  CHECK_SAME("early-start= \" 0 \" ", "early-start=0");
  /* Empty pairs are ignored: doubled, leading and trailing ':'. */
  CHECK_SAME("early-start=0::split-mode=8", "early-start=0:split-mode=8");
  CHECK_SAME(":early-start=0:", "early-start=0");
  CHECK_SAME("early-start=0: :\"\":split-mode=8:", "early-start=0:split-mode=8");
  /* Each pair splits at its first '=': the rest belongs to the value. */
  CHECK_FAILS(sk_options_validate("early-start=1=2"), SK_STATUS_INVALID_ARGUMENT,
              "option early-start", "illegal value '1=2'", "accepted: 0, 1, 2");
  CHECK_RENDER("compile-options=-DX=1,-DY=2", DEFAULTS ":compile-options=-DX=1,-DY=2");
  /* Values are case-sensitive. */
  CHECK_FAILS(sk_options_validate("preload-code=MAX"), SK_STATUS_INVALID_ARGUMENT,
              "option preload-code", "'MAX'", "accepted: max, none, per-func");
}

typedef struct captured {
  int count;
  sk_log_level level;
  char message[1100];
} captured;

static void capture(sk_log_level level, const char *message, void *user) {
  captured *c = user;
  c->count++;
  c->level = level;
  snprintf(c->message, sizeof c->message, "%s", message);
}

static void test_pair_without_equals(void) {
  captured c = {0};
  sk_set_log_handler(capture, &c);
  sk__options o;
  CHECK_OK(sk__options_parse("early-start=0:bogus:split-mode=8", &o));
  CHECK(c.count == 1 && c.level == SK_LOG_WARN);
  CHECK_MSG(strstr(c.message, "'bogus'") && strstr(c.message, "no '='"), "%s", c.message);
  /* Parsing went on past it. */
  CHECK(o.early_start == 0 && o.split_mode == 8);
  CHECK(o.explicit_mask == (1u << SK_OPT_EARLY_START | 1u << SK_OPT_SPLIT_MODE));
  sk__options_free(&o);
  /* Through the public calls too; a lone word is skipped, defaults remain. */
  c.count = 0;
  CHECK_OK(sk_options_validate(" profiling "));
  CHECK(c.count == 1 && strstr(c.message, "'profiling'") != NULL);
  CHECK(strcmp(sk_last_error(), "") == 0);
  c.count = 0;
  CHECK_SAME("profiling=1:early-start", "profiling=1");
  CHECK(c.count >= 1 && strstr(c.message, "'early-start'") != NULL);
  sk_set_log_handler(NULL, NULL);
}

/* ---- errors -------------------------------------------------------------------- */

static void test_key_errors(void) {
  CHECK_FAILS(sk_options_validate("=1"), SK_STATUS_INVALID_ARGUMENT, "empty key", "'=1'",
              "known keys", "func-align", "dcci-disable-on-kernel");
  CHECK_FAILS(sk_options_validate("early-start=0: =2"), SK_STATUS_INVALID_ARGUMENT, "empty key");
  CHECK_FAILS(sk_options_validate("early-strat=1"), SK_STATUS_INVALID_ARGUMENT,
              "unknown key 'early-strat'", "did you mean 'early-start'?", "known keys: func-align, ",
              "split-mode", "strict-scope-check");
  CHECK_FAILS(sk_options_validate("Early_Start=1"), SK_STATUS_INVALID_ARGUMENT,
              "unknown key 'Early_Start'", "did you mean 'early-start'?");
  CHECK_FAILS(sk_options_validate("debug-aic=1"), SK_STATUS_INVALID_ARGUMENT,
              "unknown key 'debug-aic'", "did you mean 'debug-aic-num'?");
  sk_options_validate("xyzzy=1");
  CHECK(strstr(sk_last_error(), "unknown key 'xyzzy'") && !strstr(sk_last_error(), "did you mean"));
  /* Every option, given twice: same spelling, and '-' / '_' mixed. */
  for (int i = 0; i < SK_OPT_COUNT; i++) {
    const char *key = sk__options_key((sk__option_id)i);
    char underscored[64], s[256];
    snprintf(underscored, sizeof underscored, "%s", key);
    for (char *p = underscored; *p; p++)
      if (*p == '-') *p = '_';
    /* A legal value of each option, table order. */
    static const char *const legal[SK_OPT_COUNT] = {"2", "max", "2", "1", "1", "1", "2", "1", "1",
                                                    "1", "1", "-g", "abort", "add", "add", "add"};
    const char *value = legal[i];
    char want[96];
    snprintf(want, sizeof want, "option %s: given twice", key);
    snprintf(s, sizeof s, "%s=%s", underscored, value);
    CHECK_OK(sk_options_validate(s));
    snprintf(s, sizeof s, "%s=%s:%s=%s", key, value, key, value);
    CHECK_FAILS(sk_options_validate(s), SK_STATUS_INVALID_ARGUMENT, want, "accepted: ");
    snprintf(s, sizeof s, "%s=%s:%s=%s", underscored, value, key, value);
    CHECK_FAILS(sk_options_validate(s), SK_STATUS_INVALID_ARGUMENT, want, underscored, "accepted: ");
    /* An empty value, plain and quoted. */
    snprintf(s, sizeof s, "%s=", key);
    snprintf(want, sizeof want, "option %s: empty value (accepted: ", key);
    CHECK_FAILS(sk_options_validate(s), SK_STATUS_INVALID_ARGUMENT, want);
    snprintf(s, sizeof s, "%s = \"\" ", underscored);
    CHECK_FAILS(sk_options_validate(s), SK_STATUS_INVALID_ARGUMENT, want);
  }
}

/* Each illegal value of an option fails naming the option, the value and the
 * accepted values. */
static void check_illegal(const char *key, const char *const *values, size_t n, const char *accepted) {
  for (size_t i = 0; i < n; i++) {
    char s[256], opt[96], val[128], acc[256];
    /* After another option, so the error is not about the first pair. */
    snprintf(s, sizeof s, "%s:%s=%s", strcmp(key, "profiling") ? "profiling=1" : "split-mode=8", key,
             values[i]);
    snprintf(opt, sizeof opt, "option %s: ", key);
    snprintf(val, sizeof val, "'%s'", values[i]);
    snprintf(acc, sizeof acc, "(accepted: %s)", accepted);
    CHECK_FAILS(sk_options_validate(s), SK_STATUS_INVALID_ARGUMENT, opt, val, acc);
    /* The same through render: nothing written, *needed 0. */
    char buf[64] = "x";
    size_t needed = 99;
    CHECK(sk_options_render(s, buf, sizeof buf, &needed) == SK_STATUS_INVALID_ARGUMENT);
    CHECK(buf[0] == '\0' && needed == 0);
  }
}
#define ILLEGAL(key, accepted, ...)                                        \
  do {                                                                     \
    static const char *const v_[] = {__VA_ARGS__};                         \
    check_illegal(key, v_, sizeof v_ / sizeof v_[0], accepted);            \
  } while (0)

static void test_illegal_values(void) {
  /* The exact messages of the brief. */
  CHECK_FAILS(sk_options_validate("early-start=3"), SK_STATUS_INVALID_ARGUMENT,
              "option early-start: illegal value '3' (accepted: 0, 1, 2)");
  CHECK_FAILS(sk_options_validate("func-align=1"), SK_STATUS_INVALID_ARGUMENT,
              "option func-align: illegal value '1' (accepted: 0 or a power of two from 2 to 4096)");
  CHECK_FAILS(sk_options_validate("split-mode=65"), SK_STATUS_INVALID_ARGUMENT,
              "option split-mode: illegal value '65' (accepted: an integer in 1..64)");
  CHECK_FAILS(sk_options_validate("debug-aic-num=-1"), SK_STATUS_INVALID_ARGUMENT,
              "option debug-aic-num: illegal value '-1' (accepted: an integer >= 0, at most the team size)");
  CHECK_FAILS(sk_options_validate("preload-code=all"), SK_STATUS_INVALID_ARGUMENT,
              "option preload-code: illegal value 'all' (accepted: max, none, per-func)");
  CHECK_FAILS(sk_options_validate("strict-scope-check=x"), SK_STATUS_INVALID_ARGUMENT,
              "option strict-scope-check: illegal value 'x' (accepted: abort, bypass)");

#define BAD_INTS "-1", "+1", "1.0", "1e2", "0x10", "1 2", "1a", "a", "99999999999999999999", "2147483648"
  ILLEGAL("func-align", "0 or a power of two from 2 to 4096", BAD_INTS, "1", "8192", "1073741824", "3", "6", "100", "513", "-512",
          "2147483647", "4294967296");
  ILLEGAL("early-start", "0, 1, 2", BAD_INTS, "3", "10");
  ILLEGAL("stream-fusion", "0, 1", BAD_INTS, "2", "true", "on");
  ILLEGAL("feed-sync-all", "0, 1", BAD_INTS, "2", "yes");
  ILLEGAL("profiling", "0, 1", BAD_INTS, "2");
  ILLEGAL("debug-dcci-all", "0, 1", BAD_INTS, "2");
  ILLEGAL("debug-sync-all", "0, 1", BAD_INTS, "2");
  ILLEGAL("split-mode", "an integer in 1..64", BAD_INTS, "0", "65", "128");
  ILLEGAL("debug-aic-num", "an integer >= 0, at most the team size", BAD_INTS, "-0x1");
  ILLEGAL("debug-aiv-num", "an integer >= 0, at most the team size", BAD_INTS, "-5");
  ILLEGAL("preload-code", "max, none, per-func", "all", "per_func", "Max", "0", "max,none");
  ILLEGAL("strict-scope-check", "abort, bypass", "x", "unset", "none", "Abort", "0");
#define FLAGS_ACC "non-empty, comma-separated compiler flags, each starting with '-', no spaces"
  ILLEGAL("compile-options", FLAGS_ACC, "-O2,,-g", ",-O2", "-O2,", ",", "-O2, ,-g", "O2", "-O2 -g",
          "-O2,g");
  CHECK_FAILS(sk_options_validate("compile-options=-O2,,-g"), SK_STATUS_INVALID_ARGUMENT, "item 2 is empty");
  CHECK_FAILS(sk_options_validate("compile-options=-O2,g"), SK_STATUS_INVALID_ARGUMENT,
              "flag 'g' does not start with '-'");
  CHECK_FAILS(sk_options_validate("compile-options=-O2 -g"), SK_STATUS_INVALID_ARGUMENT,
              "flag '-O2 -g' contains a space");
  /* The deny list: flags that could redirect the compiler's output or load
   * code are refused by name; nearby legitimate flags still pass. */
  static const char *const denied[] = {
      "-o", "-o/tmp/x.so", "-MF", "-MD", "-MMD", "-MT", "-MQ", "-M", "-MM", "-fplugin", "-fplugin=/tmp/p.so",
      "-fplugin-arg-p-x=1", "-specs=/tmp/s", "--specs=/tmp/s", "-B/tmp", "-B", "-wrapper", "-save-temps",
      "-save-temps=obj", "-dumpdir", "-dumpbase", "-x", "-xc", "-include", "-imacros", "-L/tmp", "-lfoo", "-Wl",
      "-Xlinker", "-Xclang", "-shared", "-static", "-fprofile-generate=/tmp/p", "-fprofile-use=/tmp/p",
      "-fprofile-arcs", "--output=/tmp/x", "--coverage", "-Wp", "-Wa", "-T/tmp/s.ld", "-fuse-ld=gold",
      "-fdump-tree-all", "-fopt-info-all=/tmp/o"};
  for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++) {
    char v[128], want[128];
    snprintf(v, sizeof v, "compile-options=-O2,%s", denied[i]);
    snprintf(want, sizeof want,
             "option compile-options: flag '%s' is not allowed (it could redirect the compiler's output or load code)",
             denied[i]);
    CHECK_FAILS(sk_options_validate(v), SK_STATUS_INVALID_ARGUMENT, want);
  }
  /* "-Wl,-rpath,/a" splits at ',' into "-Wl", ...: refused at "-Wl". */
  CHECK_FAILS(sk_options_validate("compile-options=\"-Wl,-rpath\""), SK_STATUS_INVALID_ARGUMENT, "flag '-Wl' is not allowed");
  static const char *const allowed[] = {"-O3", "-g", "-march=native", "-DX=1", "-Wall", "-Wlogical-op", "-Wpedantic",
                                        "-Werror", "-fno-strict-aliasing", "-mavx2", "-I/usr/include", "-std=c11",
                                        "--param=max-inline-insns-single=100", "-ffast-math", "-pipe"};
  for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) {
    char v[128];
    snprintf(v, sizeof v, "compile-options=%s", allowed[i]);
    CHECK_MSG(sk_options_validate(v) == SK_STATUS_OK, "%s: %s", allowed[i], sk_last_error());
  }
  /* A quoted value cut by ':' leaves a stray quote: an error, not a flag. */
  CHECK_FAILS(sk_options_validate("compile-options=\"-Wl,-rpath,/a:/b\""), SK_STATUS_INVALID_ARGUMENT,
              "option compile-options", "'\"-Wl,-rpath,/a'", "double quote", "accepted: " FLAGS_ACC);
  CHECK_FAILS(sk_options_validate("early-start=\"1"), SK_STATUS_INVALID_ARGUMENT,
              "option early-start", "accepted: 0, 1, 2");
  const char *dcci[] = {"dcci-before-kernel-start", "dcci-after-kernel-end", "dcci-disable-on-kernel"};
  for (int i = 0; i < 3; i++) {
    const char *acc = "non-empty, comma-separated op types (POSIX extended regular expressions";
    char opt[96], s[128];
    snprintf(opt, sizeof opt, "option %s: ", dcci[i]);
    ILLEGAL(dcci[i], "non-empty, comma-separated op types (POSIX extended regular expressions, "
            "matched against the whole name)", "add,,mul", ",add", "add,", "(", "add,[a", "a{1");
    snprintf(s, sizeof s, "%s=add,grouped_(matmul", dcci[i]);
    CHECK_FAILS(sk_options_validate(s), SK_STATUS_INVALID_ARGUMENT, opt,
                "pattern 'grouped_(matmul' is not a valid regular expression", acc);
    snprintf(s, sizeof s, "%s=add,[z-a]", dcci[i]);
    CHECK_FAILS(sk_options_validate(s), SK_STATUS_INVALID_ARGUMENT, opt, "pattern '[z-a]'", acc);
  }
}

/* An error after lists were parsed leaves the defaults and leaks nothing. */
static void test_error_leaves_defaults(void) {
  sk__options o, d;
  sk__options_init_defaults(&d);
  CHECK_FAILS(sk__options_parse("compile-options=-O2:dcci-after-kernel-end=a,b:split-mode=8:early-start=9", &o),
              SK_STATUS_INVALID_ARGUMENT, "early-start");
  CHECK(sk__options_equal(&o, &d) && o.explicit_mask == 0 && o.compile_options == NULL &&
        o.dcci_after_kernel_end.count == 0);
  sk__options_free(&o);
  /* The public calls clear a previous error on success. */
  CHECK(sk_options_validate("bad=1") != SK_STATUS_OK && sk_last_error()[0] != '\0');
  CHECK_OK(sk_options_validate("early-start=0"));
  CHECK(strcmp(sk_last_error(), "") == 0);
  CHECK(sk_options_validate("bad=1") != SK_STATUS_OK);
  char buf[8];
  CHECK_OK(sk_options_render("", buf, sizeof buf, NULL));
  CHECK(strcmp(sk_last_error(), "") == 0);
}

/* ---- rendering ------------------------------------------------------------------ */

#define FULL_RENDER                                                                          \
  "func-align=4096:preload-code=max:early-start=2:stream-fusion=1:feed-sync-all=1:"         \
  "profiling=1:split-mode=64:debug-dcci-all=1:debug-sync-all=1:debug-aic-num=3:"            \
  "debug-aiv-num=5:compile-options=-O2,-g:strict-scope-check=abort:"                        \
  "dcci-before-kernel-start=grouped_.*,add:dcci-after-kernel-end=quant_matmul:"             \
  "dcci-disable-on-kernel=cast"

static void test_render(void) {
  CHECK_RENDER("", DEFAULTS);
  /* Any order and spelling in, table order and canonical spelling out. */
  const char *full =
      "dcci_disable_on_kernel=cast : dcci-after-kernel-end=quant_matmul:"
      "dcci-before-kernel-start=\"grouped_.*, add\":strict_scope_check=abort:compile-options=-O2,-g:"
      "debug-aiv-num=5:debug-aic-num=3:debug-sync-all=1:debug-dcci-all=1:split-mode=64:profiling=1:"
      "feed-sync-all=1:stream_fusion=1:early-start=2:preload-code=max:func_align=4096";
  CHECK_RENDER(full, FULL_RENDER);
  CHECK_RENDER("preload-code=none:func-align=0:strict-scope-check=bypass",
               "func-align=0:preload-code=none:early-start=1:stream-fusion=0:feed-sync-all=0:"
               "profiling=0:split-mode=4:debug-dcci-all=0:debug-sync-all=0:debug-aic-num=0:"
               "debug-aiv-num=0:strict-scope-check=bypass");
  /* The output parses back to equal options. */
  sk__options a, b;
  CHECK_OK(sk__options_parse(full, &a));
  CHECK_OK(sk__options_parse(FULL_RENDER, &b));
  CHECK(sk__options_equal(&a, &b) && a.explicit_mask == (1u << SK_OPT_COUNT) - 1);
  /* snprintf contract: length returned, truncated output NUL-terminated. */
  size_t len = strlen(FULL_RENDER);
  CHECK(sk__options_render(&a, NULL, 0) == len);
  char small[11];
  memset(small, 'x', sizeof small);
  CHECK(sk__options_render(&a, small, sizeof small) == len);
  CHECK(strcmp(small, "func-align") == 0);
  char one[1] = {'x'};
  CHECK(sk__options_render(&a, one, 1) == len && one[0] == '\0');
  char exact[sizeof FULL_RENDER];
  CHECK(sk__options_render(&a, exact, sizeof exact) == len && strcmp(exact, FULL_RENDER) == 0);
  sk__options_free(&a);
  sk__options_free(&b);
  /* Public: *needed is the full length, truncation keeps the NUL. */
  size_t needed = 0;
  CHECK_OK(sk_options_render("", NULL, 0, &needed));
  CHECK(needed == strlen(DEFAULTS));
  char buf[16];
  CHECK_OK(sk_options_render("", buf, sizeof buf, &needed));
  CHECK(needed == strlen(DEFAULTS) && strlen(buf) == 15 && strncmp(buf, DEFAULTS, 15) == 0);
  CHECK_FAILS(sk_options_render("", NULL, 5, &needed), SK_STATUS_INVALID_ARGUMENT, "buf");
}

/* ---- layering ---------------------------------------------------------------------- */

static void test_layered(void) {
  sk__options o;
  CHECK_OK(sk__options_parse_layered(
      "early-start=0:split-mode=8:compile-options=-O3:dcci-after-kernel-end=add",
      "split_mode=16:profiling=1:dcci-after-kernel-end=mul", &o));
  CHECK(o.early_start == 0);         /* from the global string */
  CHECK(o.split_mode == 16);         /* the scope wins */
  CHECK(o.profiling == 1);           /* scope only */
  CHECK(o.func_align == 512 && o.preload_code == SK_PRELOAD_PER_FUNC); /* defaults last */
  CHECK(o.n_compile_options == 1 && !strcmp(o.compile_options[0], "-O3"));
  CHECK(sk__options_match(&o.dcci_after_kernel_end, "mul") &&
        !sk__options_match(&o.dcci_after_kernel_end, "add"));
  CHECK(o.explicit_mask == (1u << SK_OPT_EARLY_START | 1u << SK_OPT_SPLIT_MODE |
                            1u << SK_OPT_COMPILE_OPTIONS | 1u << SK_OPT_DCCI_AFTER_KERNEL_END |
                            1u << SK_OPT_PROFILING));
  char buf[512];
  sk__options_render(&o, buf, sizeof buf);
  CHECK_MSG(strcmp(buf, "func-align=512:preload-code=per-func:early-start=0:stream-fusion=0:"
                        "feed-sync-all=0:profiling=1:split-mode=16:debug-dcci-all=0:debug-sync-all=0:"
                        "debug-aic-num=0:debug-aiv-num=0:compile-options=-O3:"
                        "dcci-after-kernel-end=mul") == 0, "%s", buf);
  sk__options_free(&o);
  /* A scope list replaces a global one; a stated default still wins. */
  CHECK_OK(sk__options_parse_layered("compile-options=-O3,-g:early-start=2", "compile-options=-O1:early-start=1", &o));
  CHECK(o.n_compile_options == 1 && !strcmp(o.compile_options[0], "-O1") && o.early_start == 1);
  sk__options_free(&o);
  /* Missing strings. */
  sk__options d;
  sk__options_init_defaults(&d);
  CHECK_OK(sk__options_parse_layered(NULL, NULL, &o));
  CHECK(sk__options_equal(&o, &d) && o.explicit_mask == 0);
  CHECK_OK(sk__options_parse_layered("profiling=1", NULL, &o));
  CHECK(o.profiling == 1);
  CHECK_OK(sk__options_parse_layered(NULL, "profiling=1", &o));
  CHECK(o.profiling == 1);
  CHECK_OK(sk__options_parse_layered("", "", &o));
  CHECK(sk__options_equal(&o, &d));
  /* Errors: the global string's are marked as such; either leaves defaults. */
  CHECK_FAILS(sk__options_parse_layered("early-start=7", "profiling=1", &o), SK_STATUS_INVALID_ARGUMENT,
              "global options: option early-start: illegal value '7' (accepted: 0, 1, 2)");
  CHECK(sk__options_equal(&o, &d));
  CHECK_FAILS(sk__options_parse_layered("compile-options=-O2", "profiling=2", &o), SK_STATUS_INVALID_ARGUMENT,
              "option profiling: illegal value '2'");
  CHECK(strncmp(sk_last_error(), "global", 6) != 0);
  CHECK(sk__options_equal(&o, &d));
  sk__options_free(&o);
}

/* ---- matching ------------------------------------------------------------------------ */

static void test_match(void) {
  sk__options o;
  CHECK_OK(sk__options_parse("dcci-before-kernel-start=grouped_.*:dcci-after-kernel-end=quant_matmul:"
                             "dcci-disable-on-kernel=add|mul, a|ab ,cast", &o));
  const sk__op_pattern_list *before = &o.dcci_before_kernel_start, *after = &o.dcci_after_kernel_end,
                            *off = &o.dcci_disable_on_kernel;
  CHECK(sk__options_match(before, "grouped_matmul"));
  CHECK(sk__options_match(before, "grouped_"));
  CHECK(!sk__options_match(before, "x_grouped_matmul")); /* whole name, not a substring */
  CHECK(!sk__options_match(before, "grouped"));
  CHECK(sk__options_match(after, "quant_matmul"));
  CHECK(!sk__options_match(after, "quant_matmul_v2"));
  CHECK(!sk__options_match(after, "matmul"));
  CHECK(!sk__options_match(after, "Quant_matmul")); /* case-sensitive */
  /* Alternation covers the whole name on either side. */
  CHECK(sk__options_match(off, "add") && sk__options_match(off, "mul") && sk__options_match(off, "cast"));
  CHECK(!sk__options_match(off, "addmul") && !sk__options_match(off, "muladd"));
  CHECK(sk__options_match(off, "ab") && sk__options_match(off, "a")); /* longest match wins */
  CHECK(!sk__options_match(off, "abc") && !sk__options_match(off, ""));
  CHECK(!sk__options_match(off, NULL) && !sk__options_match(NULL, "add"));
  sk__options_free(&o);
  /* An empty list matches nothing; "matmul" alone is not "quant_matmul". */
  sk__options_init_defaults(&o);
  CHECK(!sk__options_match(&o.dcci_before_kernel_start, "add"));
  CHECK_OK(sk__options_parse("dcci-before-kernel-start=matmul", &o));
  CHECK(!sk__options_match(&o.dcci_before_kernel_start, "quant_matmul"));
  CHECK(sk__options_match(&o.dcci_before_kernel_start, "matmul"));
  sk__options_free(&o);
  /* Anchors and groups inside a pattern are fine. */
  CHECK_OK(sk__options_parse("dcci-before-kernel-start=^(quant_)?matmul$", &o));
  CHECK(sk__options_match(&o.dcci_before_kernel_start, "matmul") &&
        sk__options_match(&o.dcci_before_kernel_start, "quant_matmul") &&
        !sk__options_match(&o.dcci_before_kernel_start, "grouped_matmul"));
  sk__options_free(&o);
}

/* ---- copy / equal / free ---------------------------------------------------------------- */

static void test_copy_equal_free(void) {
  sk__options a, b, c;
  CHECK_OK(sk__options_parse(FULL_RENDER, &a));
  CHECK_OK(sk__options_copy(&b, &a));
  CHECK(sk__options_equal(&a, &b) && b.explicit_mask == a.explicit_mask);
  CHECK(b.compile_options != a.compile_options && b.dcci_before_kernel_start.patterns !=
                                                       a.dcci_before_kernel_start.patterns);
  sk__options_free(&a);
  /* The copy owns its own compiled patterns. */
  CHECK(sk__options_match(&b.dcci_before_kernel_start, "grouped_matmul"));
  CHECK(sk__options_match(&b.dcci_disable_on_kernel, "cast"));
  char buf[1024];
  sk__options_render(&b, buf, sizeof buf);
  CHECK(strcmp(buf, FULL_RENDER) == 0);
  /* Free twice is safe, and leaves the defaults. */
  sk__options_free(&b);
  sk__options_free(&b);
  sk__options_init_defaults(&c);
  CHECK(sk__options_equal(&b, &c));
  sk__options_free(NULL);
  /* Copy of the defaults. */
  CHECK_OK(sk__options_copy(&b, &c));
  CHECK(sk__options_equal(&b, &c));
  sk__options_free(&b);
  /* Equality is by effective value: a stated default equals an omitted one. */
  CHECK_OK(sk__options_parse("early-start=1:func-align=512", &a));
  CHECK(sk__options_equal(&a, &c) && a.explicit_mask != 0);
  sk__options_free(&a);
  /* Any one difference makes them unequal, lists included. */
  const char *differ[] = {"func-align=0", "preload-code=max", "early-start=0", "stream-fusion=1",
                          "feed-sync-all=1", "profiling=1", "split-mode=5", "debug-dcci-all=1",
                          "debug-sync-all=1", "debug-aic-num=1", "debug-aiv-num=1",
                          "compile-options=-g", "strict-scope-check=abort",
                          "dcci-before-kernel-start=a", "dcci-after-kernel-end=a",
                          "dcci-disable-on-kernel=a"};
  for (size_t i = 0; i < sizeof differ / sizeof differ[0]; i++) {
    CHECK_OK(sk__options_parse(differ[i], &a));
    CHECK_MSG(!sk__options_equal(&a, &c) && !sk__options_equal(&c, &a), "%s", differ[i]);
    CHECK_OK(sk__options_copy(&b, &a));
    CHECK_MSG(sk__options_equal(&a, &b), "%s", differ[i]);
    sk__options_free(&a);
    sk__options_free(&b);
  }
  const char *pairs[][2] = {{"compile-options=-g", "compile-options=-g,-O2"},
                            {"compile-options=-g,-O2", "compile-options=-O2,-g"},
                            {"dcci-after-kernel-end=a,b", "dcci-after-kernel-end=a"},
                            {"dcci-after-kernel-end=a", "dcci-after-kernel-end=b"},
                            {"dcci-after-kernel-end=a", "dcci-before-kernel-start=a"}};
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    CHECK_OK(sk__options_parse(pairs[i][0], &a));
    CHECK_OK(sk__options_parse(pairs[i][1], &b));
    CHECK_MSG(!sk__options_equal(&a, &b), "%s vs %s", pairs[i][0], pairs[i][1]);
    sk__options_free(&a);
    sk__options_free(&b);
  }
  CHECK_OK(sk__options_parse("compile-options= -g ,-O2:dcci-after-kernel-end=a", &a));
  CHECK_OK(sk__options_parse("dcci_after_kernel_end=\"a\":compile-options=\"-g,-O2\"", &b));
  CHECK(sk__options_equal(&a, &b));
  sk__options_free(&a);
  sk__options_free(&b);
}

/* The public layering: a scope's key over the default's, the default's
 * where the scope is silent, and a failure naming the wrong string. */
static void test_render_layered(void) {
  char buf[512];
  size_t needed = 0;
  CHECK_OK(sk_options_render_layered("early-start=0:strict-scope-check=abort", "split-mode=8:early-start=1", buf,
                                     sizeof buf, &needed));
  CHECK(strstr(buf, "early-start=1") && strstr(buf, "split-mode=8") && strstr(buf, "strict-scope-check=abort"));
  CHECK(needed == strlen(buf));
  CHECK_OK(sk_options_render_layered(NULL, "", buf, sizeof buf, NULL));
  CHECK(strstr(buf, "early-start=1") && !strstr(buf, "strict-scope-check"));
  CHECK_FAILS(sk_options_render_layered("early-start=9", "", buf, sizeof buf, NULL), SK_STATUS_INVALID_ARGUMENT,
              "global options", "early-start");
  CHECK_FAILS(sk_options_render_layered("", "frob=1", buf, sizeof buf, NULL), SK_STATUS_INVALID_ARGUMENT, "frob");
  CHECK_FAILS(sk_options_render_layered("", "", NULL, 4, NULL), SK_STATUS_INVALID_ARGUMENT,
              "sk_options_render_layered", "buf is NULL");
}

TEST_MAIN(TEST_CASE(test_defaults), TEST_CASE(test_legal_values), TEST_CASE(test_syntax),
          TEST_CASE(test_pair_without_equals), TEST_CASE(test_key_errors),
          TEST_CASE(test_illegal_values), TEST_CASE(test_error_leaves_defaults),
          TEST_CASE(test_render), TEST_CASE(test_layered), TEST_CASE(test_match),
          TEST_CASE(test_copy_equal_free), TEST_CASE(test_render_layered))
