/* The JIT cache directory: where it is, whether it is safe, and the files
 * in it, always through one descriptor.
 *
 * The directory is checked once, on the descriptor that was opened
 * (O_DIRECTORY | O_NOFOLLOW, then fstat: a directory of ours that only we
 * can write), and every later access is relative to that descriptor
 * (openat, renameat, unlinkat; the compiler runs in a private directory
 * opened the same way). Whoever can rename inside the cache's parent can
 * swap another directory in at the path after the check; with paths that
 * would get their object loaded, with the descriptor it changes nothing.
 *
 * A compile's private directory is named tmp-<pid namespace>-<pid>-<random>,
 * so that one left by a killed process can be told from one in progress:
 * every compile first removes those of processes of our PID namespace
 * that no longer exist. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "executors/jit/jit_internal.h"

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

/* The Cache Directory Tagging Specification's tag: marks the directory as
 * the cache's (backup tools skip it), and tells us it is one we made. */
#define CACHEDIR_TAG "CACHEDIR.TAG"
#define CACHEDIR_SIGNATURE "Signature: 8a477f597d28d172789f06886806bc55"

static bool has_tag(int dfd) {
  char head[sizeof CACHEDIR_SIGNATURE - 1];
  int fd = openat(dfd, CACHEDIR_TAG, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && read(fd, head, sizeof head) == (ssize_t)sizeof head &&
            memcmp(head, CACHEDIR_SIGNATURE, sizeof head) == 0;
  close(fd);
  return ok;
}

/* A new stream over the directory dfd (which stays open). */
static DIR *open_stream(int dfd) {
  int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d && fd >= 0) close(fd);
  return d;
}

/* A directory without our tag is taken only when it holds nothing but
 * cache files (an empty one, or a cache from before the tag), and is then
 * tagged. Anything else is someone's directory (SK_CACHE_DIR=/, $HOME):
 * entries would be written, and `sk cache clear` would delete, among files
 * that are not ours. */
static sk_status claim_dir(const sk__jit_cache *c) {
  if (has_tag(c->fd)) return SK_STATUS_OK;
  DIR *d = open_stream(c->fd);
  if (!d) return sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cache directory %s: %s", c->path, strerror(errno));
  char foreign[256] = "";
  for (struct dirent *e; !foreign[0] && (e = readdir(d));) {
    bool tmp;
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || strcmp(e->d_name, CACHEDIR_TAG) == 0) continue;
    if (!sk__jit_cache_file(e->d_name, &tmp) && strncmp(e->d_name, "tmp-", 4) != 0)
      snprintf(foreign, sizeof foreign, "%s", e->d_name);
  }
  closedir(d);
  if (foreign[0])
    return sk__fail(SK_STATUS_INVALID_STATE,
                    "jit: refusing cache directory %s: it holds '%s', which is not the cache's (point SK_CACHE_DIR at "
                    "a directory of its own: an empty one, or one this library made)",
                    c->path, foreign);
  int fd = openat(c->fd, CACHEDIR_TAG, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0) { /* else read-only, or another process just wrote it: both fine */
    static const char text[] = CACHEDIR_SIGNATURE "\n# This file marks the superkernel JIT cache (https://bford.info/cachedir/).\n";
    ssize_t w = write(fd, text, sizeof text - 1);
    (void)w; /* a short tag only makes the next start look again */
    close(fd);
  }
  return SK_STATUS_OK;
}

/* $SK_CACHE_DIR, else $XDG_CACHE_HOME/superkernel, else ~/.cache/superkernel. */
static sk_status locate(char *buf, size_t n) {
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
  return SK_STATUS_OK;
}

sk_status sk__jit_cache_open(sk__jit_cache *c) {
  c->fd = -1;
  SK_RETURN_IF_ERROR(locate(c->path, sizeof c->path));
  /* Objects are loaded only through the descriptor they were verified on;
   * without /proc every entry would look unloadable and be rebuilt. */
  if (access("/proc/self/fd", X_OK) != 0)
    return sk__fail(SK_STATUS_NOT_FOUND,
                    "jit: /proc/self/fd is not available (is /proc mounted?): the JIT loads an object only through "
                    "the descriptor it was verified on");
  if (make_dirs(c->path) != 0)
    return sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cannot create cache directory %s: %s", c->path, strerror(errno));
  /* Whoever can write the directory can put code into this process: refuse
   * anything but a real directory of ours that only we can write. */
  int fd = open(c->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    struct stat st;
    if (errno == ELOOP || (errno == ENOTDIR && lstat(c->path, &st) == 0 && S_ISLNK(st.st_mode)))
      return sk__fail(SK_STATUS_INVALID_STATE, "jit: refusing cache directory %s: it is a symbolic link", c->path);
    if (errno == ENOTDIR)
      return sk__fail(SK_STATUS_INVALID_STATE, "jit: refusing cache directory %s: not a directory", c->path);
    return sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cache directory %s: %s", c->path, strerror(errno));
  }
  struct stat st;
  sk_status status = SK_STATUS_OK;
  if (fstat(fd, &st) != 0)
    status = sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cache directory %s: %s", c->path, strerror(errno));
  else if (st.st_uid != geteuid())
    status = sk__fail(SK_STATUS_INVALID_STATE, "jit: refusing cache directory %s: owned by uid %u, not by uid %u",
                      c->path, (unsigned)st.st_uid, (unsigned)geteuid());
  else if (st.st_mode & (S_IWGRP | S_IWOTH))
    status = sk__fail(SK_STATUS_INVALID_STATE,
                      "jit: refusing cache directory %s: writable by group or others (mode %04o; chmod 700 it)", c->path,
                      (unsigned)(st.st_mode & 07777));
  c->fd = fd;
  if (status == SK_STATUS_OK) status = claim_dir(c);
  if (status != SK_STATUS_OK) sk__jit_cache_close(c);
  return status;
}

void sk__jit_cache_close(sk__jit_cache *c) {
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
}

sk_status sk__jit_cache_dir(char *buf, size_t n) {
  sk__jit_cache c;
  SK_RETURN_IF_ERROR(sk__jit_cache_open(&c));
  sk__jit_cache_close(&c);
  if (strlen(c.path) >= n) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "jit: cache directory path is too long");
  snprintf(buf, n, "%s", c.path);
  return SK_STATUS_OK;
}

/* ---- private compile directories ---- */

/* The inode number of our PID namespace, 0 when it cannot be read: a pid
 * in a private directory's name means something only in its namespace. */
static unsigned long long pid_namespace(void) {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

bool sk__jit_remove_private_dir(int dfd, const char *name) {
  int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0) close(fd);
    return false;
  }
  for (struct dirent *e; (e = readdir(d));)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) unlinkat(dirfd(d), e->d_name, 0);
  closedir(d);
  return unlinkat(dfd, name, AT_REMOVEDIR) == 0;
}

sk_status sk__jit_private_dir(const sk__jit_cache *c, char name[64], int *fd_out) {
  static unsigned counter;
  unsigned long long ns = pid_namespace();
  struct timespec t;
  for (int attempt = 0; attempt < 64; attempt++) {
    clock_gettime(CLOCK_REALTIME, &t);
    unsigned noise = (unsigned)t.tv_nsec ^ (__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) * 2654435761u);
    snprintf(name, 64, "tmp-%llu-%ld-%08x", ns, (long)getpid(), noise);
    if (mkdirat(c->fd, name, 0700) == 0) {
      *fd_out = openat(c->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (*fd_out >= 0) return SK_STATUS_OK;
      break;
    }
    if (errno != EEXIST) break;
  }
  return sk__fail(SK_STATUS_SYSTEM_ERROR, "jit: cannot create a file in %s: %s", c->path, strerror(errno));
}

/* Whether name is the private directory of a process of our namespace
 * that is gone. */
static bool orphaned(const char *name, unsigned long long ns) {
  unsigned long long their_ns;
  long pid;
  int used = 0;
  if (ns == 0 || sscanf(name, "tmp-%llu-%ld-%*x%n", &their_ns, &pid, &used) != 2 || name[used] != '\0') return false;
  return their_ns == ns && pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* Removes private directories (and the temporaries of older versions,
 * tmp-*.so/.c/.sha256) that belong to no compile in progress: a dead
 * owner's, and with min_age >= 0 any at least min_age seconds old. Returns
 * how many went. */
static size_t sweep(int dfd, long min_age, bool files_too) {
  DIR *d = open_stream(dfd);
  if (!d) return 0;
  unsigned long long ns = pid_namespace();
  time_t now = time(NULL);
  size_t removed = 0;
  for (struct dirent *e; (e = readdir(d));) {
    struct stat st;
    bool tmp;
    if (strncmp(e->d_name, "tmp-", 4) != 0 || fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    bool old = min_age >= 0 && now - st.st_mtime >= min_age;
    if (S_ISDIR(st.st_mode) && (orphaned(e->d_name, ns) || old))
      removed += sk__jit_remove_private_dir(dfd, e->d_name);
    else if (files_too && old && sk__jit_cache_file(e->d_name, &tmp) && unlinkat(dfd, e->d_name, 0) == 0)
      removed++;
  }
  closedir(d);
  return removed;
}

void sk__jit_sweep_orphans(const sk__jit_cache *c) { sweep(c->fd, -1, false); }

/* ---- public: the cache for `sk cache path|list|clear` ---- */

sk_status sk_jit_cache_path(char *buf, size_t size) {
  sk__clear_error();
  if (!buf || size == 0) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_jit_cache_path: buf is NULL or size is 0");
  return sk__jit_cache_dir(buf, size);
}

bool sk__jit_cache_file(const char *name, bool *tmp) {
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
  sk__jit_cache c;
  SK_RETURN_IF_ERROR(sk__jit_cache_open(&c));
  DIR *d = open_stream(c.fd);
  if (!d) {
    sk_status st = sk__fail(SK_STATUS_SYSTEM_ERROR, "sk_jit_cache_clear: cannot open %s: %s", c.path, strerror(errno));
    sk__jit_cache_close(&c);
    return st;
  }
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    bool tmp;
    if (sk__jit_cache_file(e->d_name, &tmp) && !tmp && unlinkat(c.fd, e->d_name, 0) == 0) n++;
  }
  closedir(d);
  /* A recent temporary of a live process may be a compile in progress;
   * only a dead one's, or leftovers older than 10 minutes, go. */
  n += sweep(c.fd, 600, true);
  sk__jit_cache_close(&c);
  if (removed) *removed = n;
  return SK_STATUS_OK;
}
