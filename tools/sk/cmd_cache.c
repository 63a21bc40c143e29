/*
 * sk cache path|list|clear — the JIT cache: where it is (sk_jit_cache_path),
 * what it holds (each <key>.so with its size and time), and emptying it
 * (sk_jit_cache_clear).
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "sk.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

static const char synopsis[] = "cache path|list|clear";

static void usage(void) {
  printf("usage: sk %s\n\n"
         "The JIT cache: compiled super kernels as <key>.so beside their source <key>.c,\n"
         "in $SK_CACHE_DIR, else $XDG_CACHE_HOME/superkernel, else ~/.cache/superkernel\n"
         "(created 0700 when missing; a directory that is a symbolic link, not yours or\n"
         "writable by group or others is refused: exit 1).\n\n"
         "  path         print the cache directory\n"
         "  list         print each entry (<key>.so) with its size in bytes and its\n"
         "               modification time, sorted by key, then a total line\n"
         "  clear        delete every entry (objects, sources and temporaries left by\n"
         "               interrupted compiles) and print how many files were removed;\n"
         "               programs already running keep their loaded objects\n"
         "  -h, --help   this help\n",
         synopsis);
}

/* A cache entry's object: 64 lowercase hex digits and ".so". */
static bool is_entry(const char *name) {
  if (strlen(name) != 64 + 3 || strcmp(name + 64, ".so") != 0) return false;
  for (int i = 0; i < 64; i++)
    if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return false;
  return true;
}

typedef struct entry {
  char name[68];
  long long bytes;
  time_t mtime;
} entry;

static int cmp_entry(const void *a, const void *b) {
  return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

static int cache_dir(char *dir, size_t size) {
  sk_status st = sk_jit_cache_path(dir, size);
  if (st != SK_STATUS_OK) {
    fprintf(stderr, "sk cache: %s\n", sk_last_error());
    return SK_EXIT_FAIL;
  }
  return SK_EXIT_OK;
}

static int list(void) {
  char dir[PATH_MAX];
  int rc = cache_dir(dir, sizeof dir);
  if (rc != SK_EXIT_OK) return rc;
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "sk cache: cannot open %s: %s\n", dir, strerror(errno));
    return SK_EXIT_FAIL;
  }
  entry *es = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (!is_entry(e->d_name)) continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
      continue; /* removed meanwhile, or not a file */
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      entry *grown = realloc(es, cap * sizeof *es);
      if (!grown) {
        fprintf(stderr, "sk cache: out of memory\n");
        free(es);
        closedir(d);
        return SK_EXIT_FAIL;
      }
      es = grown;
    }
    memcpy(es[n].name, e->d_name, 64 + 3 + 1); /* is_entry: exactly 67 characters */
    es[n].bytes = (long long)st.st_size;
    es[n].mtime = st.st_mtime;
    n++;
  }
  closedir(d);
  if (n) qsort(es, n, sizeof *es, cmp_entry);
  long long total = 0;
  for (size_t i = 0; i < n; i++) {
    char when[32] = "?";
    struct tm tm;
    if (localtime_r(&es[i].mtime, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    printf("%s  %10lld bytes  %s\n", es[i].name, es[i].bytes, when);
    total += es[i].bytes;
  }
  printf("total: %zu entr%s, %lld bytes in %s\n", n, n == 1 ? "y" : "ies", total, dir);
  free(es);
  return SK_EXIT_OK;
}

int sk_cmd_cache(int argc, char **argv) {
  const char *action = NULL;
  cli_positional pos = {"action", &action, 1, 0};
  bool help;
  int rc = cli_parse_args("cache", synopsis, usage, argc, argv, NULL, 0, &pos, &help);
  if (rc != SK_EXIT_OK || help) return rc;
  if (!action) return cli_usage_error("cache", synopsis, "missing the action (path, list or clear)");
  if (strcmp(action, "path") == 0) {
    char dir[PATH_MAX];
    rc = cache_dir(dir, sizeof dir);
    if (rc == SK_EXIT_OK) printf("%s\n", dir);
    return rc;
  }
  if (strcmp(action, "list") == 0) return list();
  if (strcmp(action, "clear") == 0) {
    char dir[PATH_MAX];
    rc = cache_dir(dir, sizeof dir);
    if (rc != SK_EXIT_OK) return rc;
    size_t removed = 0;
    sk_status st = sk_jit_cache_clear(&removed);
    if (st != SK_STATUS_OK) {
      fprintf(stderr, "sk cache: %s\n", sk_last_error());
      return SK_EXIT_FAIL;
    }
    printf("removed %zu file%s from %s\n", removed, removed == 1 ? "" : "s", dir);
    return SK_EXIT_OK;
  }
  return cli_usage_error("cache", synopsis, "unknown action '%s' (path, list or clear)", action);
}
