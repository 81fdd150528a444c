// Package cli implements the stax command line. Each subcommand lives in its own file and
// talks to runs only through internal/client; stax record starts one through
// internal/recordrun.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/client"
)

// Exit codes (documented in the README).
const (
	ExitOK       = 0
	ExitError    = 1
	ExitUsage    = 2
	ExitEnded    = 3 // wait: the run ended before the condition held
	ExitTimeout  = 4 // wait: the timeout passed first
	ExitNotFound = 5 // no such run, process, function or address
	// ExitNotSaved: record could not save the run whole (a full disk); the store keeps its
	// last good checkpoint. 125, as env, timeout and nice exit when they fail themselves,
	// apart from the statuses a launched command's shell gives (126, 127, 128+N).
	ExitNotSaved = 125
)

// exitError carries an exit code with a message (an empty message prints nothing).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{ExitUsage, fmt.Errorf(format, args...)}
}

func notFound(err error) error { return &exitError{ExitNotFound, err} }

// withCode maps well-known errors to their exit codes.
func withCode(err error) error {
	if errors.Is(err, client.ErrNotFound) {
		return notFound(err)
	}
	return err
}

type globals struct {
	out, errOut io.Writer
}

// Main runs stax with args and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	pushHeadersFromEnv() // out of the environment before any command is started
	g := &globals{out: stdout, errOut: stderr}
	root := &cobra.Command{
		Use:   "stax",
		Short: "A live sampling profiler for Linux that names JIT'd code",
		Long: `stax records a program (or attaches to a running one) and answers questions about the
run while it is still going, from any shell: top functions, call trees, threads.

JIT'd code is named through perf jitdump files (tailed live), perf map files and Intel's JIT
Profiling API; native code through ELF symbols, kernel code through /proc/kallsyms.

Typical session:
  stax record -- ./app               # in one shell
  stax wait --for-samples 10000      # in another
  stax top -n 10 --sort self
  stax flame
  stax callers my_hot_function`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetArgs(args)
	root.Version = version()
	root.SetVersionTemplate("stax {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErr("%s (see: %s --help)", flagError(err), c.CommandPath())
	})
	root.AddCommand(recordCmd(g), waitCmd(g), statusCmd(g), listCmd(g), stopCmd(g), markCmd(g), spansCmd(g), samplesCmd(g),
		topCmd(g), flameCmd(g), callersCmd(g, false), callersCmd(g, true), threadsCmd(g), wakersCmd(g), timelineCmd(g), annotateCmd(g), saveCmd(g), openCmd(g),
		compareCmd(g), exportCmd(g), pushCmd(g), webCmd(g), symbolizeCmd(g), rmCmd(g), gcCmd(g), listEventsCmd(g))
	cmd, err := root.ExecuteC()
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	code := ExitError
	if errors.As(err, &ee) {
		code = ee.code
	} else if cmd == root || isCobraUsage(err) {
		code = ExitUsage
	}
	if msg := unknownCommand(err.Error()); msg != "" {
		// stax's own messages are one line of plain text; what esc changes in them came from
		// outside: names from the programs, their paths.
		fmt.Fprintf(stderr, "stax: %s\n", esc(msg))
	}
	return code
}

// Version is stax's version; release builds set it with
// -ldflags "-X github.com/stax-profiler/stax/internal/cli.Version=v1.2.3".
var Version string

// version is Version, else what the Go toolchain recorded: the module version, or the
// commit a development build came from.
func version() string {
	if Version != "" {
		return Version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown version)"
	}
	v := info.Main.Version
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if (v == "" || v == "(devel)") && rev != "" {
		return "devel-" + rev[:min(12, len(rev))] + dirty
	}
	if v == "" {
		v = "(devel)"
	}
	return v
}

var badFlagValue = regexp.MustCompile(`^invalid argument "(.*)" for "(.*)" flag: (.*)$`)

// flagError rewrites the flag parser's messages for a bad value, which end in a Go parse
// error, as one plain line.
func flagError(err error) string {
	m := badFlagValue.FindStringSubmatch(err.Error())
	if m == nil {
		return err.Error()
	}
	want := "a valid value"
	switch {
	case strings.Contains(m[3], "ParseInt"), strings.Contains(m[3], "ParseUint"):
		want = "a whole number"
	case strings.Contains(m[3], "ParseFloat"):
		want = "a number"
	case strings.Contains(m[3], "ParseBool"):
		want = "true or false"
	case strings.Contains(m[3], "duration"):
		want = "a duration such as 500ms or 2s"
	}
	return fmt.Sprintf("%s: %q is not %s", m[2], m[1], want)
}

// unknownCommand rewrites the command parser's "unknown command" message, which lays its
// suggestions out over several lines, as one line:
//
//	unknown command "flme" for "stax"; did you mean stax flame? (stax --help lists the commands)
func unknownCommand(msg string) string {
	if !strings.HasPrefix(msg, "unknown command ") {
		return msg
	}
	head, sugg, _ := strings.Cut(msg, "\n\nDid you mean this?\n")
	head = strings.TrimSpace(head)
	root := "stax"
	if i := strings.LastIndex(head, ` for "`); i >= 0 {
		root = strings.TrimSuffix(head[i+len(` for "`):], `"`)
	}
	var names []string
	for _, s := range strings.Fields(sugg) {
		names = append(names, root+" "+s)
	}
	switch n := len(names); {
	case n == 1:
		head += "; did you mean " + names[0] + "?"
	case n > 1:
		head += "; did you mean " + strings.Join(names[:n-1], ", ") + " or " + names[n-1] + "?"
	}
	return head + " (" + root + " --help lists the commands)"
}

func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires ", "invalid argument"} {
		if len(msg) >= len(p) && contains(msg, p) {
			return true
		}
	}
	return false
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// Run is the entry point of the stax binary.
func Run() {
	stop := selfProfile(os.Stderr)
	code := Main(os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
