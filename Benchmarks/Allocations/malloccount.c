// LD_PRELOAD malloc counter: counts allocation calls and prints them at exit (to the file named by
// MALLOCCOUNT_OUT, appended). For deterministic before/after comparisons of work per request.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static atomic_long count_malloc, count_calloc, count_realloc, count_memalign;
static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static char bootstrap[65536]; static size_t bootstrap_used;
static void init(void) {
    real_malloc = dlsym(RTLD_NEXT, "malloc");
    real_calloc = dlsym(RTLD_NEXT, "calloc");
    real_realloc = dlsym(RTLD_NEXT, "realloc");
    real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
    real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
}
void *malloc(size_t n) { if (!real_malloc) init(); atomic_fetch_add(&count_malloc, 1); return real_malloc(n); }
void *calloc(size_t a, size_t b) {
    if (!real_calloc) { // dlsym itself may call calloc
        size_t n = a * b; void *p = bootstrap + bootstrap_used; bootstrap_used += (n + 15) & ~15UL; memset(p, 0, n); return p;
    }
    atomic_fetch_add(&count_calloc, 1); return real_calloc(a, b);
}
void *realloc(void *p, size_t n) { if (!real_realloc) init(); atomic_fetch_add(&count_realloc, 1); return real_realloc(p, n); }
int posix_memalign(void **p, size_t a, size_t n) { if (!real_posix_memalign) init(); atomic_fetch_add(&count_memalign, 1); return real_posix_memalign(p, a, n); }
void *aligned_alloc(size_t a, size_t n) { if (!real_aligned_alloc) init(); atomic_fetch_add(&count_memalign, 1); return real_aligned_alloc(a, n); }
void free(void *p) {
    static void (*real_free)(void *);
    if ((char *)p >= bootstrap && (char *)p < bootstrap + sizeof bootstrap) return;
    if (!real_free) real_free = dlsym(RTLD_NEXT, "free");
    real_free(p);
}
__attribute__((destructor)) static void report(void) {
    const char *out = getenv("MALLOCCOUNT_OUT");
    FILE *f = out ? fopen(out, "a") : stderr;
    if (!f) return;
    fprintf(f, "pid %d malloc %ld calloc %ld realloc %ld memalign %ld\n", getpid(), (long)count_malloc,
            (long)count_calloc, (long)count_realloc, (long)count_memalign);
    if (f != stderr) fclose(f);
}
