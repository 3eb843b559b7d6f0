/* A full disk, for tests: loaded with LD_PRELOAD, it lets a process write AMP_TEST_DISK_BYTES
 * bytes in all to files under AMP_TEST_DISK_DIR, then fails writes there as a full file system
 * does: the write that crosses the limit is cut short (a partial write), later ones fail with
 * ENOSPC. Writes elsewhere (the terminal, /tmp) are untouched.
 *
 * Why not a real small file system: mounting one needs privileges CI may not have, and a
 * RLIMIT_FSIZE limit gives EFBIG and SIGXFSZ rather than what a full disk gives. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

static long long g_budget = -1; /* bytes left; -1 = not configured yet */
static char g_dir[PATH_MAX];
static size_t g_dirLen;

static void configure() {
  if (g_budget != -1) return;
  const char* bytes = getenv("AMP_TEST_DISK_BYTES");
  const char* dir = getenv("AMP_TEST_DISK_DIR");
  g_budget = bytes ? atoll(bytes) : LLONG_MAX;
  if (dir && realpath(dir, g_dir)) g_dirLen = strlen(g_dir);
}

/* Whether `fd` is a regular file inside the "full" folder. */
static int onFullDisk(int fd) {
  if (g_dirLen == 0) return 0;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  char link[64], path[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return 0;
  path[n] = 0;
  return strncmp(path, g_dir, g_dirLen) == 0 && (path[g_dirLen] == '/' || path[g_dirLen] == 0);
}

/* How much of a count-byte write may go through: all, part, or nothing (-1, errno ENOSPC). */
static ssize_t allowed(int fd, size_t count) {
  configure();
  if (!onFullDisk(fd)) return (ssize_t)count;
  if (g_budget <= 0) {
    errno = ENOSPC;
    return -1;
  }
  const size_t n = (long long)count < g_budget ? count : (size_t)g_budget;
  g_budget -= (long long)n;
  return (ssize_t)n;
}

extern "C" ssize_t write(int fd, const void* buf, size_t count) {
  static ssize_t (*real)(int, const void*, size_t);
  if (!real) real = reinterpret_cast<ssize_t (*)(int, const void*, size_t)>(dlsym(RTLD_NEXT, "write"));
  const ssize_t n = allowed(fd, count);
  if (n < 0) return -1;
  return real(fd, buf, (size_t)n);
}

extern "C" ssize_t pwrite64(int fd, const void* buf, size_t count, off_t offset) {
  static ssize_t (*real)(int, const void*, size_t, off_t);
  if (!real) real = reinterpret_cast<ssize_t (*)(int, const void*, size_t, off_t)>(dlsym(RTLD_NEXT, "pwrite64"));
  const ssize_t n = allowed(fd, count);
  if (n < 0) return -1;
  return real(fd, buf, (size_t)n, offset);
}
