package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// noArgs refuses positional arguments, saying where what was given belongs instead.
func noArgs(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if c.Flags().Lookup("run") != nil {
		return usageErr("%s takes no arguments, got %s: name a run with --run ID (stax list shows them)", c.Name(), quoteArgs(args))
	}
	return usageErr("%s takes no arguments, got %s (%s --help lists its options)", c.Name(), quoteArgs(args), c.CommandPath())
}

// argsBetween accepts from lo to hi positional arguments (hi < 0: any number from lo).
// count says how many of what the command takes ("one TARGET"), what says what they are.
func argsBetween(lo, hi int, count, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		switch {
		case len(args) < lo:
			return usageErr("%s needs %s: %s", c.Name(), count, what)
		case hi >= 0 && len(args) > hi:
			return usageErr("%s takes %s, got %d arguments (%s): %s", c.Name(), count, len(args), quoteArgs(args), what)
		}
		return nil
	}
}

// quoteArgs shows the first arguments as typed, quoted (they come from outside).
func quoteArgs(args []string) string {
	const show = 4
	q := make([]string, 0, show+1)
	for i, a := range args {
		if i == show {
			q = append(q, "...")
			break
		}
		q = append(q, fmt.Sprintf("%q", a))
	}
	return strings.Join(q, " ")
}
