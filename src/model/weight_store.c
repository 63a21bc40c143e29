/* The model's own weights, file-backed once packed (weight_store.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "model/weight_store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21 /* linux/mman.h, Linux 5.4 */
#endif
#define MIN_FILE_BYTES ((size_t)1 << 20) /* smaller buffers are not worth a file */
#define TMPFS_MAGIC 0x01021994
#define RAMFS_MAGIC 0x858458f6

static const char *weights_dir(void) {
  const char *d = getenv("SUPERKERNEL_WEIGHTS_DIR");
  if (!d || !*d) d = getenv("TMPDIR");
  return d && *d ? d : "/tmp";
}

static bool in_memory_wanted(void) {
  const char *v = getenv("SUPERKERNEL_WEIGHTS_IN_MEMORY");
  return v && *v && strcmp(v, "0") != 0;
}

/* An unlinked file of `bytes` in dir, allocated on disk; -1 (why in
 * *why) when none can be made or it would sit in memory anyway. */
static int backing_file(const char *dir, size_t bytes, const char **why) {
  struct statfs fs;
  if (statfs(dir, &fs) != 0) {
    *why = "the directory cannot be read";
    return -1;
  }
  if (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC) {
    *why = "the directory is in memory (tmpfs)";
    return -1;
  }
  int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) { /* a file system without O_TMPFILE: a named file, unlinked at once */
    char path[4096];
    snprintf(path, sizeof path, "%s/superkernel-weights-XXXXXX", dir);
    fd = mkostemp(path, O_CLOEXEC);
    if (fd >= 0) unlink(path);
  }
  if (fd < 0) {
    *why = "no file can be made there";
    return -1;
  }
  int err = posix_fallocate(fd, 0, (off_t)bytes);
  if (err != 0) {
    close(fd);
    *why = err == ENOSPC ? "no space left for it" : "its file cannot be allocated";
    return -1;
  }
  return fd;
}

void *sk__weight_store_alloc(sk__weight_store *s, size_t bytes) {
  if (bytes == 0) return NULL;
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 64;
    sk__stored_weight *items = realloc(s->items, cap * sizeof *items);
    if (!items) return NULL;
    s->items = items, s->cap = cap;
  }
  sk__stored_weight w = {NULL, bytes, false};
  if (bytes >= MIN_FILE_BYTES && !in_memory_wanted()) {
    const char *why = NULL, *dir = weights_dir();
    int fd = backing_file(dir, bytes, &why);
    if (fd >= 0) {
      void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      close(fd); /* the mapping keeps the file */
      if (p != MAP_FAILED) w.data = p, w.mapped = true;
      else why = "it cannot be mapped";
    }
    if (!w.data && !s->in_memory_logged) {
      s->in_memory_logged = true;
      sk__log(SK_LOG_WARN, "the weights made at create (w8a8's int8, a checkpoint's dequantized FP8) stay in "
              "memory beside their packed copy (%s: %s; SUPERKERNEL_WEIGHTS_DIR names another)", dir, why);
    }
  }
  if (!w.data) w.data = sk__aligned_alloc(bytes);
  if (!w.data) return NULL;
  s->items[s->n++] = w;
  return w.data;
}

void sk__weight_store_page_out(sk__weight_store *s) {
  for (size_t i = 0; i < s->n; i++)
    if (s->items[i].mapped) (void)madvise(s->items[i].data, s->items[i].bytes, MADV_PAGEOUT); /* a hint */
}

void sk__weight_store_release(sk__weight_store *s) {
  for (size_t i = 0; i < s->n; i++) {
    if (s->items[i].mapped) munmap(s->items[i].data, s->items[i].bytes);
    else sk__aligned_free(s->items[i].data);
  }
  free(s->items);
  memset(s, 0, sizeof *s);
}
