package keys

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// ErrUsage marks a command line that cannot be run (the error text says why).
var ErrUsage = errors.New("usage")

const usage = `usage:
  permafrost keys create --name NAME --tier TIER [--scopes a,b] [--expires 720h|30d] [--json]
  permafrost keys list [--json]
  permafrost keys revoke ID`

// Command runs `permafrost keys create|list|revoke` against db, writing to
// stdout. tiers are the tier names the server has budgets for.
func Command(ctx context.Context, db *store.DB, args []string, tiers []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: keys needs a subcommand\n%s", ErrUsage, usage)
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("permafrost keys "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "print JSON")
	switch sub {
	case "create":
		name := fs.String("name", "", "who or what the key is for")
		tier := fs.String("tier", "", "rate-limit tier (a tier of the server config)")
		scopes := fs.String("scopes", "", "comma list of scopes: "+strings.Join(Scopes, ", ")+", or *")
		expires := fs.String("expires", "", "lifetime, e.g. 720h or 30d (default: never)")
		if err := parse(fs, args, 0); err != nil {
			return err
		}
		if *name == "" || *tier == "" {
			return fmt.Errorf("%w: keys create needs --name and --tier\n%s", ErrUsage, usage)
		}
		if err := CheckTier(*tier, tiers); err != nil {
			return fmt.Errorf("%w: --tier: %v", ErrUsage, err)
		}
		exp, err := ParseExpiry(*expires)
		if err != nil {
			return fmt.Errorf("%w: --expires: %v", ErrUsage, err)
		}
		plaintext, err := Create(ctx, db, *name, *tier, strings.Split(*scopes, ","), exp)
		if err != nil {
			return err
		}
		k, err := Get(ctx, db, IDOf(plaintext))
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(stdout, struct {
				Key
				Plaintext string `json:"key"`
			}{k, plaintext})
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "id:\t%s\nname:\t%s\ntier:\t%s\nscopes:\t%s\nexpires:\t%s\nkey:\t%s\n",
			k.ID, k.Name, k.Tier, orDash(strings.Join(k.Scopes, ",")), expiresText(k), plaintext)
		if err := tw.Flush(); err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, "Store the key now: only its hash is kept, it cannot be shown again.")
		return err
	case "list":
		if err := parse(fs, args, 0); err != nil {
			return err
		}
		ks, err := List(ctx, db)
		if err != nil {
			return err
		}
		now := time.Now()
		if *asJSON {
			type row struct {
				Key
				Status string `json:"status"`
			}
			out := make([]row, 0, len(ks))
			for _, k := range ks {
				out = append(out, row{k, k.Status(now)})
			}
			return writeJSON(stdout, out)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tTIER\tSCOPES\tCREATED\tEXPIRES\tSTATUS")
		for _, k := range ks {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Tier,
				orDash(strings.Join(k.Scopes, ",")), k.CreatedAt.Format(time.RFC3339), expiresText(k), k.Status(now))
		}
		return tw.Flush()
	case "revoke":
		if err := parse(fs, args, 1); err != nil {
			return err
		}
		id := fs.Arg(0)
		if err := Revoke(ctx, db, id); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("keys revoke: no key with id %q", id)
			}
			return err
		}
		_, err := fmt.Fprintf(stdout, "revoked %s\n", id)
		return err
	}
	return fmt.Errorf("%w: unknown keys subcommand %q\n%s", ErrUsage, sub, usage)
}

// parse parses flags and demands exactly nargs positional arguments.
func parse(fs *flag.FlagSet, args []string, nargs int) error {
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %s: %v\n%s", ErrUsage, fs.Name(), err, usage)
	}
	if fs.NArg() != nargs {
		return fmt.Errorf("%w: %s takes %d argument(s), got %d\n%s", ErrUsage, fs.Name(), nargs, fs.NArg(), usage)
	}
	return nil
}

// ParseExpiry reads a key lifetime: "" (never), a Go duration (720h), or
// whole days (30d). It must be positive and at most 100 years.
func ParseExpiry(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	const maxDays = 36500
	var d time.Duration
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.ParseInt(n, 10, 64)
		if err != nil || days <= 0 || days > maxDays {
			return 0, fmt.Errorf("%q is not a whole number of days between 1 and %d", s, maxDays)
		}
		d = time.Duration(days) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%q is not a duration like 720h or 30d", s)
		}
	}
	if d <= 0 || d > maxDays*24*time.Hour {
		return 0, fmt.Errorf("%q must be positive and at most %d days", s, maxDays)
	}
	return d, nil
}

func expiresText(k Key) string {
	if k.ExpiresAt == nil {
		return "never"
	}
	return k.ExpiresAt.Format(time.RFC3339)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
