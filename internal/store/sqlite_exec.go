package store

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// The SQLite that mattn/go-sqlite3 compiles into the binary (see sqlite_config.go
// for why the declarations are weak).
typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;
extern int sqlite3_prepare_v3(sqlite3*, const char*, int, unsigned int, sqlite3_stmt**, const char**) __attribute__((weak));
extern int sqlite3_bind_parameter_count(sqlite3_stmt*) __attribute__((weak));
extern int sqlite3_bind_null(sqlite3_stmt*, int) __attribute__((weak));
extern int sqlite3_bind_int64(sqlite3_stmt*, int, long long) __attribute__((weak));
extern int sqlite3_bind_double(sqlite3_stmt*, int, double) __attribute__((weak));
extern int sqlite3_bind_text(sqlite3_stmt*, int, const char*, int, void(*)(void*)) __attribute__((weak));
extern int sqlite3_bind_blob(sqlite3_stmt*, int, const void*, int, void(*)(void*)) __attribute__((weak));
extern int sqlite3_step(sqlite3_stmt*) __attribute__((weak));
extern int sqlite3_reset(sqlite3_stmt*) __attribute__((weak));
extern int sqlite3_clear_bindings(sqlite3_stmt*) __attribute__((weak));
extern int sqlite3_finalize(sqlite3_stmt*) __attribute__((weak));
extern long long sqlite3_changes64(sqlite3*) __attribute__((weak));
extern long long sqlite3_last_insert_rowid(sqlite3*) __attribute__((weak));
extern int sqlite3_extended_errcode(sqlite3*) __attribute__((weak));
extern const char *sqlite3_errmsg(sqlite3*) __attribute__((weak));

#define PF_SQLITE_OK 0
#define PF_SQLITE_ROW 100
#define PF_SQLITE_DONE 101
#define PF_PREPARE_PERSISTENT 0x01

enum { pf_null, pf_int, pf_float, pf_text, pf_blob };

static int pf_available(void) {
	return sqlite3_prepare_v3 && sqlite3_step && sqlite3_changes64 && sqlite3_errmsg;
}

// pf_prepare prepares one statement of q. It reports 1 in *more when q has
// text after that statement (the caller leaves such queries to the driver).
static int pf_prepare(sqlite3 *db, const char *q, int n, sqlite3_stmt **st, int *params, int *more) {
	const char *tail = 0;
	int rc = sqlite3_prepare_v3(db, q, n, PF_PREPARE_PERSISTENT, st, &tail);
	if (rc != PF_SQLITE_OK) return rc;
	*more = 0;
	for (; tail && tail < q + n; tail++) {
		if (*tail != ' ' && *tail != '\t' && *tail != '\n' && *tail != '\r' && *tail != ';') { *more = 1; break; }
	}
	*params = *st ? sqlite3_bind_parameter_count(*st) : 0;
	return rc;
}

// pf_exec binds n values, steps the statement once and resets it: one cgo
// call per statement. Text and blobs point into buf, which outlives the call
// only as long as the step needs it (SQLITE_STATIC, bindings cleared after).
static int pf_exec(sqlite3 *db, sqlite3_stmt *st, int n, const uint8_t *kinds, const int64_t *vals,
		const int32_t *lens, const char *buf, long long *changes, long long *rowid, char *msg, int msgLen) {
	static const char empty[1] = {0};
	int rc = PF_SQLITE_OK;
	for (int i = 0; i < n && rc == PF_SQLITE_OK; i++) {
		switch (kinds[i]) {
		case pf_null: rc = sqlite3_bind_null(st, i+1); break;
		case pf_int: rc = sqlite3_bind_int64(st, i+1, vals[i]); break;
		case pf_float: { double d; memcpy(&d, &vals[i], sizeof d); rc = sqlite3_bind_double(st, i+1, d); break; }
		case pf_text: rc = sqlite3_bind_text(st, i+1, lens[i] ? buf + vals[i] : empty, lens[i], 0); break;
		case pf_blob: rc = sqlite3_bind_blob(st, i+1, lens[i] ? buf + vals[i] : empty, lens[i], 0); break;
		}
	}
	if (rc == PF_SQLITE_OK) {
		rc = sqlite3_step(st);
		if (rc == PF_SQLITE_ROW || rc == PF_SQLITE_DONE) rc = PF_SQLITE_OK;
	}
	if (rc != PF_SQLITE_OK) {
		rc = sqlite3_extended_errcode(db);
		strncpy(msg, sqlite3_errmsg(db), msgLen - 1);
		msg[msgLen-1] = 0;
	} else {
		*changes = sqlite3_changes64(db);
		*rowid = sqlite3_last_insert_rowid(db);
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc;
}

static void pf_finalize(sqlite3_stmt *st) { sqlite3_finalize(st); }
*/
import "C"

import (
	"database/sql/driver"
	"fmt"
	"math"
	"reflect"
	"sync"
	"unsafe"

	"github.com/mattn/go-sqlite3"
)

// sqliteExec runs the write transaction's statements on the writer's SQLite
// connection with one cgo call each: mattn/go-sqlite3 makes one per bound
// value (and copies each), which was an eighth of the ingest writer's time.
// It keeps its own prepared statements, on the connection's handle, and
// leaves to the driver what it does not take: queries of more than one
// statement, a parameter count that differs from the arguments, values other
// than nil, int64, float64, bool, string and []byte.
type sqliteExec struct {
	mu    sync.Mutex
	db    *C.sqlite3 // the connection the statements belong to
	stmts map[string]sqliteStmt
	// maxStmts bounds the prepared statements kept (the writers' multi-row
	// inserts have one per row count, a few hundred KB each at the largest).
	maxStmts int
	// Per call, reused: value kinds, int64 values (or text offsets), text
	// lengths, and the text and blob bytes.
	kinds []uint8
	vals  []int64
	lens  []int32
	buf   []byte
	msg   [256]C.char
}

type sqliteStmt struct {
	st     *C.sqlite3_stmt
	params int
	single bool // one statement: the fast path may run it
}

// sqliteExecError is a statement's failure on the fast path, with SQLite's
// extended result code, in the driver's words.
type sqliteExecError struct {
	code int
	msg  string
}

func (e *sqliteExecError) Error() string { return fmt.Sprintf("%s (sqlite %d)", e.msg, e.code) }

type sqliteResult struct{ changes, rowid int64 }

func (r sqliteResult) LastInsertId() (int64, error) { return r.rowid, nil }
func (r sqliteResult) RowsAffected() (int64, error) { return r.changes, nil }

func newSQLiteExec() *sqliteExec {
	if C.pf_available() == 0 {
		return nil
	}
	return &sqliteExec{stmts: make(map[string]sqliteStmt), maxStmts: writerStmtCache}
}

// handle is the sqlite3* of a mattn connection, which keeps it unexported.
func handle(c *sqlite3.SQLiteConn) *C.sqlite3 {
	f := reflect.ValueOf(c).Elem().FieldByName("db")
	if !f.IsValid() || f.Kind() != reflect.Pointer {
		return nil
	}
	return (*C.sqlite3)(f.UnsafePointer())
}

// exec runs q on c. ok is false when q is left to the driver.
func (e *sqliteExec) exec(c *sqlite3.SQLiteConn, q string, args []driver.NamedValue) (res driver.Result, ok bool, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	db := handle(c)
	if db == nil || !e.encode(args) {
		return nil, false, nil
	}
	if db != e.db {
		// A new connection (the pool replaced the old one): finalize the old
		// one's statements (sqlite3_close_v2 keeps it open until they are).
		e.finalizeLocked()
		e.db = db
	}
	s, found := e.stmts[q]
	if !found {
		if len(e.stmts) >= e.maxStmts {
			e.evictLocked()
		}
		cq := C.CString(q)
		var st *C.sqlite3_stmt
		var params, more C.int
		rc := C.pf_prepare(db, cq, C.int(len(q)), &st, &params, &more)
		C.free(unsafe.Pointer(cq))
		if rc != 0 || st == nil {
			// The driver reports the error (or runs an empty query) its way.
			return nil, false, nil
		}
		s = sqliteStmt{st: st, params: int(params), single: more == 0}
		e.stmts[q] = s
	}
	if !s.single || s.params != len(args) {
		return nil, false, nil
	}
	var changes, rowid C.longlong
	var bufp *C.char
	if len(e.buf) > 0 {
		bufp = (*C.char)(unsafe.Pointer(&e.buf[0]))
	}
	var kinds *C.uint8_t
	var vals *C.int64_t
	var lens *C.int32_t
	if len(args) > 0 {
		kinds, vals, lens = (*C.uint8_t)(&e.kinds[0]), (*C.int64_t)(&e.vals[0]), (*C.int32_t)(&e.lens[0])
	}
	rc := C.pf_exec(db, s.st, C.int(len(args)), kinds, vals, lens, bufp, &changes, &rowid, &e.msg[0], C.int(len(e.msg)))
	if rc != 0 {
		return nil, true, &sqliteExecError{code: int(rc), msg: C.GoString(&e.msg[0])}
	}
	return sqliteResult{changes: int64(changes), rowid: int64(rowid)}, true, nil
}

// encode lays args out for pf_exec; false if one has a type it leaves to the driver.
func (e *sqliteExec) encode(args []driver.NamedValue) bool {
	e.kinds, e.vals, e.lens, e.buf = e.kinds[:0], e.vals[:0], e.lens[:0], e.buf[:0]
	for _, a := range args {
		if a.Name != "" {
			return false
		}
		var (
			kind uint8
			val  int64
			n    int
		)
		switch v := a.Value.(type) {
		case nil:
			kind = C.pf_null
		case int64:
			kind, val = C.pf_int, v
		case bool:
			kind = C.pf_int
			if v {
				val = 1
			}
		case float64:
			kind, val = C.pf_float, int64(math.Float64bits(v))
		case string:
			kind, val, n = C.pf_text, int64(len(e.buf)), len(v)
			e.buf = append(e.buf, v...)
		case []byte:
			if v == nil {
				kind = C.pf_null
				break
			}
			kind, val, n = C.pf_blob, int64(len(e.buf)), len(v)
			e.buf = append(e.buf, v...)
		default:
			return false
		}
		if n > math.MaxInt32 {
			return false
		}
		e.kinds = append(e.kinds, kind)
		e.vals = append(e.vals, val)
		e.lens = append(e.lens, int32(n))
	}
	return true
}

// evictLocked finalizes one statement, the first the map yields (random).
func (e *sqliteExec) evictLocked() {
	for q, s := range e.stmts {
		C.pf_finalize(s.st)
		delete(e.stmts, q)
		return
	}
}

// close finalizes the statements; the connection can then close.
func (e *sqliteExec) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.finalizeLocked()
}

func (e *sqliteExec) finalizeLocked() {
	for q, s := range e.stmts {
		C.pf_finalize(s.st)
		delete(e.stmts, q)
	}
	e.db = nil
}
