/* The JIT cache: a directory of shared objects named by content hash, and
 * the objects this process has loaded. The directory itself (where, which
 * are safe, private compile directories) is cache_dir.c's; every access
 * here is relative to the descriptor it was checked through.
 *
 * Key: SHA-256 of the source, the compiler's argument vector and its
 * identity (sk__jit_key). The file name is the key, so a lookup is one
 * dlopen and nothing is ever overwritten with different contents.
 *
 * Writing: source, object and checksum are made in a private directory
 * under their final names, the object is loaded from there, and renameat()
 * moves the three into place (compile_into). rename is atomic within a file
 * system: a reader sees no file or a complete one. Two processes compiling
 * the same key build byte-identical objects (same source, same name, same
 * flags), so the second rename replaces an identical file and the checksum
 * matches whichever object is in place. A compile-options value that makes
 * objects differ (-g records the private directory) can pair one process's
 * checksum with the other's object: the next reader detects it and
 * rebuilds; nobody loads a wrong object.
 *
 * Checksum: beside each <key>.so, <key>.sha256 holds the SHA-256 of its
 * bytes (64 hex digits and a newline), renamed into place BEFORE the
 * object, so whoever sees an object sees a checksum.
 *
 * Loading (load_fd): an object is opened once (O_NOFOLLOW, a regular
 * file), hashed through that descriptor (a cache hit: compared with
 * <key>.sha256; a fresh compile: the hash becomes its checksum), and only
 * then is that same file dlopen(RTLD_NOW | RTLD_LOCAL)ed through
 * /proc/self/fd/N, so no code runs from a file that was not verified. That
 * descriptor stays open while the object is loaded, so no two loaded
 * objects share a name. Then the exported sk_jit_key and sk_jit_layout
 * must match. An entry that fails any check (truncated, corrupt, replaced
 * by another object, a missing or malformed checksum, a stale layout) is
 * deleted and rebuilt once.
 *
 * Loaded objects are kept in a process-wide list by key with a reference
 * count: identical super kernels (same source, so same key) share one
 * handle, and the last program to let go dlcloses it. One mutex guards the
 * list and the counters, and is held across a compile: compiles within a
 * process are serialized, which also keeps two threads from compiling the
 * same key twice. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/fork.h"
#include "core/fsize_guard.h"
#include "executors/jit/jit_internal.h"
#include "executors/jit/sha256.h"

struct sk__jit_object {
  sk__jit_object *next;
  char key[65];
  char scope[128]; /* the super kernel it was first loaded for */
  void *handle;
  int fd; /* what a cache hit was loaded through (load_verified), or -1 */
  sk_jit_entry_fn entry;
  int refs;
};

static sk__fork_mutex lock = SK__FORK_MUTEX_INITIALIZER;
static sk__jit_object *objects;
static sk__jit_counters counters;

void sk__jit_stats(sk__jit_counters *out) {
  sk__fork_mutex_lock(&lock);
  *out = counters;
  sk__fork_mutex_unlock(&lock);
}

sk_status sk__jit_key(const char *body, const sk__jit_compiler *cc, const sk__options *o, char key[65]) {
  /* File names are placeholders: temporary names differ every time. */
  int max = o->n_compile_options + 32;
  const char **argv = malloc((size_t)max * sizeof *argv);
  if (!argv) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "jit: out of memory");
  int n = sk__jit_argv(cc, o, "<out>.so", "<src>.c", argv, max);
  sk__sha256 h;
  sk__sha256_init(&h);
  sk__sha256_update(&h, body, strlen(body) + 1);
  for (int i = 0; i < n; i++) sk__sha256_update(&h, argv[i], strlen(argv[i]) + 1);
  free(argv);
  sk__sha256_update(&h, "", 1);
  sk__sha256_update(&h, cc->path, strlen(cc->path) + 1);
  sk__sha256_update(&h, cc->version, strlen(cc->version) + 1);
  unsigned char digest[32];
  sk__sha256_final(&h, digest);
  sk__sha256_hex(digest, key);
  return SK_STATUS_OK;
}

/* ---- loading ---- */

/* The SHA-256 of everything readable from fd, as hex; false on a read error. */
static bool hash_fd(int fd, char hex[65]) {
  sk__sha256 h;
  sk__sha256_init(&h);
  char buf[65536];
  for (;;) {
    ssize_t got = read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return false;
    if (got == 0) break;
    sk__sha256_update(&h, buf, (size_t)got);
  }
  unsigned char digest[32];
  sk__sha256_final(&h, digest);
  sk__sha256_hex(digest, hex);
  return true;
}

/* Reads the checksum file sum in dfd (64 lowercase hex digits, then an optional
 * newline and nothing else) into hex; false with *why set otherwise. */
static bool read_checksum(int dfd, const char *sum, char hex[65], char *why, size_t n) {
  /* O_NONBLOCK: a FIFO put there would block the open forever. */
  int fd = openat(dfd, sum, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    snprintf(why, n, "its checksum file <key>.sha256 cannot be read: %s", strerror(errno));
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(why, n, "its checksum file <key>.sha256 is not a regular file");
    close(fd);
    return false;
  }
  char buf[80];
  size_t len = 0;
  for (;;) {
    ssize_t got = read(fd, buf + len, sizeof buf - len);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    len += (size_t)got;
    if (len == sizeof buf) break;
  }
  close(fd);
  bool ok = len == 64 || (len == 65 && buf[64] == '\n');
  for (size_t i = 0; ok && i < 64; i++)
    ok = (buf[i] >= '0' && buf[i] <= '9') || (buf[i] >= 'a' && buf[i] <= 'f');
  if (!ok) {
    snprintf(why, n, "its checksum file <key>.sha256 is malformed");
    return false;
  }
  memcpy(hex, buf, 64);
  hex[64] = '\0';
  return true;
}

/* Checks a loaded object's exports (dlcloses it when they are wrong); on
 * failure *why says what was wrong. */
static void *load_checked(void *h, const char *key, sk_jit_entry_fn *entry, char *why, size_t n) {
  const char *got_key = dlsym(h, SK_JIT_KEY_SYMBOL);
  const unsigned *layout = dlsym(h, SK_JIT_LAYOUT_SYMBOL);
  void *fn = dlsym(h, SK_JIT_ENTRY_SYMBOL);
  if (!got_key || strcmp(got_key, key) != 0) snprintf(why, n, "its sk_jit_key does not match");
  else if (!layout || *layout != SK_JIT_LAYOUT_VERSION) snprintf(why, n, "its env layout is not version %d", SK_JIT_LAYOUT_VERSION);
  else if (!fn) snprintf(why, n, "it has no %s", SK_JIT_ENTRY_SYMBOL);
  else {
    memcpy(entry, &fn, sizeof fn); /* POSIX: object pointer to function pointer */
    return h;
  }
  dlclose(h);
  return NULL;
}

/* Loads the object open on fd (already verified) through /proc/self/fd
 * and checks its exports. The dynamic loader knows an object by the name
 * it was opened under: fd must stay open as long as the object is loaded,
 * or a reused N would name the object already loaded under it. */
static void *load_fd(int fd, const char *key, sk_jit_entry_fn *entry, char *why, size_t n) {
  char via[64];
  snprintf(via, sizeof via, "/proc/self/fd/%d", fd);
  void *h = dlopen(via, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(why, n, "%s", e ? e : "dlopen failed");
    return NULL;
  }
  return load_checked(h, key, entry, why, n);
}

/* Opens name in dfd for reading: a regular file, never a link, a FIFO
 * (which would block) or a device. -1 with *why set otherwise. */
static int open_regular(int dfd, const char *name, char *why, size_t n) {
  int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(why, n, "%s", fd < 0 ? strerror(errno) : "not a regular file");
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

/* Loads the cache entry <key>.so in dfd: a regular file whose SHA-256
 * equals the one in <key>.sha256, checked before dlopen on the very file
 * that is loaded. *fd_out gets the descriptor it was loaded through. */
static void *load_verified(int dfd, const char *key, sk_jit_entry_fn *entry, char *why, size_t n, int *fd_out) {
  char want[65], got[65], name[80];
  *fd_out = -1;
  snprintf(name, sizeof name, "%s.sha256", key);
  if (!read_checksum(dfd, name, want, why, n)) return NULL;
  snprintf(name, sizeof name, "%s.so", key);
  int fd = open_regular(dfd, name, why, n);
  if (fd < 0) return NULL;
  if (!hash_fd(fd, got)) {
    snprintf(why, n, "cannot read it: %s", strerror(errno));
    close(fd);
    return NULL;
  }
  if (strcmp(got, want) != 0) {
    snprintf(why, n, "its SHA-256 %.12s... does not match its checksum file (%.12s...)", got, want);
    close(fd);
    return NULL;
  }
  void *h = load_fd(fd, key, entry, why, n);
  if (h) *fd_out = fd;
  else close(fd);
  return h;
}

static bool write_all(int fd, const char *s, size_t n) {
  while (n) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    s += w;
    n -= (size_t)w;
  }
  return true;
}

/* Writes n bytes of text to the new file name in dfd (0600); shown is the
 * directory's path for messages. */
static sk_status write_new_file(int dfd, const char *shown, const char *name, const char *text, size_t n) {
  int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cannot create %s/%s: %s", shown, name, strerror(errno));
  bool ok = write_all(fd, text, n);
  int e = errno;
  if (close(fd) != 0 && ok) ok = false, e = errno;
  if (!ok) return sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cannot write %s/%s: %s", shown, name, strerror(e));
  return SK_STATUS_OK;
}

/* Compiles body (with its key line) into the cache as <key>.so and loads
 * it; *fd_out is the descriptor it was loaded through.
 *
 * Everything is built in a private directory (sk__jit_private_dir) under
 * the final names <key>.c, <key>.so, <key>.sha256, the compiler running
 * in it, so two processes compiling the same key produce byte-identical
 * objects (the compiler records the source's file name in the object) and
 * identical checksums: however their renames interleave, every published
 * checksum matches every published object. The object is loaded before it
 * is published, so this process never depends on a file another process
 * may replace or delete. Then the checksum, the object and the source are
 * renamed into place, in that order. */
static sk_status compile_into(const sk__jit_cache *c, const char *key, const char *body, const sk__options *o,
                              const sk__jit_compiler *cc, void **handle, sk_jit_entry_fn *entry, int *fd_out) {
  char priv[64], shown[PATH_MAX + 80], src[80], obj[80], sum[80], hex[65], why[512];
  int pfd = -1, ofd = -1;
  *handle = NULL;
  *fd_out = -1;
  sk__jit_sweep_orphans(c);
  SK_RETURN_IF_ERROR(sk__jit_private_dir(c, priv, &pfd));
  snprintf(shown, sizeof shown, "%s/%s", c->path, priv);
  snprintf(src, sizeof src, "%s.c", key);
  snprintf(obj, sizeof obj, "%s.so", key);
  snprintf(sum, sizeof sum, "%s.sha256", key);
  char *source = sk__jit_with_key(body, key);
  sk_status st = source ? write_new_file(pfd, shown, src, source, strlen(source))
                        : sk__fail(SK_STATUS_OUT_OF_MEMORY, "jit: out of memory");
  free(source);
  if (st == SK_STATUS_OK) st = sk__jit_compile(cc, o, pfd, src, obj);
  if (st == SK_STATUS_OK && (ofd = open_regular(pfd, obj, why, sizeof why)) < 0)
    st = sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cannot open %s/%s: %s", shown, obj, why);
  /* The linker makes it 0755 (umask permitting); like everything in the
   * cache it is the owner's alone (dlopen maps it without the x bits). */
  if (st == SK_STATUS_OK && fchmod(ofd, 0600) != 0)
    st = sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cannot chmod %s/%s: %s", shown, obj, strerror(errno));
  if (st == SK_STATUS_OK && !hash_fd(ofd, hex))
    st = sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cannot read %s/%s: %s", shown, obj, strerror(errno));
  if (st == SK_STATUS_OK) {
    hex[64] = '\n';
    st = write_new_file(pfd, shown, sum, hex, 65);
  }
  if (st == SK_STATUS_OK && !(*handle = load_fd(ofd, key, entry, why, sizeof why)))
    st = sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cannot load %s/%s: %s", shown, obj, why);
  /* Publish: checksum first, so whoever sees an object sees a checksum. */
  const char *names[] = {sum, obj, src};
  for (int i = 0; i < 3 && st == SK_STATUS_OK; i++)
    if (renameat(pfd, names[i], c->fd, names[i]) != 0 && i < 2) /* the source is for people: losing it is harmless */
      st = sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cannot rename %s/%s to %s/%s: %s", shown, names[i], c->path,
                    names[i], strerror(errno));
  if (st != SK_STATUS_OK && *handle) {
    dlclose(*handle);
    *handle = NULL;
  }
  if (*handle) *fd_out = ofd;
  else if (ofd >= 0) close(ofd);
  close(pfd);
  sk__jit_remove_private_dir(c->fd, priv); /* what was not moved */
  return st;
}

/* Moves the directory name in c aside, within the cache, to a new name
 * <name>.aside-<pid>-<n> (never over anything: RENAME_NOREPLACE). Returns
 * 0 with the new name in aside, or an errno value. */
static int move_aside(const sk__jit_cache *c, const char *name, char aside[128]) {
  static unsigned counter;
  for (int attempt = 0; attempt < 16; attempt++) {
    snprintf(aside, 128, "%s.aside-%ld-%u", name, (long)getpid(), __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
#ifdef RENAME_NOREPLACE /* glibc 2.28 */
    if (renameat2(c->fd, name, c->fd, aside, RENAME_NOREPLACE) == 0) return 0;
    if (errno == EEXIST) continue;
    if (errno != EINVAL && errno != ENOSYS) return errno;
#endif
    /* Without RENAME_NOREPLACE (C library or file system): look first (a
     * race with another process only makes it fail with ENOTEMPTY, or
     * replace an empty directory of the same made-up name). */
    struct stat st;
    if (fstatat(c->fd, aside, &st, AT_SYMLINK_NOFOLLOW) == 0) continue;
    return renameat(c->fd, name, c->fd, aside) == 0 ? 0 : errno;
  }
  return EEXIST;
}

/* A directory where one of key's files belongs: a renameat over it fails,
 * so the entry could never be made and every run would compile again and
 * fall back. It is repaired once: removed when empty; when it holds files
 * (not the cache's to delete), moved aside within the cache with a warning
 * naming where. Fails only when neither works (a read-only cache). */
static sk_status clear_directory_entries(const sk__jit_cache *c, const char *key) {
  static const char *const ext[] = {"so", "sha256", "c"};
  for (int i = 0; i < 3; i++) {
    char name[80], aside[128];
    struct stat st;
    snprintf(name, sizeof name, "%s.%s", key, ext[i]);
    if (fstatat(c->fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (unlinkat(c->fd, name, AT_REMOVEDIR) == 0) {
      sk__log(SK_LOG_INFO, "jit: removed the empty directory %s/%s where a cache entry belongs", c->path, name);
      continue;
    }
    int err = errno == ENOTEMPTY || errno == EEXIST ? move_aside(c, name, aside) : errno;
    if (err == 0) {
      sk__log(SK_LOG_WARN,
              "jit: cache entry %s/%s was a directory holding files; moved it aside to %s/%s so that the entry can be "
              "made (its files are not the cache's: look through them and remove it)",
              c->path, name, c->path, aside);
      continue;
    }
    return sk__fail(SK_STATUS_INVALID_STATE,
                    "jit: cache entry %s/%s is a directory, not a file, and it can be neither removed nor moved aside "
                    "(%s); remove it",
                    c->path, name, strerror(err));
  }
  return SK_STATUS_OK;
}

/* The private directories of processes killed during a compile (Ctrl-C,
 * SIGTERM: nothing of ours runs on the way out) go at the next compile
 * (compile_into) and, so that a cache whose entries all hit does not keep
 * them for ever, at each process's first lookup in each cache directory.
 * Called with the lock held. */
static void sweep_once(const sk__jit_cache *c) {
  static pid_t swept_by; /* a child of fork() sweeps again */
  static dev_t swept_dev;
  static ino_t swept_ino;
  struct stat st;
  pid_t self = getpid();
  if (fstat(c->fd, &st) != 0 || (swept_by == self && st.st_dev == swept_dev && st.st_ino == swept_ino)) return;
  sk__jit_sweep_orphans(c);
  swept_by = self;
  swept_dev = st.st_dev;
  swept_ino = st.st_ino;
}

static double ms_since(const struct timespec *t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* Called with the lock held. */
static sk_status find_or_build(const char *scope, const char *body, const sk__options *o, sk__jit_object **obj_out) {
  sk__jit_compiler cc;
  SK_RETURN_IF_ERROR(sk__jit_compiler_find(&cc));
  char key[65];
  SK_RETURN_IF_ERROR(sk__jit_key(body, &cc, o, key));
  for (sk__jit_object *obj = objects; obj; obj = obj->next)
    if (strcmp(obj->key, key) == 0) {
      obj->refs++;
      counters.reuses++;
      sk__log(SK_LOG_INFO, "jit: scope '%s': reusing the kernel compiled for scope '%s'", scope, obj->scope);
      *obj_out = obj;
      return SK_STATUS_OK;
    }
  sk__jit_cache c;
  SK_RETURN_IF_ERROR(sk__jit_cache_open(&c));
  sweep_once(&c);
  sk__jit_object *obj = calloc(1, sizeof *obj);
  if (!obj) {
    sk__jit_cache_close(&c);
    return sk__fail(SK_STATUS_OUT_OF_MEMORY, "jit: out of memory");
  }
  obj->fd = -1;
  snprintf(obj->key, sizeof obj->key, "%s", key);
  snprintf(obj->scope, sizeof obj->scope, "%s", scope);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  char so[80], sum[80], why[512];
  snprintf(so, sizeof so, "%s.so", key);
  snprintf(sum, sizeof sum, "%s.sha256", key);
  struct stat st;
  if (fstatat(c.fd, so, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
    obj->handle = load_verified(c.fd, key, &obj->entry, why, sizeof why, &obj->fd);
    if (obj->handle) {
      counters.hits++;
      sk__log(SK_LOG_INFO, "jit: scope '%s': cache hit (key %.12s...), loaded in %.2f ms", scope, key, ms_since(&t0));
    } else {
      sk__log(SK_LOG_INFO, "jit: scope '%s': cache entry %s/%s is unusable (%s); rebuilding it", scope, c.path, so,
              why);
      unlinkat(c.fd, so, 0);
      unlinkat(c.fd, sum, 0);
    }
  }
  sk_status status = SK_STATUS_OK;
  if (!obj->handle) {
    status = clear_directory_entries(&c, key);
    if (status == SK_STATUS_OK) status = compile_into(&c, key, body, o, &cc, &obj->handle, &obj->entry, &obj->fd);
    if (status == SK_STATUS_OK) {
      counters.compiles++;
      sk__log(SK_LOG_INFO, "jit: scope '%s': compiled in %.0f ms (key %.12s...)", scope, ms_since(&t0), key);
    }
  }
  sk__jit_cache_close(&c);
  if (status != SK_STATUS_OK) {
    free(obj);
    return status;
  }
  obj->refs = 1;
  obj->next = objects;
  objects = obj;
  *obj_out = obj;
  return SK_STATUS_OK;
}

sk_status sk__jit_acquire(const char *scope, const char *body, const sk__options *o, sk__jit_object **obj_out,
                          sk_jit_entry_fn *entry_out) {
  /* A file-size limit fails our writes with EFBIG instead of killing the
   * process with SIGXFSZ. */
  sk__fsize_guard guard;
  sk__fsize_guard_hold(&guard);
  sk__fork_mutex_lock(&lock);
  sk_status st = find_or_build(scope, body, o, obj_out);
  if (st == SK_STATUS_OK) *entry_out = (*obj_out)->entry;
  sk__fork_mutex_unlock(&lock);
  sk__fsize_guard_release(&guard);
  return st;
}

void sk__jit_release(sk__jit_object *obj) {
  if (!obj) return;
  sk__fork_mutex_lock(&lock);
  if (--obj->refs == 0) {
    for (sk__jit_object **at = &objects; *at; at = &(*at)->next)
      if (*at == obj) {
        *at = obj->next;
        break;
      }
    dlclose(obj->handle);
    if (obj->fd >= 0) close(obj->fd); /* only now may its number name another object */
    free(obj);
  }
  sk__fork_mutex_unlock(&lock);
}
