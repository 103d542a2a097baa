package app

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/permafrost-dev/permafrost/internal/config"
	"github.com/permafrost-dev/permafrost/internal/devnet"
)

// The deployment files (deploy/): Docker is not available here, so they are
// checked by parsing them: every permafrost command line they hold names a
// command that exists, with flags that exist and that the command uses, and
// every PERMAFROST_* variable they set is such a flag too.
func TestDeployFiles(t *testing.T) {
	dir := filepath.Join(devnet.Root(t), "deploy")
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	check := func(where string, argv []string, env map[string]string) {
		t.Helper()
		if len(argv) == 0 {
			t.Errorf("%s: no command", where)
			return
		}
		cmd := argv[0]
		if !slices.ContainsFunc(config.Commands, func(c struct{ Name, Summary string }) bool { return c.Name == cmd }) {
			t.Errorf("%s: unknown command %q", where, cmd)
			return
		}
		fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
		config.Register(fs)
		if err := fs.Parse(argv[1:]); err != nil {
			t.Errorf("%s: %v", where, err)
		}
		fs.Visit(func(f *flag.Flag) {
			if !config.Uses(cmd, f.Name) {
				t.Errorf("%s: %s does not use --%s", where, cmd, f.Name)
			}
		})
		for k := range env {
			name, ok := strings.CutPrefix(k, "PERMAFROST_")
			if !ok {
				continue
			}
			name = strings.ToLower(strings.ReplaceAll(name, "_", "-"))
			if fs.Lookup(name) == nil || !config.Uses(cmd, name) {
				t.Errorf("%s: %s is no flag of %s", where, k, cmd)
			}
		}
	}

	// Containerfile: the CMD given to the ENTRYPOINT; the version and
	// commit variables its -ldflags set exist (this package's).
	cf := read("Containerfile")
	m := regexp.MustCompile(`(?m)^CMD (\[.*\])$`).FindStringSubmatch(cf)
	if m == nil {
		t.Fatal("Containerfile: no CMD")
	}
	var argv []string
	if err := json.Unmarshal([]byte(m[1]), &argv); err != nil {
		t.Fatal(err)
	}
	check("Containerfile CMD", argv, nil)
	if !strings.Contains(cf, `ENTRYPOINT ["/usr/local/bin/permafrost"]`) || !strings.Contains(cf, "USER nonroot") ||
		!strings.Contains(cf, "internal/app.version=") || !strings.Contains(cf, "internal/app.commit=") {
		t.Error("Containerfile: entrypoint, non-root user or version flags missing")
	}
	version, commit = "v-test", "c-test"
	if v, c := Version(); v != "v-test" || c != "c-test" {
		t.Errorf("Version() = %s %s", v, c)
	}
	version, commit = "", ""

	// compose.yaml: a writer and replicas that do not ingest.
	var compose struct {
		Services map[string]struct {
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
			Deploy      struct {
				Replicas int `yaml:"replicas"`
			} `yaml:"deploy"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal([]byte(read("compose.yaml")), &compose); err != nil {
		t.Fatal(err)
	}
	writers, replicas := 0, 0
	for name, s := range compose.Services {
		if s.Command == nil {
			continue
		}
		check("compose.yaml service "+name, s.Command, s.Environment)
		switch {
		case slices.Contains(s.Command, "--ingest=false"):
			replicas += max(s.Deploy.Replicas, 1)
		default:
			writers++
		}
	}
	if writers != 1 || replicas != 2 || compose.Services["postgres"].Environment["POSTGRES_DB"] == "" {
		t.Errorf("compose.yaml: %d writers, %d replicas", writers, replicas)
	}

	// The systemd unit's ExecStart.
	unit := read("permafrost.service")
	m = regexp.MustCompile(`(?m)^ExecStart=(\S+) (.*)$`).FindStringSubmatch(unit)
	if m == nil || !strings.HasSuffix(m[1], "/permafrost") {
		t.Fatalf("permafrost.service: ExecStart %q", m)
	}
	check("permafrost.service ExecStart", strings.Fields(m[2]), nil)
	if !strings.Contains(unit, "User=permafrost") {
		t.Error("permafrost.service runs as root")
	}
}
