/*
 * sk npy FILE... — print each .npy file's dtype, shape, checksum and hash in
 * the form `sk run` prints its outputs, so saved files can be compared with
 * a run (and read problems are reported as `sk run --inputs` reports them).
 */
#include <stdlib.h>
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
         "  --            the arguments after it are files, even if they start with '-'\n"
         "  -h, --help    this help\n",
         synopsis);
}

/* Prints one file's line; the exit status its problem (if any) calls for. */
static int print_npy(const char *path) {
  skm_npy_array a;
  char msg[1024], shape[160];
  sk_status st = skm_npy_read(path, &a, msg, sizeof msg);
  if (st != SK_STATUS_OK) {
    fprintf(stderr, "sk npy: %s\n", msg);
    return st == SK_STATUS_OUT_OF_MEMORY ? SK_EXIT_FAIL : SK_EXIT_USAGE;
  }
  skm_tensor t = {.name = path, .dtype = a.dtype, .rank = a.rank, .numel = a.numel, .data = a.data, .bytes = a.bytes};
  memcpy(t.shape, a.shape, sizeof t.shape);
  printf("%s: %s %s  checksum %.6f  hash %016llx\n", path, sk_dtype_name(a.dtype),
         skm_format_shape(a.rank, a.shape, shape, sizeof shape), skm_checksum(&t), (unsigned long long)skm_hash(&t));
  skm_npy_free(&a);
  return SK_EXIT_OK;
}

int sk_cmd_npy(int argc, char **argv) {
  const char **files = calloc((size_t)argc, sizeof *files);
  if (!files) {
    fprintf(stderr, "sk npy: out of memory\n");
    return SK_EXIT_FAIL;
  }
  cli_positional pos = {"FILE", files, argc, 0};
  bool help;
  int rc = cli_parse_args("npy", synopsis, usage, argc, argv, NULL, 0, &pos, &help);
  if (rc == SK_EXIT_OK && !help && pos.n == 0) rc = cli_usage_error("npy", synopsis, "missing FILE");
  if (rc == SK_EXIT_OK && !help)
    for (int i = 0; i < pos.n; i++) { /* every file, the first problem's status */
      int r = print_npy(files[i]);
      if (rc == SK_EXIT_OK) rc = r;
    }
  free(files);
  return rc;
}
