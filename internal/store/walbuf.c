// walbuf: a SQLite VFS shim that gathers the writer's WAL frames into large
// writes (see sqlite_walbuf.go for why and when).
//
// SQLite writes each WAL frame as two write calls (its 24-byte header, then
// the page), so a catch-up batch of ~36,000 frames is ~72,000 pwrite system
// calls, each straddling file blocks. The shim keeps the frames of a stream
// (writes that each begin where the last ended) in a buffer and writes it in
// one call when it is full, when the transaction's commit frame has been
// buffered, and before anything that could see the file without it: a read
// of buffered bytes (served from the buffer when wholly inside it), a sync,
// a truncation, the file's size, a file control, closing, and on the
// database file a shared-memory barrier or unlock (SQLite publishes a commit
// to other connections only after its commit frame's write returned, and
// through the barrier). A page rewritten in place lands in the buffer if it
// is there; other writes off the stream (the WAL's header, a frame flushed
// already) go to the file themselves, and a frame header with nothing
// buffered starts a new stream.
//
// A flush that fails is returned by the write, sync or read that needed it:
// the commit frame's page write fails before SQLite publishes the commit.
//
// The declarations below are SQLite's stable VFS ABI (sqlite3.h, "Virtual
// File System Objects"); mattn/go-sqlite3 keeps its header out of other
// packages' include path, and the functions are weak for the reason
// sqlite_config.go gives.

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "walbuf.h"

typedef long long sqlite3_int64;
typedef struct sqlite3_file sqlite3_file;
typedef struct sqlite3_io_methods sqlite3_io_methods;
typedef struct sqlite3_vfs sqlite3_vfs;
typedef void (*sqlite3_syscall_ptr)(void);

struct sqlite3_file {
	const struct sqlite3_io_methods *pMethods;
};

struct sqlite3_io_methods {
	int iVersion;
	int (*xClose)(sqlite3_file *);
	int (*xRead)(sqlite3_file *, void *, int iAmt, sqlite3_int64 iOfst);
	int (*xWrite)(sqlite3_file *, const void *, int iAmt, sqlite3_int64 iOfst);
	int (*xTruncate)(sqlite3_file *, sqlite3_int64 size);
	int (*xSync)(sqlite3_file *, int flags);
	int (*xFileSize)(sqlite3_file *, sqlite3_int64 *pSize);
	int (*xLock)(sqlite3_file *, int);
	int (*xUnlock)(sqlite3_file *, int);
	int (*xCheckReservedLock)(sqlite3_file *, int *pResOut);
	int (*xFileControl)(sqlite3_file *, int op, void *pArg);
	int (*xSectorSize)(sqlite3_file *);
	int (*xDeviceCharacteristics)(sqlite3_file *);
	int (*xShmMap)(sqlite3_file *, int iPg, int pgsz, int, void volatile **);
	int (*xShmLock)(sqlite3_file *, int offset, int n, int flags);
	void (*xShmBarrier)(sqlite3_file *);
	int (*xShmUnmap)(sqlite3_file *, int deleteFlag);
	int (*xFetch)(sqlite3_file *, sqlite3_int64 iOfst, int iAmt, void **pp);
	int (*xUnfetch)(sqlite3_file *, sqlite3_int64 iOfst, void *p);
};

struct sqlite3_vfs {
	int iVersion;
	int szOsFile;
	int mxPathname;
	sqlite3_vfs *pNext;
	const char *zName;
	void *pAppData;
	int (*xOpen)(sqlite3_vfs *, const char *zName, sqlite3_file *, int flags, int *pOutFlags);
	int (*xDelete)(sqlite3_vfs *, const char *zName, int syncDir);
	int (*xAccess)(sqlite3_vfs *, const char *zName, int flags, int *pResOut);
	int (*xFullPathname)(sqlite3_vfs *, const char *zName, int nOut, char *zOut);
	void *(*xDlOpen)(sqlite3_vfs *, const char *zFilename);
	void (*xDlError)(sqlite3_vfs *, int nByte, char *zErrMsg);
	void (*(*xDlSym)(sqlite3_vfs *, void *, const char *zSymbol))(void);
	void (*xDlClose)(sqlite3_vfs *, void *);
	int (*xRandomness)(sqlite3_vfs *, int nByte, char *zOut);
	int (*xSleep)(sqlite3_vfs *, int microseconds);
	int (*xCurrentTime)(sqlite3_vfs *, double *);
	int (*xGetLastError)(sqlite3_vfs *, int, char *);
	int (*xCurrentTimeInt64)(sqlite3_vfs *, sqlite3_int64 *);
	int (*xSetSystemCall)(sqlite3_vfs *, const char *zName, sqlite3_syscall_ptr);
	sqlite3_syscall_ptr (*xGetSystemCall)(sqlite3_vfs *, const char *zName);
	const char *(*xNextSystemCall)(sqlite3_vfs *, const char *zName);
};

extern sqlite3_vfs *sqlite3_vfs_find(const char *) __attribute__((weak));
extern int sqlite3_vfs_register(sqlite3_vfs *, int) __attribute__((weak));
extern sqlite3_file *sqlite3_database_file_object(const char *) __attribute__((weak));
extern int sqlite3_file_control(sqlite3 *, const char *, int, void *) __attribute__((weak));

#define WB_OK 0
#define WB_NOMEM 7
#define WB_NOTFOUND 12
#define WB_CANTOPEN 14
#define WB_OPEN_WAL 0x00080000
#define WB_SHM_UNLOCK 1
#define WB_FRAME_HDR 24
// WB_FCNTL_STATS is the file control (on the database file) that reads the
// WAL's counters: an opcode of our own, far from SQLite's (under 100).
#define WB_FCNTL_STATS 0x70660001
// WB_CAP is the buffer's size: the most SQLite's unix VFS writes in one
// call is 0x1ffff bytes (seekAndWriteFd masks larger counts), so 124 KiB,
// about 15 frames of 8 KiB pages a call instead of two calls a frame.
#define WB_CAP (31 * 4096)

typedef struct wbFile wbFile;
struct wbFile {
	sqlite3_file base;
	sqlite3_file *real;  // the root VFS's file, right after this struct
	wbFile *wal;         // database file: its WAL while open through the shim
	wbFile *db;          // WAL: its database file
	char *buf;           // WAL: the buffered bytes [off, off+n); NULL: not a WAL
	sqlite3_int64 off;   // the stream's offset of buf[0]; -1: no stream
	int n;
	int commit;          // the last write was a commit frame's header
	pf_walbuf_stats st;
};

static sqlite3_vfs *wb_root;
static sqlite3_vfs wb_vfs;
static const sqlite3_io_methods wb_methods;

static sqlite3_file *real(sqlite3_file *f) { return ((wbFile *)f)->real; }

// wb_through writes to the file itself.
static int wb_through(wbFile *w, const void *data, int amt, sqlite3_int64 ofs) {
	int rc = w->real->pMethods->xWrite(w->real, data, amt, ofs);
	w->st.calls++;
	if (rc == WB_OK) w->st.bytes += amt;
	return rc;
}

// wb_flush writes the buffered bytes; the stream goes on after them.
static int wb_flush(wbFile *w) {
	if (w->n == 0) return WB_OK;
	int rc = wb_through(w, w->buf, w->n, w->off);
	if (rc != WB_OK) {
		// The bytes are lost to the file: SQLite sees the error and rolls the
		// transaction back; nothing after them may be buffered as continuing.
		w->n = 0;
		w->off = -1;
		return rc;
	}
	w->off += w->n;
	w->n = 0;
	return WB_OK;
}

static int wb_flush_wal(sqlite3_file *f) {
	wbFile *w = (wbFile *)f;
	return w->buf ? wb_flush(w) : WB_OK;
}

static unsigned be32(const void *p) {
	const unsigned char *b = p;
	return (unsigned)b[0] << 24 | (unsigned)b[1] << 16 | (unsigned)b[2] << 8 | b[3];
}

static int wbClose(sqlite3_file *f) {
	wbFile *p = (wbFile *)f;
	int rc = WB_OK;
	if (p->buf) {
		rc = wb_flush(p);
		free(p->buf);
		p->buf = NULL;
		if (p->db) p->db->wal = NULL;
	} else if (p->wal) {
		p->wal->db = NULL;
	}
	int rc2 = p->real->pMethods->xClose(p->real);
	return rc != WB_OK ? rc : rc2;
}

static int wbRead(sqlite3_file *f, void *out, int amt, sqlite3_int64 ofs) {
	wbFile *w = (wbFile *)f;
	if (w->buf && w->n > 0 && ofs < w->off + w->n && ofs + amt > w->off) {
		if (ofs >= w->off && ofs + amt <= w->off + w->n) {
			memcpy(out, w->buf + (ofs - w->off), amt);
			w->st.served++;
			return WB_OK;
		}
		int rc = wb_flush(w);
		if (rc != WB_OK) return rc;
	}
	return w->real->pMethods->xRead(w->real, out, amt, ofs);
}

static int wbWrite(sqlite3_file *f, const void *data, int amt, sqlite3_int64 ofs) {
	wbFile *w = (wbFile *)f;
	if (!w->buf) return w->real->pMethods->xWrite(w->real, data, amt, ofs);
	w->st.writes++;
	int rc;
	int hdr = amt == WB_FRAME_HDR;
	int commit = hdr && be32((const char *)data + 4) != 0;
	sqlite3_int64 end = w->off + w->n;
	if (w->off >= 0 && ofs == end && amt <= WB_CAP) {
		// The stream goes on.
		if (w->n + amt > WB_CAP && (rc = wb_flush(w)) != WB_OK) return rc;
		memcpy(w->buf + w->n, data, amt);
		w->n += amt;
		if (hdr) {
			w->commit = commit;
			return WB_OK;
		}
		if (w->commit) {
			// The commit frame is whole: it reaches the file before SQLite
			// can publish the transaction, and a failure fails the commit.
			w->commit = 0;
			return wb_flush(w);
		}
		return WB_OK;
	}
	if (commit || w->commit) {
		// A commit frame's header rewritten (SQLite rewrites the checksums of
		// the transaction's frames once all are written, the commit frame's
		// last): everything goes to the file now.
		w->commit = 0;
		if ((rc = wb_flush(w)) != WB_OK) return rc;
		w->off = -1;
		return wb_through(w, data, amt, ofs);
	}
	if (w->n > 0 && ofs >= w->off && ofs + amt <= end) {
		// A buffered frame rewritten in place (its page changed again after
		// SQLite spilled it before the commit).
		memcpy(w->buf + (ofs - w->off), data, amt);
		return WB_OK;
	}
	if (w->n > 0 && ofs < end && ofs + amt > w->off) {
		// Partly over the buffer: the buffer goes first.
		if ((rc = wb_flush(w)) != WB_OK) return rc;
		w->off = -1;
		return wb_through(w, data, amt, ofs);
	}
	if (w->n > 0 || !hdr) {
		// Elsewhere (a frame flushed already, rewritten in place; the WAL's
		// header): to the file, the stream kept.
		return wb_through(w, data, amt, ofs);
	}
	// A frame header with nothing buffered starts a new stream (the first
	// frame after the WAL restarts).
	w->off = ofs;
	memcpy(w->buf, data, amt);
	w->n = amt;
	return WB_OK;
}

static int wbTruncate(sqlite3_file *f, sqlite3_int64 size) {
	int rc = wb_flush_wal(f);
	return rc != WB_OK ? rc : real(f)->pMethods->xTruncate(real(f), size);
}

static int wbSync(sqlite3_file *f, int flags) {
	int rc = wb_flush_wal(f);
	return rc != WB_OK ? rc : real(f)->pMethods->xSync(real(f), flags);
}

static int wbFileSize(sqlite3_file *f, sqlite3_int64 *size) {
	int rc = wb_flush_wal(f);
	return rc != WB_OK ? rc : real(f)->pMethods->xFileSize(real(f), size);
}

static int wbLock(sqlite3_file *f, int l) { return real(f)->pMethods->xLock(real(f), l); }
static int wbUnlock(sqlite3_file *f, int l) { return real(f)->pMethods->xUnlock(real(f), l); }
static int wbCheckReservedLock(sqlite3_file *f, int *out) {
	return real(f)->pMethods->xCheckReservedLock(real(f), out);
}

static int wbFileControl(sqlite3_file *f, int op, void *arg) {
	wbFile *p = (wbFile *)f;
	if (op == WB_FCNTL_STATS) {
		if (!p->wal) return WB_NOTFOUND;
		*(pf_walbuf_stats *)arg = p->wal->st;
		return WB_OK;
	}
	int rc = wb_flush_wal(f);
	return rc != WB_OK ? rc : p->real->pMethods->xFileControl(p->real, op, arg);
}

static int wbSectorSize(sqlite3_file *f) { return real(f)->pMethods->xSectorSize(real(f)); }
static int wbDeviceCharacteristics(sqlite3_file *f) {
	return real(f)->pMethods->xDeviceCharacteristics(real(f));
}

static int wbShmMap(sqlite3_file *f, int pg, int pgsz, int extend, void volatile **pp) {
	return real(f)->pMethods->xShmMap(real(f), pg, pgsz, extend, pp);
}

static int wbShmLock(sqlite3_file *f, int ofs, int n, int flags) {
	wbFile *p = (wbFile *)f;
	if ((flags & WB_SHM_UNLOCK) && p->wal) {
		int rc = wb_flush(p->wal);
		if (rc != WB_OK) return rc;
	}
	return p->real->pMethods->xShmLock(p->real, ofs, n, flags);
}

static void wbShmBarrier(sqlite3_file *f) {
	wbFile *p = (wbFile *)f;
	// SQLite publishes a commit's WAL index header across this barrier; the
	// commit frame's write has flushed already (wbWrite), so this is only a
	// backstop and has no way to report an error.
	if (p->wal) wb_flush(p->wal);
	p->real->pMethods->xShmBarrier(p->real);
}

static int wbShmUnmap(sqlite3_file *f, int del) { return real(f)->pMethods->xShmUnmap(real(f), del); }

static int wbFetch(sqlite3_file *f, sqlite3_int64 ofs, int amt, void **pp) {
	int rc = wb_flush_wal(f);
	return rc != WB_OK ? rc : real(f)->pMethods->xFetch(real(f), ofs, amt, pp);
}

static int wbUnfetch(sqlite3_file *f, sqlite3_int64 ofs, void *p) {
	return real(f)->pMethods->xUnfetch(real(f), ofs, p);
}

static const sqlite3_io_methods wb_methods = {
	3, wbClose, wbRead, wbWrite, wbTruncate, wbSync, wbFileSize, wbLock, wbUnlock,
	wbCheckReservedLock, wbFileControl, wbSectorSize, wbDeviceCharacteristics,
	wbShmMap, wbShmLock, wbShmBarrier, wbShmUnmap, wbFetch, wbUnfetch,
};

static int wbOpen(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *outFlags) {
	wbFile *p = (wbFile *)f;
	memset(p, 0, sizeof *p);
	p->real = (sqlite3_file *)&p[1];
	p->off = -1;
	int rc = wb_root->xOpen(wb_root, name, p->real, flags, outFlags);
	if (rc != WB_OK) {
		p->base.pMethods = NULL;
		return rc;
	}
	if (p->real->pMethods->iVersion < 3) {
		// Every method above is forwarded: the root VFS must have them all.
		p->real->pMethods->xClose(p->real);
		p->base.pMethods = NULL;
		return WB_CANTOPEN;
	}
	if ((flags & WB_OPEN_WAL) && name) {
		wbFile *db = (wbFile *)sqlite3_database_file_object(name);
		if (db && db->base.pMethods == &wb_methods && !db->wal && !db->buf) {
			if (!(p->buf = malloc(WB_CAP))) {
				p->real->pMethods->xClose(p->real);
				p->base.pMethods = NULL;
				return WB_NOMEM;
			}
			p->db = db;
			db->wal = p;
		}
	}
	p->base.pMethods = &wb_methods;
	return WB_OK;
}

static int wbDelete(sqlite3_vfs *v, const char *n, int s) { return wb_root->xDelete(wb_root, n, s); }
static int wbAccess(sqlite3_vfs *v, const char *n, int fl, int *o) { return wb_root->xAccess(wb_root, n, fl, o); }
static int wbFullPathname(sqlite3_vfs *v, const char *n, int sz, char *o) {
	return wb_root->xFullPathname(wb_root, n, sz, o);
}
static void *wbDlOpen(sqlite3_vfs *v, const char *n) { return wb_root->xDlOpen(wb_root, n); }
static void wbDlError(sqlite3_vfs *v, int n, char *m) { wb_root->xDlError(wb_root, n, m); }
static void (*wbDlSym(sqlite3_vfs *v, void *h, const char *s))(void) { return wb_root->xDlSym(wb_root, h, s); }
static void wbDlClose(sqlite3_vfs *v, void *h) { wb_root->xDlClose(wb_root, h); }
static int wbRandomness(sqlite3_vfs *v, int n, char *o) { return wb_root->xRandomness(wb_root, n, o); }
static int wbSleep(sqlite3_vfs *v, int us) { return wb_root->xSleep(wb_root, us); }
static int wbCurrentTime(sqlite3_vfs *v, double *t) { return wb_root->xCurrentTime(wb_root, t); }
static int wbGetLastError(sqlite3_vfs *v, int n, char *m) { return wb_root->xGetLastError(wb_root, n, m); }
static int wbCurrentTimeInt64(sqlite3_vfs *v, sqlite3_int64 *t) {
	return wb_root->xCurrentTimeInt64(wb_root, t);
}

int pf_walbuf_register(const char *name) {
	if (!sqlite3_vfs_find || !sqlite3_vfs_register || !sqlite3_database_file_object) return 0;
	if (wb_root) return 1;
	sqlite3_vfs *root = sqlite3_vfs_find(0);
	if (!root || root->iVersion < 2) return 0;
	wb_root = root;
	wb_vfs = (sqlite3_vfs){
		.iVersion = 2,
		.szOsFile = (int)sizeof(wbFile) + root->szOsFile,
		.mxPathname = root->mxPathname,
		.zName = name,
		.xOpen = wbOpen,
		.xDelete = wbDelete,
		.xAccess = wbAccess,
		.xFullPathname = wbFullPathname,
		.xDlOpen = wbDlOpen,
		.xDlError = wbDlError,
		.xDlSym = wbDlSym,
		.xDlClose = wbDlClose,
		.xRandomness = wbRandomness,
		.xSleep = wbSleep,
		.xCurrentTime = wbCurrentTime,
		.xGetLastError = wbGetLastError,
		.xCurrentTimeInt64 = wbCurrentTimeInt64,
	};
	if (sqlite3_vfs_register(&wb_vfs, 0) != WB_OK) {
		wb_root = NULL;
		return 0;
	}
	return 1;
}

int pf_walbuf_stats_of(sqlite3 *db, pf_walbuf_stats *st) {
	if (!sqlite3_file_control) return 0;
	return sqlite3_file_control(db, "main", WB_FCNTL_STATS, st) == WB_OK;
}
