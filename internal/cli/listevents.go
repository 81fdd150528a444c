package cli

import (
	"errors"
	"fmt"
	"path"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/perfevent"
)

// eventList is stax list-events --json.
type eventList struct {
	Schema int `json:"schema"`
	// HardwareCounters: the machine counts hardware events (it has a PMU).
	HardwareCounters bool             `json:"hardware_counters"`
	Sources          []string         `json:"sources"` // the kernel's event sources (PMUs)
	Events           []eventSupported `json:"events"`
	// Tracepoints are those matching --tracepoints; TracepointCount counts them all.
	Tracepoints     []string `json:"tracepoints,omitempty"`
	TracepointCount int      `json:"tracepoint_count"`
	TracepointError string   `json:"tracepoint_error,omitempty"`
	// Probes are the kinds of probe events (kprobe, uprobe): supported where the kernel
	// has their PMU.
	Probes []probeSupported `json:"probes"`
}

type probeSupported struct {
	Name      string `json:"name"`   // kprobe or uprobe
	Syntax    string `json:"syntax"` // how -e spells them
	Supported bool   `json:"supported"`
	Why       string `json:"why,omitempty"` // why not
}

type eventSupported struct {
	Name      string `json:"name"`
	Kind      string `json:"kind"` // software or hardware
	Supported bool   `json:"supported"`
	Why       string `json:"why,omitempty"` // why not
}

func listEventsCmd(g *globals) *cobra.Command {
	var asJSON bool
	var tracepoints string
	c := &cobra.Command{
		Use:   "list-events",
		Short: "List the events stax record -e can sample on this machine",
		Long: `List the events stax record -e can sample here: each software and hardware event,
tried by opening it (as a counter of stax's own thread), the kernel's event sources
(PMUs), how many tracepoints there are, and whether kprobes and uprobes can be sampled
(the kernel has their PMUs); --tracepoints GLOB lists the tracepoints matching GLOB
(sched:*, syscalls:sys_enter_*; reading tracefs usually takes root). See docs/events.md.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if _, err := path.Match(tracepoints, ""); err != nil {
				return usageErr("--tracepoints %q is not a glob: %v", tracepoints, err)
			}
			res := eventList{Schema: api.Schema, Sources: perfevent.EventSources(), Events: []eventSupported{}}
			res.HardwareCounters, _ = perfevent.HardwareCounters()
			for _, kind := range []struct {
				kind  string
				names []string
			}{{"software", perfevent.SoftwareEventNames}, {"hardware", perfevent.HardwareEventNames}} {
				for _, name := range kind.names {
					row := eventSupported{Name: name, Kind: kind.kind, Supported: true}
					ev, err := perfevent.ParseEvent(name)
					if err == nil {
						err = perfevent.CheckEvent(ev)
					}
					if err != nil {
						row.Supported = false
						var np *perfevent.NoPMUError
						if errors.As(err, &np) {
							row.Why = "no hardware counters"
						} else {
							row.Why = err.Error()
						}
					}
					res.Events = append(res.Events, row)
				}
			}
			tps, err := perfevent.Tracepoints()
			if err != nil {
				res.TracepointError = err.Error()
			}
			res.TracepointCount = len(tps)
			if tracepoints != "" {
				for _, tp := range tps {
					if ok, _ := path.Match(tracepoints, tp); ok {
						res.Tracepoints = append(res.Tracepoints, tp)
					}
				}
			}
			kp, up := perfevent.ProbePMUs()
			for _, p := range []struct {
				name, syntax string
				ok           bool
			}{
				{"kprobe", "kprobe:FUNC[+OFFSET], kretprobe:FUNC", kp},
				{"uprobe", "uprobe:PATH:SYMBOL[+OFFSET], uprobe:PATH:0xFILEOFFSET, uretprobe:PATH:SYMBOL", up},
			} {
				row := probeSupported{Name: p.name, Syntax: p.syntax, Supported: p.ok}
				if !p.ok {
					row.Why = "this kernel has no " + p.name + " PMU (/sys/bus/event_source/devices/" + p.name + ")"
				}
				res.Probes = append(res.Probes, row)
			}
			if asJSON {
				return printJSON(g.out, res)
			}
			for _, kind := range []string{"software", "hardware"} {
				fmt.Fprintf(g.out, "%s events:\n", kind)
				if kind == "hardware" && !res.HardwareCounters {
					fmt.Fprintf(g.out, "  (this machine exposes no hardware counters: its event sources are %s)\n", joinComma(res.Sources))
				}
				for _, e := range res.Events {
					if e.Kind != kind {
						continue
					}
					switch {
					case e.Supported:
						fmt.Fprintf(g.out, "  %-26s yes\n", e.Name)
					default:
						fmt.Fprintf(g.out, "  %-26s no: %s\n", e.Name, esc(e.Why))
					}
				}
			}
			fmt.Fprintln(g.out, "raw and PMU events: rXXXX, PMU/term=value,.../ (event sources: "+joinComma(res.Sources)+")")
			switch {
			case res.TracepointError != "":
				fmt.Fprintf(g.out, "tracepoints: %s\n", esc(res.TracepointError))
			case tracepoints == "":
				fmt.Fprintf(g.out, "tracepoints: %d (SUBSYSTEM:NAME; --tracepoints GLOB lists them)\n", res.TracepointCount)
			default:
				fmt.Fprintf(g.out, "tracepoints matching %s: %d of %d\n", esc(tracepoints), len(res.Tracepoints), res.TracepointCount)
				for _, tp := range res.Tracepoints {
					fmt.Fprintf(g.out, "  %s\n", esc(tp))
				}
			}
			fmt.Fprintln(g.out, "probes (root or CAP_PERFMON; FUNC as /proc/kallsyms names it, SYMBOL as nm PATH does):")
			for _, p := range res.Probes {
				if p.Supported {
					fmt.Fprintf(g.out, "  %-26s yes: %s\n", p.Name, p.Syntax)
				} else {
					fmt.Fprintf(g.out, "  %-26s no: %s\n", p.Name, p.Why)
				}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON (schema-versioned) for scripts")
	c.Flags().StringVar(&tracepoints, "tracepoints", "", "list the tracepoints matching `GLOB` (sched:*)")
	return c
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += esc(x)
	}
	return out
}
