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
*/
import "C"

// init turns SQLite's memory statistics off before any connection exists
// (sqlite3_config is refused once SQLite is initialized). With them on, every
// allocation SQLite makes takes a process-wide mutex to count bytes that
// Permafrost never reads: ingestion is ~5% faster without (docs/benchmarks.md).
// mattn/go-sqlite3 has no option for it; its build flags could do it, but every
// build of the binary would have to set them (CGO_CFLAGS). Failure only costs
// that speed; TestSQLiteMemoryStatisticsOff checks that it takes effect.
func init() {
	_ = C.pf_memstatus_off()
}

// sqliteMemoryUsed is SQLite's count of its allocated bytes: 0 while the
// statistics are off.
func sqliteMemoryUsed() int64 { return int64(C.pf_memory_used()) }
