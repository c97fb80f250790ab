/*
 * sandbox-supervisor: the resident process of one host sandbox. It is started by the gateway already in the
 * sandbox's identity and runs each execution on request: a new session (so process group), its own pipes, stdin,
 * signals, deadline and exit status, output streamed back in frames.
 *
 * Control channel: requests arrive on descriptor 0 and events leave on descriptor 1, both pipes whose other ends
 * only the gateway holds; no execution inherits them, and the process is not dumpable, so programs of the same
 * uid can open neither its descriptors nor its memory through /proc or ptrace. The end of descriptor 0 (the
 * gateway ended) kills every execution's group and ends the supervisor; so does SIGTERM, which is also its
 * parent-death signal.
 *
 * Frame: u32 length of what follows (big endian), u8 type, u32 execution id, payload.
 * Requests: START (u8 keep_stdin, u32 timeout_secs, path\0 cwd (relative to the sandbox directory)\0 u32 argc, argv\0..., u32 envc, env\0...),
 *           STDIN (bytes), CLOSE_STDIN, SIGNAL (u8 signal number).
 * Events:   READY (id 0), STARTED (u32 pid = process group), FAILED (i32 errno), STDOUT/STDERR (bytes),
 *           EXIT (i32 exit code, 128 + signal when killed; u8 timed out).
 * Only libc; Linux.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { REQ_START = 1, REQ_STDIN = 2, REQ_CLOSE_STDIN = 3, REQ_SIGNAL = 4 };
enum { EV_READY = 1, EV_STARTED = 2, EV_FAILED = 3, EV_STDOUT = 4, EV_STDERR = 5, EV_EXIT = 6 };

#define MAX_FRAME (64u << 20)
#define CHUNK 65536
#define DRAIN_GRACE_MS 200
#define STDIN_LIMIT (8u << 20)
#define MAX_EXECS 1024

struct exec {
  uint32_t id;
  pid_t pid;
  int out, err, in;
  int exited, timed_out, status, close_in;
  long long deadline, idle_since;
  char *pending; /* stdin not yet written */
  size_t pending_len;
};

static struct exec *execs[MAX_EXECS];
static int nexecs;
static int wake[2];
static volatile sig_atomic_t terminated;
/* The sandbox directory, the working directory it was started in: entered by the gateway before the drop, so
 * executions reach their working directories below it even where the directories above are closed to their uid. */
static int sandbox_dir;

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void put32(unsigned char *p, uint32_t v) {
  p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v;
}

static uint32_t get32(const unsigned char *p) {
  return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16) | ((uint32_t) p[2] << 8) | p[3];
}

static void write_all(const void *buf, size_t len) {
  const char *p = buf;
  while (len > 0) {
    ssize_t n = write(1, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(3); /* the gateway is gone */
    p += n;
    len -= (size_t) n;
  }
}

static void event(int type, uint32_t id, const void *data, size_t len) {
  unsigned char head[9];
  put32(head, (uint32_t) (5 + len));
  head[4] = (unsigned char) type;
  put32(head + 5, id);
  write_all(head, sizeof head);
  if (len > 0) write_all(data, len);
}

static void event32(int type, uint32_t id, int32_t value) {
  unsigned char b[4];
  put32(b, (uint32_t) value);
  event(type, id, b, 4);
}

static void on_chld(int sig) {
  (void) sig;
  int e = errno;
  (void) !write(wake[1], "c", 1);
  errno = e;
}

static void on_term(int sig) {
  (void) sig;
  terminated = 1;
  int e = errno;
  (void) !write(wake[1], "t", 1);
  errno = e;
}

static void kill_all(void) {
  for (int i = 0; i < nexecs; i++) {
    if (execs[i]->pid > 1) kill(-execs[i]->pid, SIGKILL);
  }
}

static void close_from(int lowest, int keep) {
  if (keep > lowest) syscall(SYS_close_range, lowest, keep - 1, 0);
  if (syscall(SYS_close_range, keep + 1, ~0u, 0) == 0) return;
  long max = sysconf(_SC_OPEN_MAX);
  for (int fd = lowest; fd < (max > 0 ? max : 65536); fd++) {
    if (fd != keep) close(fd);
  }
}

/* Reads a NUL-terminated string at *pos; NULL when the payload ends first. */
static char *take_string(char *payload, size_t len, size_t *pos) {
  if (*pos >= len) return NULL;
  char *s = payload + *pos;
  char *end = memchr(s, '\0', len - *pos);
  if (end == NULL) return NULL;
  *pos += (size_t) (end - s) + 1;
  return s;
}

static char **take_list(char *payload, size_t len, size_t *pos) {
  if (*pos + 4 > len) return NULL;
  uint32_t n = get32((unsigned char *) payload + *pos);
  *pos += 4;
  if (n > len) return NULL;
  char **list = calloc(n + 1, sizeof *list);
  if (list == NULL) return NULL;
  for (uint32_t i = 0; i < n; i++) {
    if ((list[i] = take_string(payload, len, pos)) == NULL) {
      free(list);
      return NULL;
    }
  }
  return list;
}

static void start(uint32_t id, char *payload, size_t len) {
  size_t pos = 5;
  if (len < 5 || nexecs >= MAX_EXECS) {
    event32(EV_FAILED, id, len < 5 ? EINVAL : EAGAIN);
    return;
  }
  int keep_stdin = payload[0];
  uint32_t timeout = get32((unsigned char *) payload + 1);
  char *path = take_string(payload, len, &pos);
  char *cwd = take_string(payload, len, &pos);
  char **argv = path && cwd ? take_list(payload, len, &pos) : NULL;
  char **envp = argv ? take_list(payload, len, &pos) : NULL;
  if (envp == NULL || argv[0] == NULL) {
    free(argv);
    free(envp);
    event32(EV_FAILED, id, EINVAL);
    return;
  }
  int in[2], out[2], err[2], report[2];
  if (pipe2(in, O_CLOEXEC) < 0) goto fail0;
  if (pipe2(out, O_CLOEXEC) < 0) goto fail1;
  if (pipe2(err, O_CLOEXEC) < 0) goto fail2;
  if (pipe2(report, O_CLOEXEC) < 0) goto fail3;
  pid_t pid = fork();
  if (pid == 0) {
    sigset_t all;
    sigemptyset(&all);
    for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL);
    sigprocmask(SIG_SETMASK, &all, NULL);
    int e = 0;
    if (setsid() < 0 || dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0) e = errno;
    if (e == 0 && (fchdir(sandbox_dir) < 0 || chdir(cwd) < 0)) e = errno;
    if (e == 0) close_from(3, report[1]);
    if (e == 0) {
      execve(path, argv, envp);
      e = errno;
      if (e == ENOEXEC) { /* neither a binary nor a #! script: as execvp, under /bin/sh */
        int n = 0;
        while (argv[n] != NULL) n++;
        char **sh = calloc((size_t) n + 2, sizeof *sh);
        if (sh != NULL) {
          sh[0] = "sh";
          sh[1] = path;
          for (int i = 1; i < n; i++) sh[i + 1] = argv[i];
          execve("/bin/sh", sh, envp);
        }
        e = errno;
      }
    }
    (void) !write(report[1], &e, sizeof e);
    _exit(127);
  }
  int e = pid < 0 ? errno : 0;
  close(in[0]);
  close(out[1]);
  close(err[1]);
  close(report[1]);
  if (pid > 0) {
    int child_errno;
    ssize_t n;
    while ((n = read(report[0], &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {}
    if (n == sizeof child_errno) {
      e = child_errno;
      while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
    }
  }
  close(report[0]);
  free(argv);
  free(envp);
  if (e != 0) {
    close(in[1]);
    close(out[0]);
    close(err[0]);
    event32(EV_FAILED, id, e);
    return;
  }
  struct exec *x = calloc(1, sizeof *x);
  if (x == NULL) abort();
  x->id = id;
  x->pid = pid;
  x->out = out[0];
  x->err = err[0];
  x->in = in[1];
  fcntl(x->in, F_SETFL, O_NONBLOCK);
  x->deadline = timeout > 0 ? now_ms() + (long long) timeout * 1000 : 0;
  if (!keep_stdin) {
    close(x->in);
    x->in = -1;
  }
  execs[nexecs++] = x;
  event32(EV_STARTED, id, pid);
  return;
fail3:
  close(err[0]); close(err[1]);
fail2:
  close(out[0]); close(out[1]);
fail1:
  close(in[0]); close(in[1]);
fail0:
  e = errno;
  free(argv);
  free(envp);
  event32(EV_FAILED, id, e);
}

static struct exec *find(uint32_t id) {
  for (int i = 0; i < nexecs; i++) {
    if (execs[i]->id == id) return execs[i];
  }
  return NULL;
}

static void close_stdin(struct exec *x) {
  if (x->in >= 0) close(x->in);
  x->in = -1;
  free(x->pending);
  x->pending = NULL;
  x->pending_len = 0;
}

static void flush_stdin(struct exec *x) {
  while (x->in >= 0 && x->pending_len > 0) {
    ssize_t n = write(x->in, x->pending, x->pending_len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      close_stdin(x); /* the program closed its stdin */
      return;
    }
    memmove(x->pending, x->pending + n, x->pending_len - (size_t) n);
    x->pending_len -= (size_t) n;
  }
  if (x->in >= 0 && x->pending_len == 0 && x->close_in) close_stdin(x);
}

static void request(int type, uint32_t id, char *payload, size_t len) {
  if (type == REQ_START) {
    start(id, payload, len);
    return;
  }
  struct exec *x = find(id);
  if (x == NULL) return;
  if (type == REQ_STDIN && x->in >= 0 && !x->close_in) {
    char *grown = realloc(x->pending, x->pending_len + len);
    if (grown == NULL) abort();
    memcpy(grown + x->pending_len, payload, len);
    x->pending = grown;
    x->pending_len += len;
    flush_stdin(x);
  } else if (type == REQ_CLOSE_STDIN) {
    x->close_in = 1;
    flush_stdin(x);
  } else if (type == REQ_SIGNAL && len == 1 && !x->exited) {
    kill(-x->pid, (unsigned char) payload[0]);
  }
}

static void reap(void) {
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    for (int i = 0; i < nexecs; i++) {
      if (execs[i]->pid == pid) {
        execs[i]->exited = 1;
        execs[i]->status = status;
        execs[i]->idle_since = now_ms();
      }
    }
  }
}

/* Reads what one output pipe holds; closes it at its end. */
static void drain(struct exec *x, int *fd, int type) {
  static char buf[CHUNK];
  ssize_t n = read(*fd, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    close(*fd);
    *fd = -1;
    return;
  }
  x->idle_since = now_ms();
  event(type, x->id, buf, (size_t) n);
}

/* Reports and forgets an execution whose program ended and whose pipes are closed or idle for the grace. */
static void finish(int i) {
  struct exec *x = execs[i];
  if (x->out >= 0) close(x->out);
  if (x->err >= 0) close(x->err);
  close_stdin(x);
  int code = WIFEXITED(x->status) ? WEXITSTATUS(x->status) : 128 + WTERMSIG(x->status);
  unsigned char b[5];
  put32(b, (uint32_t) code);
  b[4] = (unsigned char) x->timed_out;
  event(EV_EXIT, x->id, b, sizeof b);
  free(x);
  execs[i] = execs[--nexecs];
}

static int read_full(int fd, void *buf, size_t len) {
  char *p = buf;
  while (len > 0) {
    ssize_t n = read(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    p += n;
    len -= (size_t) n;
  }
  return 0;
}

int main(int argc, char **argv) {
  prctl(PR_SET_DUMPABLE, 0);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (argc > 1 && getppid() != (pid_t) atol(argv[1])) return 2; /* the gateway ended before the line above */
  setsid();
  if ((sandbox_dir = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) return 5;
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) < 0) return 4;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sa.sa_handler = on_chld;
  sigaction(SIGCHLD, &sa, NULL);
  sa.sa_flags = SA_RESTART;
  sa.sa_handler = on_term;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGINT, SIG_IGN);
  fcntl(0, F_SETFD, FD_CLOEXEC);
  fcntl(1, F_SETFD, FD_CLOEXEC);
  event(EV_READY, 0, NULL, 0);

  struct pollfd fds[2 + 3 * MAX_EXECS];
  struct exec *owner[2 + 3 * MAX_EXECS];
  while (!terminated) {
    long long now = now_ms();
    int timeout = -1;
    int n = 0;
    size_t buffered = 0;
    for (int i = 0; i < nexecs; i++) buffered += execs[i]->pending_len;
    fds[n++] = (struct pollfd) {.fd = wake[0], .events = POLLIN};
    if (buffered < STDIN_LIMIT) fds[n++] = (struct pollfd) {.fd = 0, .events = POLLIN};
    for (int i = 0; i < nexecs; i++) {
      struct exec *x = execs[i];
      if (!x->exited && x->deadline > 0 && now >= x->deadline) {
        x->timed_out = 1;
        x->deadline = 0;
        kill(-x->pid, SIGKILL);
      }
      if (x->exited && ((x->out < 0 && x->err < 0) || now - x->idle_since >= DRAIN_GRACE_MS)) {
        finish(i--);
        continue;
      }
      long long wait = x->exited ? x->idle_since + DRAIN_GRACE_MS - now : (x->deadline > 0 ? x->deadline - now : -1);
      if (wait >= 0 && (timeout < 0 || wait < timeout)) timeout = (int) (wait < 0 ? 0 : wait);
      if (x->out >= 0) { owner[n] = x; fds[n++] = (struct pollfd) {.fd = x->out, .events = POLLIN}; }
      if (x->err >= 0) { owner[n] = x; fds[n++] = (struct pollfd) {.fd = x->err, .events = POLLIN}; }
      if (x->in >= 0 && x->pending_len > 0) { owner[n] = x; fds[n++] = (struct pollfd) {.fd = x->in, .events = POLLOUT}; }
    }
    if (poll(fds, (nfds_t) n, timeout) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int k = 0; k < n; k++) {
      if (fds[k].revents == 0) continue;
      int fd = fds[k].fd;
      if (fd == wake[0]) {
        char b[64];
        while (read(wake[0], b, sizeof b) > 0) {}
        reap();
      } else if (fd == 0) {
        unsigned char head[9];
        if (read_full(0, head, 4) < 0) { terminated = 1; break; }
        uint32_t len = get32(head);
        if (len < 5 || len > MAX_FRAME || read_full(0, head + 4, 5) < 0) { terminated = 1; break; }
        size_t plen = len - 5;
        char *payload = malloc(plen + 1);
        if (payload == NULL || (plen > 0 && read_full(0, payload, plen) < 0)) { terminated = 1; break; }
        request(head[4], get32(head + 5), payload, plen);
        free(payload);
        break; /* the set of descriptors may have changed */
      } else {
        struct exec *x = owner[k];
        if (fd == x->out) drain(x, &x->out, EV_STDOUT);
        else if (fd == x->err) drain(x, &x->err, EV_STDERR);
        else if (fd == x->in) flush_stdin(x);
      }
    }
  }
  kill_all();
  return 0;
}
