package apibench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/permafrost-dev/permafrost/internal/testing/memstat"
)

// ReplicaEnv names the database a replica child serves (TestReplicaChild).
const ReplicaEnv = "APIBENCH_REPLICA_DSN"

// Replica is the data service in a child process: the test binary run again
// as TestReplicaChild, which opens the dataset and calls Serve. Its memory is
// an API replica's alone (the load's clients stay in the parent), read from
// /proc as the kernel counts it.
type Replica struct {
	Base  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// StartReplica starts a child serving dsn and waits for its address.
func StartReplica(ctx context.Context, dsn string) (*Replica, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("replica: %w", err)
	}
	cmd := exec.CommandContext(ctx, exe, "-test.run=^TestReplicaChild$")
	cmd.Env = append(os.Environ(), ReplicaEnv+"="+dsn)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("replica: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("replica: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("replica: start: %w", err)
	}
	r := &Replica{cmd: cmd, stdin: stdin}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if base, ok := strings.CutPrefix(sc.Text(), "replica listening on "); ok {
			r.Base = base
			go io.Copy(io.Discard, stdout) //nolint:errcheck // the test framework's output, not needed
			return r, nil
		}
	}
	r.Stop()
	return nil, fmt.Errorf("replica: exited before listening: %v", sc.Err())
}

// Memory is the child's peak and current resident set (VmHWM, VmRSS), in
// bytes.
func (r *Replica) Memory() (peak, now int64, err error) {
	st, err := memstat.Status(r.cmd.Process.Pid)
	if err != nil {
		return 0, 0, fmt.Errorf("replica memory: %w", err)
	}
	if st["VmHWM"] == 0 {
		return 0, 0, fmt.Errorf("replica memory: no VmHWM in /proc/%d/status", r.cmd.Process.Pid)
	}
	return st["VmHWM"], st["VmRSS"], nil
}

// Stop ends the child: it exits when its stdin closes.
func (r *Replica) Stop() {
	r.stdin.Close()
	_ = r.cmd.Wait()
}
