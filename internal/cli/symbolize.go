package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/symbol"
	"github.com/stax-profiler/stax/internal/symconf"
)

func symbolizeCmd(g *globals) *cobra.Command {
	var exe string
	c := &cobra.Command{
		Use:   "symbolize -e IMAGE [ADDR...]",
		Short: "Name addresses of an image, as addr2line -i -f does, through stax's symbol chain",
		Long: `Name ELF virtual addresses of IMAGE (from the arguments, else one per line on stdin):
for each, the function and file:line of every inline level, innermost first, then the
function holding it. Symbols come from the image, its separate debug file (build-id,
debuglink, STAX_DEBUG_ROOT) or debuginfod when configured, as in a recording.`,
		RunE: func(c *cobra.Command, args []string) error {
			if exe == "" {
				return usageErr("symbolize needs -e IMAGE")
			}
			cache := symbol.NewCache(symconf.Options(func(f string, a ...any) {
				fmt.Fprintf(g.errOut, "stax: "+f+"\n", a...)
			}))
			im, err := cache.Open(exe)
			if err != nil {
				return err
			}
			w := bufio.NewWriterSize(g.out, 1<<16)
			defer w.Flush()
			one := func(s string) {
				s = strings.TrimSpace(s)
				if s == "" {
					return
				}
				addr, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X"), 16, 64)
				if err != nil {
					fmt.Fprintf(w, "%s\n?? bad address\n", s)
					return
				}
				fmt.Fprintf(w, "%#x\n", addr)
				loc := im.Locate(addr)
				if len(loc.Frames) == 0 {
					fmt.Fprintf(w, "??\n??:0\n")
					return
				}
				for _, f := range loc.Frames {
					file := f.File
					if file == "" {
						file = "??"
					}
					fmt.Fprintf(w, "%s\n%s:%d\n", f.Func, file, f.Line)
				}
			}
			if len(args) > 0 {
				for _, a := range args {
					one(a)
				}
				return nil
			}
			rd := bufio.NewReaderSize(os.Stdin, 1<<16)
			for {
				line, err := rd.ReadString('\n')
				one(line)
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return err
				}
			}
		},
	}
	c.Flags().StringVarP(&exe, "exe", "e", "", "the ELF `IMAGE` whose addresses to name")
	return c
}
