package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/client"
	"github.com/stax-profiler/stax/internal/store"
)

// runFlags are the flags every query command takes.
type runFlags struct {
	run  string
	json bool
}

func (f *runFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.run, "run", "", "run `ID` to query (default: the live run, else the newest stored one; see stax list)")
	c.Flags().BoolVar(&f.json, "json", false, "print JSON (schema-versioned) for scripts")
}

func (f *runFlags) pick() (*client.Run, error) {
	r, err := client.Pick(f.run)
	return r, withCode(err)
}

// ask answers a query from the live recorder, or computes it from the stored run.
func ask[T any](ctx context.Context, r *client.Run, path string, q url.Values, offline func(*store.Run) T) (T, error) {
	var out T
	if r.Live {
		if err := r.Get(ctx, path, q, &out); err == nil {
			return out, nil
		}
	}
	run, err := store.Load(store.Path(r.ID))
	if err != nil {
		return out, err
	}
	return offline(run), nil
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// commas formats n with thousands separators.
func commas(n uint64) string {
	s := strconv.FormatUint(n, 10)
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func itoa(n int) string { return strconv.Itoa(n) }

func header(w io.Writer, id, state string, samples uint64, extra string) {
	fmt.Fprintf(w, "run %s (%s) · %s samples%s\n", id, state, commas(samples), extra)
}

func trimBrackets(s string) string {
	if len(s) >= 2 && s[0] == '[' && s[len(s)-1] == ']' {
		return s[1 : len(s)-1]
	}
	return s
}

// checkCount rejects a row count below 1.
func checkCount(flag string, n int) error {
	if n < 1 {
		return usageErr("%s must be 1 or more, not %d", flag, n)
	}
	return nil
}

func checkTid(tid int) error {
	if tid < 0 {
		return usageErr("--tid must be a thread id (stax threads lists them), not %d", tid)
	}
	return nil
}

// tidHasSamples turns an answer for a thread with no samples into a not-found error: a
// mistyped thread id would otherwise look like an idle thread.
func tidHasSamples(tid int, run string, samples uint64) error {
	if tid != 0 && samples == 0 {
		return notFound(fmt.Errorf("thread %d has no samples in run %s (stax threads --run %s lists its threads)", tid, run, run))
	}
	return nil
}
