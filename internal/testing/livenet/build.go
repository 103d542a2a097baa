// Package livenet starts a real avalanchego network (two primary-network
// validators plus a subnet-evm Avalanche L1 with its own validator node) on
// 127.0.0.1, drives a workload covering every transaction kind the network
// allows today and records what it issued. The binaries are built from the
// module versions pinned in this module's go.mod, so the tests need nothing
// but the Go toolchain and the module proxy (or a warm module cache).
package livenet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/ava-labs/avalanchego/utils/constants"
)

const (
	// CacheEnv overrides the root of the build cache (default
	// os.UserCacheDir()/permafrost-livenet). Binaries go to <root>/<key>, where
	// key hashes go.mod, go.sum, the plugin source and the Go version, so a
	// version bump never reuses a stale binary.
	CacheEnv = "PERMAFROST_LIVENET_CACHE"

	nodePackage   = "github.com/ava-labs/avalanchego/main"
	pluginPackage = "./cmd/subnetevm"
)

// Binaries are the built node and its plugin directory.
type Binaries struct {
	AvalancheGo string // the avalanchego binary
	PluginDir   string // holds the subnet-evm plugin, named by its VM ID
	CacheDir    string

	// NodeBuild and PluginBuild are the time spent building (0 when the
	// binary came from the cache).
	NodeBuild   time.Duration
	PluginBuild time.Duration
}

// SubnetEVMPluginPath is where avalanchego looks for the subnet-evm VM: the
// plugin dir, file named by the VM ID.
func (b *Binaries) SubnetEVMPluginPath() string {
	return filepath.Join(b.PluginDir, constants.SubnetEVMID.String())
}

// BuildError says the node (or plugin) could not be built; tests skip on it.
type BuildError struct {
	What string
	Err  error
	Out  string
}

func (e *BuildError) Error() string {
	out := strings.TrimSpace(e.Out)
	if len(out) > 4000 {
		out = "..." + out[len(out)-4000:]
	}
	return fmt.Sprintf("building %s: %v\n%s", e.What, e.Err, out)
}

func (e *BuildError) Unwrap() error { return e.Err }

// ModuleDir finds this nested module's root (where go.mod and go.sum are):
// the directory of this source file, which `go test` also uses as working
// directory.
func ModuleDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if ok {
		dir := filepath.Dir(file)
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(wd, "go.mod")); err != nil {
		return "", fmt.Errorf("livenet module root not found (cwd %s)", wd)
	}
	return wd, nil
}

// cacheKey hashes everything the binaries depend on.
func cacheKey(moduleDir string) (string, error) {
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum", filepath.Join("cmd", "subnetevm", "main.go")} {
		b, err := os.ReadFile(filepath.Join(moduleDir, f))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	goVersion, err := exec.Command("go", "env", "GOVERSION", "GOOS", "GOARCH").Output()
	if err != nil {
		return "", fmt.Errorf("go env: %w", err)
	}
	h.Write(goVersion)
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// CacheRoot is the directory holding one subdirectory per cache key.
func CacheRoot() (string, error) {
	if dir := os.Getenv(CacheEnv); dir != "" {
		return filepath.Abs(dir)
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "permafrost-livenet"), nil
}

// Build returns the node and plugin binaries, building whichever is not in
// the cache yet. logf (may be nil) gets progress lines. A failure to build
// the node is a *BuildError.
func Build(ctx context.Context, logf func(string, ...any)) (*Binaries, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if _, err := exec.LookPath("go"); err != nil {
		return nil, &BuildError{What: "avalanchego", Err: err}
	}
	moduleDir, err := ModuleDir()
	if err != nil {
		return nil, &BuildError{What: "avalanchego", Err: err}
	}
	key, err := cacheKey(moduleDir)
	if err != nil {
		return nil, &BuildError{What: "avalanchego", Err: err}
	}
	root, err := CacheRoot()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, key)
	b := &Binaries{
		AvalancheGo: filepath.Join(dir, "avalanchego"),
		PluginDir:   filepath.Join(dir, "plugins"),
		CacheDir:    dir,
	}
	if err := os.MkdirAll(b.PluginDir, 0o755); err != nil {
		return nil, err
	}

	// Two test processes building at once would waste a core each for
	// minutes: serialise on a lock file, then re-check the cache.
	unlock, err := lockFile(filepath.Join(dir, ".lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()

	if !isFile(b.AvalancheGo) {
		logf("livenet: building avalanchego (%s) into %s; a cold build takes several minutes on 2 cores", nodePackage, dir)
		start := time.Now()
		if err := goBuild(ctx, moduleDir, b.AvalancheGo, nodePackage); err != nil {
			err.What = "avalanchego"
			return nil, err
		}
		b.NodeBuild = time.Since(start)
		logf("livenet: built avalanchego in %s", b.NodeBuild.Round(time.Second))
	}
	plugin := b.SubnetEVMPluginPath()
	if !isFile(plugin) {
		logf("livenet: building the subnet-evm plugin (%s)", pluginPackage)
		start := time.Now()
		if err := goBuild(ctx, moduleDir, plugin, pluginPackage); err != nil {
			err.What = "subnet-evm plugin"
			return nil, err
		}
		b.PluginBuild = time.Since(start)
		logf("livenet: built the subnet-evm plugin in %s", b.PluginBuild.Round(time.Second))
	}
	return b, nil
}

// goBuild builds pkg to out through a temporary file renamed into place, so
// an interrupted build never leaves a truncated binary in the cache.
func goBuild(ctx context.Context, moduleDir, out, pkg string) *BuildError {
	tmp := out + ".tmp"
	_ = os.Remove(tmp)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", tmp, pkg)
	cmd.Dir = moduleDir
	// The nested module must build on its own, whatever go.work is around.
	cmd.Env = append(os.Environ(), "GOWORK=off")
	output, err := cmd.CombinedOutput()
	if err != nil {
		_ = os.Remove(tmp)
		return &BuildError{Err: err, Out: string(output)}
	}
	if err := os.Rename(tmp, out); err != nil {
		return &BuildError{Err: err}
	}
	return nil
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Size() > 0
}

func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, errors.Join(errors.New("locking the build cache"), err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
