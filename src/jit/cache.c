/* The JIT cache: a directory of shared objects named by content hash, and
 * the objects this process has loaded.
 *
 * Key: SHA-256 of the source, the compiler's argument vector and its
 * identity (sk__jit_key). The file name is the key, so a lookup is one
 * dlopen and nothing is ever overwritten with different contents.
 *
 * Writing: source, object and checksum are made in a private mkdtemp
 * directory under their final names, the object is loaded from there, and
 * rename() moves the three into place (compile_into). rename is atomic
 * within a file system: a reader sees no file or a complete one. Two
 * processes compiling the same key build byte-identical objects (same
 * source, same name, same flags), so the second rename replaces an
 * identical file and the checksum matches whichever object is in place. A
 * compile-options value that makes objects differ (-g records the private
 * directory) can pair one process's checksum with the other's object: the
 * next reader detects it and rebuilds; nobody loads a wrong object.
 *
 * Checksum: beside each <key>.so, <key>.sha256 holds the SHA-256 of its
 * bytes (64 hex digits and a newline), written to a temporary and renamed
 * into place BEFORE the object, so whoever sees an object sees a checksum.
 *
 * Reading: the object is opened once (O_NOFOLLOW), hashed through that
 * descriptor and compared with <key>.sha256; only then is that same file
 * dlopen(RTLD_NOW | RTLD_LOCAL)ed, through /proc/self/fd where there is
 * one, so what is loaded is what was checked; that descriptor stays open
 * while the object is loaded, so no two loaded objects share a name. Then the exported
 * sk_jit_key and sk_jit_layout must match. An entry that fails any check
 * (truncated, corrupt, replaced by another object, a missing or malformed
 * checksum, a stale layout) is deleted and rebuilt once.
 *
 * Loaded objects are kept in a process-wide list by key with a reference
 * count: identical super kernels (same source, so same key) share one
 * handle, and the last program to let go dlcloses it. One mutex guards the
 * list and the counters, and is held across a compile: compiles within a
 * process are serialized, which also keeps two threads from compiling the
 * same key twice. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "jit/jit_internal.h"
#include "jit/sha256.h"

struct sk__jit_object {
  sk__jit_object *next;
  char key[65];
  char scope[128]; /* the super kernel it was first loaded for */
  void *handle;
  int fd; /* what a cache hit was loaded through (load_verified), or -1 */
  sk_jit_entry_fn entry;
  int refs;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sk__jit_object *objects;
static sk__jit_counters counters;

void sk__jit_stats(sk__jit_counters *out) {
  pthread_mutex_lock(&lock);
  *out = counters;
  pthread_mutex_unlock(&lock);
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

/* ---- the directory ---- */

/* mkdir -p, new directories 0700. */
static int make_dirs(char *path) {
  for (char *s = path + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    int rc = mkdir(path, 0700);
    *s = '/';
    if (rc != 0 && errno != EEXIST) return -1;
  }
  return mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

static bool cache_file(const char *name, bool *tmp);

/* The Cache Directory Tagging Specification's tag: marks the directory as
 * the cache's (backup tools skip it), and tells us it is one we made. */
#define CACHEDIR_TAG "CACHEDIR.TAG"
#define CACHEDIR_SIGNATURE "Signature: 8a477f597d28d172789f06886806bc55"

static bool has_tag(const char *dir) {
  char path[PATH_MAX + 32], head[sizeof CACHEDIR_SIGNATURE - 1];
  snprintf(path, sizeof path, "%s/" CACHEDIR_TAG, dir);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && read(fd, head, sizeof head) == (ssize_t)sizeof head &&
            memcmp(head, CACHEDIR_SIGNATURE, sizeof head) == 0;
  close(fd);
  return ok;
}

/* A directory without our tag is taken only when it holds nothing but
 * cache files (an empty one, or a cache from before the tag), and is then
 * tagged. Anything else is someone's directory (SK_CACHE_DIR=/, $HOME):
 * entries would be written, and `sk cache clear` would delete, among files
 * that are not ours. */
static sk_status claim_dir(const char *dir) {
  if (has_tag(dir)) return SK_STATUS_OK;
  DIR *d = opendir(dir);
  if (!d) return sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cache directory %s: %s", dir, strerror(errno));
  char foreign[256] = "";
  for (struct dirent *e; !foreign[0] && (e = readdir(d));) {
    bool tmp;
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || strcmp(e->d_name, CACHEDIR_TAG) == 0) continue;
    if (!cache_file(e->d_name, &tmp) && strncmp(e->d_name, "tmp-", 4) != 0)
      snprintf(foreign, sizeof foreign, "%s", e->d_name);
  }
  closedir(d);
  if (foreign[0])
    return sk__fail(SK_STATUS_INVALID_STATE,
                    "jit: refusing cache directory %s: it holds '%s', which is not the cache's (point SK_CACHE_DIR at "
                    "a directory of its own: an empty one, or one this library made)",
                    dir, foreign);
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/" CACHEDIR_TAG, dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0) { /* else read-only, or another process just wrote it: both fine */
    static const char text[] = CACHEDIR_SIGNATURE "\n# This file marks the superkernel JIT cache (https://bford.info/cachedir/).\n";
    ssize_t w = write(fd, text, sizeof text - 1);
    (void)w; /* a short tag only makes the next start look again */
    close(fd);
  }
  return SK_STATUS_OK;
}

sk_status sk__jit_cache_dir(char *buf, size_t n) {
  const char *dir = getenv("SK_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  int len;
  if (dir && *dir) len = snprintf(buf, n, "%s", dir);
  else if (xdg && xdg[0] == '/') len = snprintf(buf, n, "%s/superkernel", xdg); /* the XDG spec: relative is invalid */
  else {
    struct passwd pw, *found = NULL;
    char pwbuf[4096];
    if ((!home || !*home) && getpwuid_r(getuid(), &pw, pwbuf, sizeof pwbuf, &found) == 0 && found) home = pw.pw_dir;
    if (!home) return sk__fail(SK_STATUS_NOT_FOUND, "jit: no cache directory: set $SK_CACHE_DIR or $HOME");
    len = snprintf(buf, n, "%s/.cache/superkernel", home);
  }
  if (len < 0 || (size_t)len >= n) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "jit: cache directory path is too long");
  while (len > 1 && buf[len - 1] == '/') buf[--len] = '\0';
  if (make_dirs(buf) != 0)
    return sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cannot create cache directory %s: %s", buf, strerror(errno));
  /* Whoever can write the directory can put code into this process: refuse
   * anything but a real directory of ours that only we can write. */
  struct stat st;
  if (lstat(buf, &st) != 0)
    return sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cache directory %s: %s", buf, strerror(errno));
  if (S_ISLNK(st.st_mode))
    return sk__fail(SK_STATUS_INVALID_STATE, "jit: refusing cache directory %s: it is a symbolic link", buf);
  if (!S_ISDIR(st.st_mode))
    return sk__fail(SK_STATUS_INVALID_STATE, "jit: refusing cache directory %s: not a directory", buf);
  if (st.st_uid != geteuid())
    return sk__fail(SK_STATUS_INVALID_STATE, "jit: refusing cache directory %s: owned by uid %u, not by uid %u", buf,
                    (unsigned)st.st_uid, (unsigned)geteuid());
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return sk__fail(SK_STATUS_INVALID_STATE,
                    "jit: refusing cache directory %s: writable by group or others (mode %04o; chmod 700 it)", buf,
                    (unsigned)(st.st_mode & 07777));
  return claim_dir(buf);
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

/* Reads the checksum file sum (64 lowercase hex digits, then an optional
 * newline and nothing else) into hex; false with *why set otherwise. */
static bool read_checksum(const char *sum, char hex[65], char *why, size_t n) {
  /* O_NONBLOCK: a FIFO put there would block the open forever. */
  int fd = open(sum, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
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

/* Loads path (an object this process just built) and checks its exports. */
static void *load(const char *path, const char *key, sk_jit_entry_fn *entry, char *why, size_t n) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(why, n, "%s", e ? e : "dlopen failed");
    return NULL;
  }
  return load_checked(h, key, entry, why, n);
}

/* Loads a cache entry: path must be a regular file whose SHA-256 equals
 * the one in sum, checked before dlopen on the very file that is loaded.
 * *fd_out gets the descriptor it was loaded through, open as long as the
 * object is loaded (-1: none): the dynamic loader knows an object by the
 * name it was opened under, and a /proc/self/fd/N whose N was closed and
 * reused would name the object already loaded under it, not the new one. */
static void *load_verified(const char *path, const char *sum, const char *key, sk_jit_entry_fn *entry, char *why,
                           size_t n, int *fd_out) {
  *fd_out = -1;
  char want[65], got[65];
  if (!read_checksum(sum, want, why, n)) return NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK); /* a FIFO must not block */
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(why, n, "%s", fd < 0 ? strerror(errno) : "not a regular file");
    if (fd >= 0) close(fd);
    return NULL;
  }
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
  char via[64];
  snprintf(via, sizeof via, "/proc/self/fd/%d", fd);
  bool through_fd = access(via, F_OK) == 0;
  void *h = dlopen(through_fd ? via : path, RTLD_NOW | RTLD_LOCAL);
  if (h) h = load_checked(h, key, entry, why, n);
  else {
    const char *e = dlerror();
    snprintf(why, n, "%s", e ? e : "dlopen failed");
  }
  if (h && through_fd) *fd_out = fd;
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

/* Hashes the object obj and writes the hex digest to the new file sum. */
static sk_status write_checksum(const char *obj, const char *sum) {
  char hex[65];
  int fd = open(obj, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cannot read %s: %s", obj, strerror(errno));
  bool ok = hash_fd(fd, hex);
  close(fd);
  if (!ok) return sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cannot read %s: %s", obj, strerror(errno));
  hex[64] = '\n';
  fd = open(sum, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cannot create %s: %s", sum, strerror(errno));
  ok = write_all(fd, hex, 65);
  if (close(fd) != 0 || !ok) return sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cannot write %s: %s", sum, strerror(errno));
  return SK_STATUS_OK;
}

/* Writes text to the new file path (0600). */
static sk_status write_new_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cannot create a file in %s: %s", path, strerror(errno));
  bool ok = write_all(fd, text, strlen(text));
  if (close(fd) != 0 || !ok) return sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cannot write %s: %s", path, strerror(errno));
  return SK_STATUS_OK;
}

/* Removes a compile's private directory: every file in it (ours, or one a
 * compile-options flag made the compiler write beside its output, such as
 * -gsplit-dwarf's .dwo), then the directory. It was made 0700 by mkdtemp;
 * entries are unlinked through the opened directory, never followed. */
static bool remove_private_dir(const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0) close(fd);
    return false;
  }
  for (struct dirent *e; (e = readdir(d));)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) unlinkat(dirfd(d), e->d_name, 0);
  closedir(d);
  return rmdir(path) == 0;
}

/* Compiles body (with its key line) into dir/<key>.so and loads it.
 *
 * Everything is built in a private directory dir/tmp-XXXXXX (mkdtemp,
 * 0700) under the final names <key>.c, <key>.so, <key>.sha256, so two
 * processes compiling the same key produce byte-identical objects (the
 * compiler records the source's file name in the object) and identical
 * checksums: however their renames interleave, every published checksum
 * matches every published object. The object is loaded from the private
 * directory before it is published, so this process never depends on a
 * file another process may replace or delete. Then the checksum, the
 * object and the source are renamed into place, in that order. */
static sk_status compile_into(const char *dir, const char *key, const char *body, const sk__options *o,
                              const sk__jit_compiler *cc, void **handle, sk_jit_entry_fn *entry) {
  char tmp[PATH_MAX], src[PATH_MAX + 96], obj[PATH_MAX + 96], sum[PATH_MAX + 96], final[PATH_MAX + 96], why[512];
  if (snprintf(tmp, sizeof tmp, "%s/tmp-XXXXXX", dir) >= (int)sizeof tmp - 80)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "jit: cache directory path %s is too long", dir);
  if (!mkdtemp(tmp)) return sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cannot create a file in %s: %s", dir, strerror(errno));
  snprintf(src, sizeof src, "%s/%s.c", tmp, key);
  snprintf(obj, sizeof obj, "%s/%s.so", tmp, key);
  snprintf(sum, sizeof sum, "%s/%s.sha256", tmp, key);
  char *source = sk__jit_with_key(body, key);
  sk_status st = source ? write_new_file(src, source) : sk__fail(SK_STATUS_OUT_OF_MEMORY, "jit: out of memory");
  free(source);
  if (st == SK_STATUS_OK) st = sk__jit_compile(cc, o, src, obj);
  /* The linker makes it 0755 (umask permitting); like everything in the
   * cache it is the owner's alone (dlopen maps it without the x bits). */
  if (st == SK_STATUS_OK && chmod(obj, 0600) != 0)
    st = sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cannot chmod %s: %s", obj, strerror(errno));
  if (st == SK_STATUS_OK) st = write_checksum(obj, sum);
  if (st == SK_STATUS_OK && !(*handle = load(obj, key, entry, why, sizeof why)))
    st = sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cannot load %s: %s", obj, why);
  /* Publish: checksum first, so whoever sees an object sees a checksum. */
  static const char *const ext[] = {"sha256", "so", "c"};
  const char *from[] = {sum, obj, src};
  for (int i = 0; i < 3 && st == SK_STATUS_OK; i++) {
    snprintf(final, sizeof final, "%s/%s.%s", dir, key, ext[i]);
    if (rename(from[i], final) != 0 && i < 2) /* the source is for people: losing it is harmless */
      st = sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cannot rename %s to %s: %s", from[i], final, strerror(errno));
  }
  if (st != SK_STATUS_OK && *handle) {
    dlclose(*handle);
    *handle = NULL;
  }
  remove_private_dir(tmp); /* what was not moved */
  return st;
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
  char dir[PATH_MAX], path[PATH_MAX + 80], sum[PATH_MAX + 80], why[512];
  SK_RETURN_IF_ERROR(sk__jit_cache_dir(dir, sizeof dir));
  snprintf(path, sizeof path, "%s/%s.so", dir, key);
  snprintf(sum, sizeof sum, "%s/%s.sha256", dir, key);
  sk__jit_object *obj = calloc(1, sizeof *obj);
  if (!obj) return sk__fail(SK_STATUS_OUT_OF_MEMORY, "jit: out of memory");
  obj->fd = -1;
  snprintf(obj->key, sizeof obj->key, "%s", key);
  snprintf(obj->scope, sizeof obj->scope, "%s", scope);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (access(path, F_OK) == 0) {
    obj->handle = load_verified(path, sum, key, &obj->entry, why, sizeof why, &obj->fd);
    if (obj->handle) {
      counters.hits++;
      sk__log(SK_LOG_INFO, "jit: scope '%s': cache hit (key %.12s...), loaded in %.2f ms", scope, key, ms_since(&t0));
    } else {
      sk__log(SK_LOG_INFO, "jit: scope '%s': cache entry %s is unusable (%s); rebuilding it", scope, path, why);
      unlink(path);
      unlink(sum);
    }
  }
  if (!obj->handle) {
    sk_status st = compile_into(dir, key, body, o, &cc, &obj->handle, &obj->entry);
    if (st != SK_STATUS_OK) {
      free(obj);
      return st;
    }
    counters.compiles++;
    sk__log(SK_LOG_INFO, "jit: scope '%s': compiled in %.0f ms (key %.12s...)", scope, ms_since(&t0), key);
  }
  obj->refs = 1;
  obj->next = objects;
  objects = obj;
  *obj_out = obj;
  return SK_STATUS_OK;
}

sk_status sk__jit_acquire(const char *scope, const char *body, const sk__options *o, sk__jit_object **obj_out,
                          sk_jit_entry_fn *entry_out) {
  pthread_mutex_lock(&lock);
  sk_status st = find_or_build(scope, body, o, obj_out);
  if (st == SK_STATUS_OK) *entry_out = (*obj_out)->entry;
  pthread_mutex_unlock(&lock);
  return st;
}

void sk__jit_release(sk__jit_object *obj) {
  if (!obj) return;
  pthread_mutex_lock(&lock);
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
  pthread_mutex_unlock(&lock);
}

/* ---- public: the cache for `sk cache path|list|clear` ---- */

sk_status sk_jit_cache_path(char *buf, size_t size) {
  sk__clear_error();
  if (!buf || size == 0) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_jit_cache_path: buf is NULL or size is 0");
  return sk__jit_cache_dir(buf, size);
}

/* Whether name is ours: <64 hex>.so / .c / .sha256, or a temporary
 * "tmp-*" with one of those suffixes (tmp says whether it is one). */
static bool cache_file(const char *name, bool *tmp) {
  size_t n = strlen(name), suffix = 0;
  static const char *const suffixes[] = {".so", ".c", ".sha256"};
  for (int i = 0; i < 3 && !suffix; i++) {
    size_t k = strlen(suffixes[i]);
    if (n > k && strcmp(name + n - k, suffixes[i]) == 0) suffix = k;
  }
  if (!suffix) return false;
  *tmp = strncmp(name, "tmp-", 4) == 0;
  if (*tmp) return true;
  if (n != 64 + suffix) return false;
  for (size_t i = 0; i < 64; i++)
    if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return false;
  return true;
}

sk_status sk_jit_cache_clear(size_t *removed) {
  sk__clear_error();
  if (removed) *removed = 0;
  char dir[PATH_MAX];
  SK_RETURN_IF_ERROR(sk__jit_cache_dir(dir, sizeof dir));
  DIR *d = opendir(dir);
  if (!d) return sk__fail(SK_STATUS_SYSTEM_ERROR, "sk_jit_cache_clear: cannot open %s: %s", dir, strerror(errno));
  time_t now = time(NULL);
  struct dirent *e;
  while ((e = readdir(d))) {
    bool tmp;
    struct stat st;
    if (strncmp(e->d_name, "tmp-", 4) == 0 && fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISDIR(st.st_mode)) { /* a compile's private directory */
      char path[PATH_MAX + 256];
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      if (now - st.st_mtime >= 600 && remove_private_dir(path) && removed) (*removed)++;
      continue;
    }
    if (!cache_file(e->d_name, &tmp)) continue;
    /* A recent temporary may be another process's compile in progress;
     * only leftovers of crashed compiles (older than 10 minutes) go. */
    if (tmp && (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || now - st.st_mtime < 600)) continue;
    if (unlinkat(dirfd(d), e->d_name, 0) == 0 && removed) (*removed)++;
  }
  closedir(d);
  return SK_STATUS_OK;
}
