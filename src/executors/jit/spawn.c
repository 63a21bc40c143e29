/* Running the compiler so that no host can make it hang, leak or lie.
 *
 * The caller forks a reaper; the reaper forks the compiler, waits for it
 * and reports on a pipe. The detour is what makes each hostile host safe:
 *
 *   - A host that ignores SIGCHLD (or whose SIGCHLD handler reaps every
 *     child) would lose the compiler's exit status. The reaper resets its
 *     own dispositions, so its wait always sees the status, and the caller
 *     reads it from the pipe; the caller's own wait for the reaper may
 *     then fail with ECHILD, which is harmless.
 *   - A compiler that leaves a background child holding the output pipe
 *     would keep the read from ever ending. The caller stops reading when
 *     the reaper reports the compiler's exit (draining what is already in
 *     the pipe), and the reaper then kills the compiler's process group,
 *     where such children live.
 *   - A caller killed during a compile (Ctrl-C, SIGTERM, a crash) would
 *     orphan the compiler. The reaper asks for SIGTERM when the caller's
 *     thread dies (PR_SET_PDEATHSIG) and then kills the compiler's group;
 *     the compiler itself gets SIGKILL when the reaper dies.
 *   - A time limit: the caller polls with a deadline and, when it passes,
 *     kills the compiler's group and the reaper, never waiting on the pipe.
 *
 * The reaper waits for the compiler and for SIGTERM with sigwaitinfo, so it
 * installs no handler. Between fork and exec both children call only
 * async-signal-safe functions: the caller prepared everything they use.
 * The reaper ignores the terminal's SIGINT/SIGQUIT/SIGHUP (the caller
 * decides what Ctrl-C means: if it dies, the reaper follows it). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "executors/jit/jit_internal.h"

extern char **environ;

/* What the reaper (and the compiler, when exec fails) say on the status
 * pipe; each message is one write, far below PIPE_BUF, so it is atomic. */
enum { MSG_STARTED = 1, MSG_EXEC_FAILED, MSG_EXITED };
typedef struct report {
  int kind;
  int value; /* the compiler's pid, errno, or wait status */
} report;

static void say(int fd, int kind, int value) {
  report r = {kind, value};
  ssize_t w = write(fd, &r, sizeof r);
  (void)w; /* a caller that stopped listening needs nothing */
}

/* Every disposition back to the default, except those in ignore. */
static void reset_dispositions(const int *ignore, int n_ignore) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  for (int s = 1; s < NSIG; s++) {
    if (s == SIGKILL || s == SIGSTOP) continue;
    sa.sa_handler = SIG_DFL;
    for (int i = 0; i < n_ignore; i++)
      if (ignore[i] == s) sa.sa_handler = SIG_IGN;
    sigaction(s, &sa, NULL); /* fails harmlessly for the C library's own */
  }
}

typedef struct child_setup {
  const char *file;
  char *const *argv;
  int cwd_fd, null_fd, out_fd, status_fd;
  pid_t caller;
} child_setup;

static void run_compiler(const child_setup *c, pid_t reaper) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != reaper) _exit(127); /* the reaper is already gone */
  reset_dispositions(NULL, 0);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  if (dup2(c->null_fd, 0) < 0 || dup2(c->out_fd, 1) < 0 || dup2(c->out_fd, 2) < 0 ||
      (c->cwd_fd >= 0 && fchdir(c->cwd_fd) != 0)) {
    say(c->status_fd, MSG_EXEC_FAILED, errno);
    _exit(127);
  }
  execve(c->file, c->argv, environ);
  say(c->status_fd, MSG_EXEC_FAILED, errno);
  _exit(127);
}

/* The reaper: entered with every signal blocked. */
static void run_reaper(const child_setup *c) {
  static const int ignored[] = {SIGINT, SIGQUIT, SIGHUP, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU};
  reset_dispositions(ignored, (int)(sizeof ignored / sizeof ignored[0]));
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != c->caller) _exit(127); /* the caller died before prctl */
  pid_t self = getpid(), pid = fork();
  if (pid == 0) run_compiler(c, self);
  if (pid < 0) {
    say(c->status_fd, MSG_EXEC_FAILED, errno);
    _exit(127);
  }
  setpgid(pid, pid); /* also here, so the group exists before any kill */
  say(c->status_fd, MSG_STARTED, (int)pid);
  sigset_t wake;
  sigemptyset(&wake);
  sigaddset(&wake, SIGCHLD);
  sigaddset(&wake, SIGTERM);
  int wstatus = 0;
  for (;;) {
    pid_t got = waitpid(pid, &wstatus, WNOHANG);
    if (got == pid) break;
    if (got < 0 && errno != EINTR) _exit(127);
    if (got == 0 && sigwaitinfo(&wake, NULL) == SIGTERM) { /* the caller died, or its deadline passed */
      kill(-pid, SIGKILL);
      _exit(126);
    }
  }
  kill(-pid, SIGKILL); /* whatever the compiler left running in its group */
  say(c->status_fd, MSG_EXITED, wstatus);
  _exit(0);
}

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Appends what fd (non-blocking) has now to r's buffer, dropping what
 * does not fit: 1 read something, 0 nothing there now, -1 end or error. */
static int read_output(int fd, sk__jit_proc *r, char *drain, size_t drain_size) {
  char *dst = r->len + 1 < r->cap ? r->out + r->len : drain;
  size_t room = r->len + 1 < r->cap ? r->cap - 1 - r->len : drain_size;
  ssize_t got = read(fd, dst, room);
  if (got < 0) return errno == EINTR || errno == EAGAIN ? 0 : -1;
  if (got == 0) return -1;
  if (dst != drain) r->len += (size_t)got;
  else r->cut = true;
  return 1;
}

static void close_pair(int fds[2]) {
  if (fds[0] >= 0) close(fds[0]);
  if (fds[1] >= 0) close(fds[1]);
}

int sk__jit_run_process(const char *file, const char *const *argv, int cwd_fd, long long limit_ms, sk__jit_proc *r) {
  r->wstatus = 0;
  r->len = 0;
  r->cut = r->timed_out = false;
  if (r->cap) r->out[0] = '\0';
  int out[2] = {-1, -1}, status[2] = {-1, -1};
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(status, O_CLOEXEC) != 0) {
    int e = errno;
    if (null_fd >= 0) close(null_fd);
    close_pair(out);
    return e;
  }
  child_setup c = {.file = file, .argv = (char *const *)argv, .cwd_fd = cwd_fd, .null_fd = null_fd,
                   .out_fd = out[1], .status_fd = status[1], .caller = getpid()};
  /* Every signal blocked across fork: no host handler runs in the reaper
   * before it has reset them. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t reaper = fork();
  if (reaper == 0) run_reaper(&c);
  int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  close(null_fd);
  close(out[1]);
  close(status[1]);
  if (reaper < 0) {
    close(out[0]);
    close(status[0]);
    return fork_errno;
  }
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  char drain[4096];
  pid_t compiler = 0;
  int exec_error = 0;
  bool exited = false, status_open = true, out_open = true;
  long long deadline = limit_ms > 0 ? now_ms() + limit_ms : 0;
  while (!exited && status_open) {
    struct pollfd pfd[2] = {{.fd = status[0], .events = POLLIN}, {.fd = out_open ? out[0] : -1, .events = POLLIN}};
    long long left = deadline ? deadline - now_ms() : -1;
    if (deadline && left <= 0) {
      r->timed_out = true;
      break;
    }
    int ready = poll(pfd, 2, left < 0 || left > 1000000 ? 1000000 : (int)left);
    if (ready <= 0) continue; /* EINTR, or a long limit's next slice */
    if (pfd[1].revents && read_output(out[0], r, drain, sizeof drain) < 0) out_open = false;
    if (!pfd[0].revents) continue;
    report m;
    ssize_t got = read(status[0], &m, sizeof m);
    if (got < 0 && errno == EINTR) continue;
    if (got != (ssize_t)sizeof m) status_open = false; /* the reaper is gone */
    else if (m.kind == MSG_STARTED) compiler = (pid_t)m.value;
    else if (m.kind == MSG_EXEC_FAILED) exec_error = m.value ? m.value : ENOEXEC;
    else if (m.kind == MSG_EXITED) r->wstatus = m.value, exited = true;
  }
  /* What the compiler wrote before it exited is in the pipe now; whatever
   * else holds the pipe is not waited for. */
  while (exited && out_open && read_output(out[0], r, drain, sizeof drain) > 0) {}
  if (r->timed_out) {
    if (compiler > 0) kill(-compiler, SIGKILL);
    kill(reaper, SIGTERM); /* it kills the group too, if it started one we have not heard of */
  }
  close(out[0]);
  close(status[0]);
  while (waitpid(reaper, NULL, 0) < 0 && errno == EINTR) {} /* ECHILD: the host reaps its children */
  if (r->cap) r->out[r->len] = '\0';
  if (exec_error) return exec_error;
  return exited || r->timed_out ? 0 : ECHILD; /* ECHILD: the reaper died without reporting */
}
