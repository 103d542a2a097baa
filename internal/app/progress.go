package app

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/permafrost-dev/permafrost/internal/ingest"
)

// showProgress redraws one status line (height/tip, blocks/s, ETA per chain)
// on a terminal until ctx ends. Off a terminal the pipeline's slog lines say
// the same.
func showProgress(ctx context.Context, w io.Writer, p *ingest.Pipeline) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(w)
			return
		case <-t.C:
			fmt.Fprint(w, "\r\033[K"+progressLine(p.Progress()))
		}
	}
}

func progressLine(ps []ingest.Progress) string {
	parts := make([]string, 0, len(ps))
	for _, p := range ps {
		s := fmt.Sprintf("%s %d/%d %.0f b/s", p.Chain, max(p.Indexed, 0), p.Tip, p.BlocksPerS)
		if left := int64(p.Tip) - p.Indexed; left > 0 && p.BlocksPerS > 0 {
			s += " eta " + (time.Duration(float64(left)/p.BlocksPerS) * time.Second).String()
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " | ")
}
