package store

/*
// mattn/go-sqlite3 compiles SQLite into the binary; these declarations resolve
// to its symbols at the final link. They are weak so that cgo's trial link of
// this package alone (without mattn's objects) succeeds.
extern int sqlite3_config(int, ...) __attribute__((weak));
extern int sqlite3_shutdown(void) __attribute__((weak));
extern long long sqlite3_memory_used(void) __attribute__((weak));

// SQLITE_CONFIG_MEMSTATUS is 9 in sqlite3.h.
static int pf_memstatus_off(void) {
	if (!sqlite3_config || !sqlite3_shutdown) return -1;
	sqlite3_shutdown();
	return sqlite3_config(9, 0);
}

static long long pf_memory_used(void) {
	return sqlite3_memory_used ? sqlite3_memory_used() : -1;
}

#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

// pf_malloc_config bounds glibc malloc's arenas and fixes its mmap threshold
// unless the environment tunes malloc itself: 0 if it did not apply.
static int pf_malloc_config(void) {
#ifdef __GLIBC__
	if (getenv("GLIBC_TUNABLES") || getenv("MALLOC_ARENA_MAX") || getenv("MALLOC_MMAP_THRESHOLD_")) return 0;
	return mallopt(M_ARENA_MAX, 2) && mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#else
	return 0;
#endif
}

// pf_trim_malloc hands malloc's free memory back to the OS: 1 if any was.
static int pf_trim_malloc(void) {
#ifdef __GLIBC__
	return malloc_trim(0);
#else
	return 0;
#endif
}
*/
import "C"

// init turns SQLite's memory statistics off before any connection exists
// (sqlite3_config is refused once SQLite is initialized). With them on, every
// allocation SQLite makes takes a process-wide mutex to count bytes that
// Permafrost never reads: ingestion is ~5% faster without (docs/benchmarks.md).
// mattn/go-sqlite3 has no option for it; its build flags could do it, but every
// build of the binary would have to set them (CGO_CFLAGS). Failure only costs
// that speed; TestSQLiteMemoryStatisticsOff checks that it takes effect.
//
// It also sets glibc malloc for SQLite, whose memory is many page-sized
// blocks (the page caches) and a few large ones (a sorter's list, doubled up
// to the cache size). By default glibc gives threads that allocate at once
// arenas of their own, up to 8 per core (cgo calls run on any of the Go
// runtime's threads, so SQLite's allocations spread over them), and raises
// its mmap threshold up to 32 MiB as large blocks are freed, after which
// those blocks come from the arenas too; what is freed inside an arena
// stays resident (trimCHeap returns it, but not the top of a secondary
// arena). Two arenas and the threshold fixed at 128 KiB keep a bulk
// catch-up's index build at about 265 MB of RSS instead of 480
// (docs/benchmarks.md, "Twelfth session"). GLIBC_TUNABLES or glibc's
// MALLOC_ environment variables, if set, win.
func init() {
	_ = C.pf_memstatus_off()
	_ = C.pf_malloc_config()
	walBufferVFS = registerWALBuffer("permafrost-walbuf")
}

// sqliteMemoryUsed is SQLite's count of its allocated bytes: 0 while the
// statistics are off.
func sqliteMemoryUsed() int64 { return int64(C.pf_memory_used()) }

// trimCHeap hands the C heap's free pages back to the OS (glibc's
// malloc_trim; a no-op elsewhere). SQLite allocates its page cache a page at
// a time, so a cache it shrinks leaves its pages free inside malloc's arena,
// still resident, where glibc returns only the arena's top: a bulk
// catch-up's 192 MiB writer cache, shrunk for the index build, stayed in the
// peak RSS under the build's sorter (docs/benchmarks.md, "Twelfth session").
func trimCHeap() { C.pf_trim_malloc() }
