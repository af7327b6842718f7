/*
 * racer: the hostile agent's hands, for the race tests (race.test.ts compiles it with `cc`).
 *
 * It swaps two directory entries with renameat2(RENAME_EXCHANGE): one atomic step in which each
 * name takes the other's inode, so there is no instant at which either name is missing. A sync
 * engine that checks a path and then acts on it can be handed a different object in between.
 *
 *   racer loop <a> <b> [<a2> <b2> ...] <ms>
 *       exchange a and b as fast as possible for ms milliseconds (several pairs: in turn).
 *   racer inotify <dir> <a> <b> <ms>
 *       watch dir (IN_CREATE|IN_OPEN|IN_ACCESS|IN_MOVED_TO) and exchange a and b once per event
 *       (the IN_MOVED_TO our own exchanges cause are ignored), for ms milliseconds.
 *   racer on <create|open|delete> <dir> <name> <a> <b> <ms>
 *       exchange a and b each time the entry `name` of dir is created, opened or deleted: the
 *       moment the engine makes a folder, opens one to list it, or starts emptying it, it is
 *       swapped for a symlink. `name` may end in '*' (any name with that prefix, `*` alone: any
 *       entry); '.' means dir itself.
 *   racer put <dir> <name> <a> <b> <ms>
 *       rename(2) a to b each time the entry `name` of dir is created (patterns as for `on`):
 *       the agent's file appears at b the moment the engine makes its temp file, after any
 *       check of b the engine made before writing. A rename that fails (a already used) counts
 *       as a failure.
 *   racer putlate <create|open> <dir> <name> <a> <b> <us> <ms>
 *       as put, on the entry `name` of dir being created or opened, and each rename <us>
 *       microseconds (busy-waited) after the event: the agent's file lands that long after the
 *       engine made or opened `name`, so a range of delays over the attempts covers the steps
 *       the engine takes after it (a check, then the act).
 *   racer swap <a> <b>
 *       exchange once; exit 2 if that failed.
 *
 * Every mode but swap prints `ready` once its signal handlers (and watch) are in place, stops at
 * its deadline or on SIGTERM/SIGINT, and then prints one line:
 *   swaps=<done> failures=<exchanges refused, e.g. ENOENT while a name was absent> events=<seen>
 * A failing exchange is counted, not fatal: the engine may be between removing and recreating a
 * name. Anything else that fails (bad arguments, inotify setup, I/O on stdout) exits 2.
 *
 * Pausing is the caller's business: SIGSTOP before it looks at the disk, SIGCONT to attack again.
 * An exchange is atomic, so a stopped racer always leaves a and b each holding one whole object.
 * On SIGCONT the racer first discards the inotify events queued while it was stopped (the
 * caller's own checks caused them), then prints `go`: the caller starts the engine after that.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static volatile sig_atomic_t stop_requested = 0;
static volatile sig_atomic_t resumed = 0;
static unsigned long swaps = 0, failures = 0, events = 0;

static void on_stop(int sig) {
  (void)sig;
  stop_requested = 1;
}

static void on_continue(int sig) {
  (void)sig;
  resumed = 1;
}

static void die(const char *what) {
  fprintf(stderr, "racer: %s: %s\n", what, strerror(errno));
  exit(2);
}

static void say(const char *line) {
  if (printf("%s\n", line) < 0 || fflush(stdout) != 0) die("stdout");
}

static double now_ms(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) die("clock_gettime");
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static long parse_ms(const char *text) {
  char *end;
  errno = 0;
  long ms = strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || ms <= 0) {
    fprintf(stderr, "racer: bad milliseconds '%s'\n", text);
    exit(2);
  }
  return ms;
}

/* One atomic exchange. glibc < 2.28 has no renameat2() wrapper, hence the raw syscall. */
static int exchange(const char *a, const char *b) {
  if (syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0) {
    swaps++;
    return 0;
  }
  failures++;
  return -1;
}

/* One plain rename of a to b (replacing b): the agent putting a file in place. */
static int put(const char *a, const char *b) {
  if (rename(a, b) == 0) {
    swaps++;
    return 0;
  }
  failures++;
  return -1;
}

/* putlate's delay: microseconds between the event and the rename. */
static long late_us = 0;

/* put(a, b), late_us after now: spun, not slept, so the delay is that long and no longer. */
static int put_late(const char *a, const char *b) {
  double until = now_ms() + late_us / 1e3;
  while (now_ms() < until) {
  }
  return put(a, b);
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* pairs[0] <-> pairs[1], pairs[2] <-> pairs[3], ...: npaths names, an even number. */
static void run_loop(char **pairs, int npaths, long ms) {
  say("ready");
  double deadline = now_ms() + ms;
  /* Look at the clock and the flags every 256 exchanges only: the exchange is the point. */
  while (!stop_requested) {
    if (resumed) {
      resumed = 0;
      say("go");
    }
    for (int i = 0; i < 256; i++) exchange(pairs[(2 * i) % npaths], pairs[(2 * i) % npaths + 1]);
    if (now_ms() >= deadline) break;
  }
}

/* Reads and discards every event already queued on the (non-blocking) inotify fd. */
static void drain(int fd, char *buf, size_t size) {
  for (;;) {
    ssize_t len = read(fd, buf, size);
    if (len > 0) continue;
    if (len < 0 && errno == EINTR) continue;
    if (len < 0 && errno != EAGAIN) die("read inotify");
    return;
  }
}

/* What a watch reacts to: the event mask and name ("" for the folder itself), and its context. */
typedef int (*wanted_fn)(uint32_t mask, const char *name, const void *ctx);

/* What a watch does for each event it wants: exchange(a, b) or put(a, b). */
typedef int (*act_fn)(const char *a, const char *b);

/* Waits for inotify events on dir until the deadline; acts on a and b for each one wanted. */
static void run_watch(const char *dir, uint32_t mask, wanted_fn wanted, const void *ctx, act_fn act, const char *a, const char *b, long ms) {
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) die("inotify_init1");
  if (inotify_add_watch(fd, dir, mask) < 0) die("inotify_add_watch");
  say("ready"); /* events before this line are not seen */

  char buf[64 * (sizeof(struct inotify_event) + NAME_MAX + 1)] __attribute__((aligned(__alignof__(struct inotify_event))));
  double deadline = now_ms() + ms;
  while (!stop_requested) {
    if (resumed) {
      resumed = 0;
      drain(fd, buf, sizeof buf);
      say("go");
    }
    double left = deadline - now_ms();
    if (left <= 0) break;
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int ready = poll(&pfd, 1, left > 50 ? 50 : (int)left + 1);
    if (ready < 0) {
      if (errno == EINTR) continue; /* SIGCONT or SIGTERM: the flags are checked above */
      die("poll");
    }
    if (ready == 0) continue;
    ssize_t len = read(fd, buf, sizeof buf);
    if (len < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      die("read inotify");
    }
    for (char *p = buf; p < buf + len;) {
      struct inotify_event *ev = (struct inotify_event *)p;
      p += sizeof *ev + ev->len;
      if (ev->mask & IN_Q_OVERFLOW) continue;
      events++;
      if (wanted(ev->mask, ev->len ? ev->name : "", ctx)) act(a, b);
    }
  }
  if (close(fd) != 0) die("close inotify");
}

struct pair {
  const char *a, *b;
};

/* Our own exchange shows up as IN_MOVED_TO of a's and b's names: reacting to it would ping-pong. */
static int any_but_own(uint32_t mask, const char *name, const void *ctx) {
  const struct pair *own = ctx;
  if ((mask & IN_MOVED_TO) && (strcmp(name, base_name(own->a)) == 0 || strcmp(name, base_name(own->b)) == 0)) return 0;
  return 1;
}

/* `pattern`: a name, a prefix ending in '*', or '.' for the watched folder itself. */
static int named(uint32_t mask, const char *name, const void *ctx) {
  (void)mask; /* the watch asks for one kind of event only */
  const char *pattern = ctx;
  size_t n = strlen(pattern);
  if (strcmp(pattern, ".") == 0) return name[0] == '\0';
  if (n > 0 && pattern[n - 1] == '*') return name[0] != '\0' && strncmp(pattern, name, n - 1) == 0;
  return strcmp(pattern, name) == 0;
}

static void usage(void) {
  fprintf(stderr,
          "usage: racer loop <a> <b> [<a2> <b2> ...] <ms>\n"
          "       racer inotify <dir> <a> <b> <ms>\n"
          "       racer on <create|open|delete> <dir> <name> <a> <b> <ms>\n"
          "       racer put <dir> <name> <a> <b> <ms>\n"
          "       racer putlate <create|open> <dir> <name> <a> <b> <us> <ms>\n"
          "       racer swap <a> <b>\n");
  exit(2);
}

static void handle(int sig, void (*handler)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler; /* no SA_RESTART: poll() returns EINTR, and the loop looks at the flags */
  if (sigemptyset(&sa.sa_mask) != 0 || sigaction(sig, &sa, NULL) != 0) die("sigaction");
}

int main(int argc, char **argv) {
  if (argc < 2) usage();
  handle(SIGTERM, on_stop);
  handle(SIGINT, on_stop);
  handle(SIGCONT, on_continue);

  const char *mode = argv[1];
  if (strcmp(mode, "swap") == 0 && argc == 4) {
    if (exchange(argv[2], argv[3]) != 0) die("renameat2");
    return 0;
  }
  if (strcmp(mode, "loop") == 0 && argc >= 5 && argc % 2 == 1) {
    run_loop(argv + 2, argc - 3, parse_ms(argv[argc - 1]));
  } else if (strcmp(mode, "inotify") == 0 && argc == 6) {
    struct pair own = {argv[3], argv[4]};
    run_watch(argv[2], IN_CREATE | IN_OPEN | IN_ACCESS | IN_MOVED_TO, any_but_own, &own, exchange, argv[3], argv[4], parse_ms(argv[5]));
  } else if (strcmp(mode, "on") == 0 && argc == 8) {
    uint32_t mask = strcmp(argv[2], "create") == 0 ? IN_CREATE : strcmp(argv[2], "open") == 0 ? IN_OPEN : strcmp(argv[2], "delete") == 0 ? IN_DELETE : 0;
    if (mask == 0) usage();
    run_watch(argv[3], mask, named, argv[4], exchange, argv[5], argv[6], parse_ms(argv[7]));
  } else if (strcmp(mode, "putlate") == 0 && argc == 9) {
    uint32_t mask = strcmp(argv[2], "create") == 0 ? IN_CREATE : strcmp(argv[2], "open") == 0 ? IN_OPEN : 0;
    if (mask == 0) usage();
    char *end;
    errno = 0;
    late_us = strtol(argv[7], &end, 10);
    if (errno != 0 || *end != '\0' || late_us < 0) usage();
    run_watch(argv[3], mask, named, argv[4], put_late, argv[5], argv[6], parse_ms(argv[8]));
  } else if (strcmp(mode, "put") == 0 && argc == 7) {
    run_watch(argv[2], IN_CREATE, named, argv[3], put, argv[4], argv[5], parse_ms(argv[6]));
  } else {
    usage();
  }
  printf("swaps=%lu failures=%lu events=%lu\n", swaps, failures, events);
  if (fflush(stdout) != 0) die("stdout");
  return 0;
}
