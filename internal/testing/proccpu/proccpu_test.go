package proccpu

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

func TestReadThisProcess(t *testing.T) {
	before := Process(os.Getpid())
	for end := time.Now().Add(150 * time.Millisecond); time.Now().Before(end); {
	}
	st, ok := Read(os.Getpid())
	if !ok {
		t.Fatal("cannot read this process's /proc stat")
	}
	if st.PPID != os.Getppid() {
		t.Errorf("parent %d, want %d", st.PPID, os.Getppid())
	}
	if st.Self <= before {
		t.Errorf("CPU time %v after 150 ms of work, %v before", st.Self, before)
	}
	if _, ok := Read(-1); ok {
		t.Error("read a process that cannot exist")
	}
}

func TestFindServer(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		srv, ok, err := FindServer(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		if db.Dialect() != store.Postgres {
			if ok {
				t.Fatalf("a server behind SQLite: %+v", srv)
			}
			return
		}
		if !ok || srv.Postmaster == 0 || srv.Backend == 0 {
			t.Fatalf("the test's PostgreSQL server not found: %+v, %v", srv, ok)
		}
		if st, _ := Read(srv.Backend); st.PPID != srv.Postmaster {
			t.Errorf("backend %d's parent %d, want the postmaster %d", srv.Backend, st.PPID, srv.Postmaster)
		}
		before := srv.CPU()
		if _, err := db.ExecContext(ctx, `SELECT count(*) FROM generate_series(1, 3000000)`); err != nil {
			t.Fatal(err)
		}
		if after := srv.CPU(); after <= before {
			t.Errorf("server CPU %v after a query of millions of rows, %v before", after, before)
		}
	})
}
