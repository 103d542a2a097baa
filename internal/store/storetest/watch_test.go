package storetest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv, when set, makes TestClusterStoppedWhenBinaryDies the child: it
// starts a throwaway cluster, prints its directory and server pid, and
// waits to be killed.
const childEnv = "STORETEST_WATCH_CHILD"

// TestClusterStoppedWhenBinaryDies kills (SIGKILL: no cleanup runs) a test
// binary that started a throwaway cluster: its watcher must stop the server
// and remove the cluster's directory.
func TestClusterStoppedWhenBinaryDies(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		c, err := StartCluster()
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		pid, err := os.ReadFile(filepath.Join(c.dir, "data", "postmaster.pid"))
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("cluster", c.dir, strings.SplitN(string(pid), "\n", 2)[0])
		time.Sleep(10 * time.Minute)
		return
	}
	if _, err := PGBinDir(); err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestClusterStoppedWhenBinaryDies$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var dir string
	var server int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "cluster" {
			dir = f[1]
			server, _ = strconv.Atoi(f[2])
			break
		}
	}
	if dir == "" || server == 0 {
		cmd.Process.Kill() //nolint:errcheck
		cmd.Wait()         //nolint:errcheck
		t.Fatalf("the child started no cluster")
	}
	if err := syscall.Kill(server, 0); err != nil {
		t.Fatalf("server %d not running before the kill: %v", server, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait() //nolint:errcheck // killed
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, statErr := os.Stat(dir)
		gone := syscall.Kill(server, 0) != nil && os.IsNotExist(statErr)
		if gone {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("2 minutes after the binary died: server %d running: %v, %s exists: %v",
				server, syscall.Kill(server, 0) == nil, dir, statErr == nil)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
