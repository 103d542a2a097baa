package config

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
)

// Commands lists the subcommands, in the order help shows them.
var Commands = []struct{ Name, Summary string }{
	{"serve", "index continuously and serve every API on --listen"},
	{"index", "index the configured chains (--until-tip: stop at the tip seen at start)"},
	{"status", "per chain: state, indexed height, node tip, lag, blocks/s (--json)"},
	{"migrate", "apply database migrations (--status: list applied and pending ones)"},
	{"reindex", "rebuild the derived tables from the stored raw blocks (no node needed)"},
	{"keys", "manage API keys (create|list|revoke)"},
	{"replay", "serve a recording as an avalanchego-compatible node (--fixture DIR --listen ADDR)"},
	{"demo", "replay the bundled recording, index it into a temporary SQLite database, serve every API"},
	{"version", "print the version, commit and schema version"},
}

// flagCommands says which commands use a flag (the rest ignore it in the
// environment and YAML file, refuse it on the command line and leave it out
// of their -h). Flags not listed are the server's: serve and demo.
var flagCommands = map[string]string{
	"config":     "*",
	"log-format": "*",
	"db":         "serve index status migrate reindex keys",
	"listen":     "serve replay demo",
	"node":       "serve index reindex",
	"genesis":    "serve index reindex demo",
	"evm-rpc":    "serve index reindex demo", "evm-genesis": "serve index reindex demo",
	"icm-allow": "serve index reindex demo", "icm-deny": "serve index reindex demo",
	"batch-size": "serve index demo", "rpc-batch": "serve index demo", "rpc-concurrency": "serve index demo", "catch-up-lag": "serve index",
	// no-traces: a full-history catch-up (index --until-tip) may be run
	// without call traces too (docs/operations.md, mainnet and Fuji).
	"poll": "serve index demo", "no-traces": "serve index demo",
	"tier": "serve demo keys",
}

// configFlags are the names Register declares (the commands' own flags,
// like index --until-tip, are not in it).
var configFlags = sync.OnceValue(func() map[string]bool {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	Register(fs)
	out := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { out[f.Name] = true })
	return out
})

// Uses reports whether cmd uses the flag name: a command's own flag, or a
// shared one that applies to it.
func Uses(cmd, name string) bool {
	if !configFlags()[name] {
		return true
	}
	cmds, ok := flagCommands[name]
	if !ok {
		cmds = "serve demo"
	}
	return cmds == "*" || strings.Contains(" "+cmds+" ", " "+cmd+" ")
}

// CommandUsage writes cmd's flags (those it uses) in flag.PrintDefaults'
// format.
func CommandUsage(w io.Writer, fs *flag.FlagSet, cmd string) {
	fmt.Fprintf(w, "usage: permafrost %s [flags]\n\nflags (also PERMAFROST_<FLAG> in the environment, or keys of the --config YAML file):\n", cmd)
	sub := flag.NewFlagSet(cmd, flag.ContinueOnError)
	sub.SetOutput(w)
	fs.VisitAll(func(f *flag.Flag) {
		if Uses(cmd, f.Name) {
			sub.Var(f.Value, f.Name, f.Usage)
		}
	})
	sub.PrintDefaults()
}

// Reference is the table of every shared flag as docs/configuration.md
// lists it: flag, environment variable, YAML key, default, the commands that
// use it and what it does.
func Reference() string {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	Register(fs)
	var b strings.Builder
	b.WriteString("| flag | environment | YAML key | default | commands | meaning |\n|---|---|---|---|---|---|\n")
	fs.VisitAll(func(f *flag.Flag) {
		cmds := flagCommands[f.Name]
		switch cmds {
		case "":
			cmds = "serve demo"
		case "*":
			cmds = "all"
		}
		def := "`" + f.DefValue + "`"
		if f.DefValue == "" || f.DefValue == "[]" {
			def = "none"
		}
		env := "PERMAFROST_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		yamlKey := "`" + f.Name + "`"
		if f.Name == "config" {
			yamlKey = "—"
		}
		fmt.Fprintf(&b, "| `--%s` | `%s` | %s | %s | %s | %s |\n", f.Name, env, yamlKey, def, cmds, strings.ReplaceAll(f.Usage, "|", "\\|"))
	})
	return b.String()
}
