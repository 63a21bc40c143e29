/* The op case table (tests/cases/ops.cases), read into cases: what the C
 * conformance test runs and the bad-input test derives its rows from. The
 * Python op tests read the same file (tests/python/_cases.py). */
#ifndef SK_TESTS_CASE_TABLE_H
#define SK_TESTS_CASE_TABLE_H

#include <stddef.h>

#include "superkernel.h"

#define CASE_MAX_LIST 3
#define CASE_MAX_SLOTS 8
#define CASE_MAX_ATTRS 8
#define CASE_MAX_VALUES 64 /* literal values (=v0,v1,...) in one case, all slots together */

typedef struct case_tensor {
  sk_dtype dtype;
  int rank;
  int64_t shape[SK_MAX_RANK];
} case_tensor;

/* A literal value: .i for the integer dtypes and bool, .f for the floats. */
typedef union case_value {
  int64_t i;
  double f;
} case_value;

typedef struct case_slot {
  char name[48];
  int count;                 /* tensors in the slot (a list slot may take several) */
  case_tensor t[CASE_MAX_LIST];
  double lo, hi;             /* when hi > lo: its values are drawn from [lo, hi) */
  int n_values;              /* when > 0: its one tensor holds exactly these values, */
  int first_value;           /* op_case.values[first_value ...], in row-major order */
} case_slot;

typedef struct op_case {
  char op[48];
  char what[96];
  case_slot slots[CASE_MAX_SLOTS];
  int n_slots;
  sk_attr attrs[CASE_MAX_ATTRS]; /* names and lists point into the case */
  size_t n_attrs;
  char attr_names[CASE_MAX_ATTRS][48];
  int64_t attr_ints[CASE_MAX_ATTRS][SK_MAX_RANK];
  case_value values[CASE_MAX_VALUES]; /* the slots' literal values */
  int n_values;
  int line;                  /* in the file, for messages */
} op_case;

/* Reads every case of the file at path (NULL: the source tree's, whose
 * path the build gives as SK_CASES_FILE). Returns the count and sets
 * *cases (free with free()); -1 with a message on stderr naming the line
 * when the file cannot be read or a line does not parse. */
int case_table_read(const char *path, op_case **cases);

/* Parses one line of the table's format into *c (for the reader's own
 * tests); -1 with a message on stderr when it does not parse. */
int case_table_parse_line(const char *text, op_case *c);

#endif
