/*
 * sk npy FILE... — print each .npy file's dtype, shape, checksum and hash in
 * the form `sk run` prints its outputs, so saved files can be compared with
 * a run (and read problems are reported as `sk run --inputs` reports them).
 */
#include <string.h>

#include "models.h"
#include "npy.h"
#include "sk.h"

static const char synopsis[] = "npy FILE...";

static void usage(void) {
  printf("usage: sk %s\n\n"
         "Reads each NumPy .npy file (fp32, fp16, int8, int32, int64; bf16 as '<u2' or\n"
         "'<V2') and prints its dtype, shape, checksum (the sum of its values) and\n"
         "FNV-1a hash of its bytes, as 'sk run' prints outputs. An unreadable or\n"
         "invalid file prints the problem and makes the exit status 2.\n\n"
         "  -h, --help    this help\n",
         synopsis);
}

int sk_cmd_npy(int argc, char **argv) {
  int n_files = 0;
  bool positional_only = false;
  for (int i = 1; i < argc; i++) {
    if (!positional_only && cli_is_help(argv[i])) {
      usage();
      return SK_EXIT_OK;
    }
    if (!positional_only && strcmp(argv[i], "--") == 0) positional_only = true;
    else if (!positional_only && argv[i][0] == '-' && argv[i][1] != '\0')
      return cli_usage_error("npy", synopsis, "unknown option '%s'", argv[i]);
    else n_files++;
  }
  if (n_files == 0) return cli_usage_error("npy", synopsis, "missing FILE");

  int rc = SK_EXIT_OK;
  positional_only = false;
  for (int i = 1; i < argc; i++) {
    if (!positional_only && strcmp(argv[i], "--") == 0) {
      positional_only = true;
      continue;
    }
    skm_npy_array a;
    char msg[1024], shape[160];
    sk_status st = skm_npy_read(argv[i], &a, msg, sizeof msg);
    if (st != SK_STATUS_OK) {
      fprintf(stderr, "sk npy: %s\n", msg);
      if (rc == SK_EXIT_OK) rc = st == SK_STATUS_OUT_OF_MEMORY ? SK_EXIT_FAIL : SK_EXIT_USAGE;
      continue;
    }
    skm_tensor t = {.name = argv[i], .dtype = a.dtype, .rank = a.rank, .numel = a.numel, .data = a.data,
                    .bytes = a.bytes};
    memcpy(t.shape, a.shape, sizeof t.shape);
    printf("%s: %s %s  checksum %.6f  hash %016llx\n", argv[i], sk_dtype_name(a.dtype),
           skm_format_shape(a.rank, a.shape, shape, sizeof shape), skm_checksum(&t), (unsigned long long)skm_hash(&t));
    skm_npy_free(&a);
  }
  return rc;
}
