package cli

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/symbol"
	"github.com/stax-profiler/stax/internal/symconf"
)

// maxSymbolizeInputs bounds how many addresses one symbolize call takes from stdin.
const maxSymbolizeInputs = 10 << 20

// symbolizeOne formats one address as addr2line -a -i -f does.
func symbolizeOne(im *symbol.Image, s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	addr, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X"), 16, 64)
	if err != nil {
		return esc(s) + "\n?? bad address\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%#x\n", addr)
	loc := im.Locate(addr)
	if len(loc.Frames) == 0 {
		b.WriteString("??\n??:0\n")
		return b.String()
	}
	for _, f := range loc.Frames {
		file := f.File
		if file == "" {
			file = "??"
		}
		fmt.Fprintf(&b, "%s\n%s:%d\n", esc(f.Func), esc(file), f.Line)
	}
	return b.String()
}

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
			var inputs []string
			if len(args) > 0 {
				inputs = args
			} else {
				sc := bufio.NewScanner(os.Stdin)
				sc.Buffer(make([]byte, 1<<16), 1<<20)
				for sc.Scan() {
					if len(inputs) >= maxSymbolizeInputs {
						return fmt.Errorf("symbolize: more than %d addresses; split the list", maxSymbolizeInputs)
					}
					inputs = append(inputs, sc.Text())
				}
				if err := sc.Err(); err != nil {
					return err
				}
			}
			// Lookups are independent and the image is safe for concurrent use: spread them
			// over the cores (each compile unit is decoded once, by whoever needs it first).
			outs := make([]string, len(inputs))
			var next atomic.Int64
			var wg sync.WaitGroup
			for range runtime.GOMAXPROCS(0) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := int(next.Add(1) - 1)
						if i >= len(inputs) {
							return
						}
						outs[i] = symbolizeOne(im, inputs[i])
					}
				}()
			}
			wg.Wait()
			w := bufio.NewWriterSize(g.out, 1<<16)
			for _, o := range outs {
				w.WriteString(o)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			return cache.Persist()
		},
	}
	c.Flags().StringVarP(&exe, "exe", "e", "", "the ELF `IMAGE` whose addresses to name")
	return c
}
