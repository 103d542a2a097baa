package livenet

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// reaperScript waits for the test process ($0) to go away, then stops the
// avalanchego processes of the network in $1 (found through the
// process.json each running node writes): SIGTERM, and SIGKILL 10 s later.
// It also removes the monitoring files tmpnet keeps under $3/.tmpnet for the
// network's nodes (named after the network UUID, $2), as a clean stop does.
const reaperScript = `
while kill -0 "$0" 2>/dev/null; do sleep 1; done
[ -n "$2" ] && [ -n "$3" ] && rm -f "$3/.tmpnet/prometheus/file_sd_configs/$2"_*.json "$3/.tmpnet/promtail/file_sd_configs/$2"_*.json
pids() {
  for f in "$1"/*/process.json; do
    [ -f "$f" ] || continue
    pid=$(sed -n 's/.*"pid":[[:space:]]*\([0-9][0-9]*\).*/\1/p' "$f")
    # Only an avalanchego process: process.json may be stale after a crash.
    [ -n "$pid" ] && grep -q avalanchego "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"
  done
}
p=$(pids "$1"); [ -n "$p" ] || exit 0
kill $p 2>/dev/null
sleep 10
p=$(pids "$1"); [ -n "$p" ] && kill -9 $p 2>/dev/null
exit 0
`

// startReaper starts a shell that outlives this process. tmpnet starts nodes
// detached, and a go test timeout kills the test binary without running
// cleanups, which would leave the nodes running on a 2-core CI machine: the
// reaper stops them then. Network.Stop ends the reaper.
func startReaper(networkDir, networkUUID string) *os.Process {
	home, _ := os.UserHomeDir()
	cmd := exec.Command("/bin/sh", "-c", reaperScript, strconv.Itoa(os.Getpid()), networkDir, networkUUID, home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil // best effort: Stop still stops the nodes
	}
	go func() { _ = cmd.Wait() }()
	return cmd.Process
}
