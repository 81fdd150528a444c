package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
)

// The rolling window's defaults with -a: a machine-wide agent runs for days.
const (
	defaultKeepAll      = time.Hour
	defaultKeepBytesAll = 2 << 30
)

const keepHelp = `
--keep DURATION and --keep-bytes SIZE keep a rolling window of the samples on disk: the
oldest chunks of samples (some 13,000 samples each) leave the run once they are older
than DURATION before the newest sample, or once the run's files would take more than
SIZE, and the blocks they took are given back. With -a the window is 1h and 2G unless
set (--keep 0 --keep-bytes 0: no window); without -a there is none unless set. With
--push, samples leave only once they were pushed. Queries on such a run cover the
window (their header says from when), and stax status says what left it.
`

type keepFlags struct {
	keep      time.Duration
	keepBytes string
}

func (k *keepFlags) add(c *cobra.Command) {
	c.Flags().DurationVar(&k.keep, "keep", 0, "keep the samples of the last `DURATION` on disk (a rolling window; with -a: 1h unless set; 0: no bound)")
	c.Flags().StringVar(&k.keepBytes, "keep-bytes", "", "keep at most `SIZE` on disk (512M, 2G; a rolling window; with -a: 2G unless set; 0: no bound)")
}

// bounds are the window's bounds for a recording (all: -a).
func (k *keepFlags) bounds(c *cobra.Command, all bool) (time.Duration, int64, error) {
	keep := k.keep
	if keep < 0 {
		return 0, 0, usageErr("--keep must not be negative, not %s", keep)
	}
	if keep > 0 && keep < time.Second {
		return 0, 0, usageErr("--keep must be at least 1s, not %s", keep)
	}
	if all && !c.Flags().Changed("keep") {
		keep = defaultKeepAll
	}
	var keepBytes int64
	if k.keepBytes != "" {
		n, err := store.ParseSize(k.keepBytes)
		if err != nil {
			return 0, 0, usageErr("--keep-bytes: %v", err)
		}
		if n > 0 && n < 1<<20 {
			return 0, 0, usageErr("--keep-bytes must be at least 1M, not %s", k.keepBytes)
		}
		keepBytes = n
	} else if all {
		keepBytes = defaultKeepBytesAll
	}
	return keep, keepBytes, nil
}

// windowStatus says what a run's rolling window keeps and what left it.
func windowStatus(w *api.KeptWindow) string {
	var bounds []string
	if w.KeepSec > 0 {
		bounds = append(bounds, "the last "+(time.Duration(w.KeepSec*float64(time.Second))).String())
	}
	if w.KeepBytes > 0 {
		bounds = append(bounds, "at most "+store.FormatSize(w.KeepBytes)+" on disk")
	}
	s := "keeps " + strings.Join(bounds, " and ")
	if w.DroppedChunks == 0 {
		return s + "; nothing has left it yet"
	}
	chunks := "chunks"
	if w.DroppedChunks == 1 {
		chunks = "chunk"
	}
	return s + fmt.Sprintf("; %s samples (%d %s, %s) left it: views cover %.1fs on",
		commas(w.DroppedSamples), w.DroppedChunks, chunks, store.FormatSize(w.DroppedBytes), float64(w.FromNs)/1e9)
}
