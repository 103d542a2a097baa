// walbuf.h: what walbuf.c (the WAL buffer VFS) offers sqlite_walbuf.go.
#ifndef PF_WALBUF_H
#define PF_WALBUF_H

typedef struct sqlite3 sqlite3;

// pf_walbuf_stats counts one WAL file's writes.
typedef struct pf_walbuf_stats {
	long long writes;  // write calls SQLite made
	long long calls;   // write calls made to the file
	long long bytes;   // bytes written to the file
	long long served;  // reads served from the buffer
} pf_walbuf_stats;

// pf_walbuf_register registers the shim over the default VFS as name: 1 on
// success, 0 if SQLite's symbols or a version-2 default VFS are missing.
int pf_walbuf_register(const char *name);

// pf_walbuf_stats_of reads the counters of db's WAL (main database) into
// st: 0 if it is not open through the shim.
int pf_walbuf_stats_of(sqlite3 *db, pf_walbuf_stats *st);

#endif
