package main

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3"; otherwise the module
// version of the build (or "devel").
var version = ""

// buildInfo is what `caprag version` reports.
type buildInfo struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info, ok := debug.ReadBuildInfo(); ok {
		if b.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			b.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.time":
				b.Time = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if b.Version == "" {
		b.Version = "devel"
	}
	return b
}

// runVersion prints the version, the commit it was built from and the Go toolchain.
func runVersion(_ context.Context, a *app, args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	rest, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("version takes no arguments")
	}
	b := readBuildInfo()
	if *asJSON {
		return writeJSON(a.stdout, b)
	}
	rev := ""
	if b.Revision != "" {
		rev = " " + b.Revision[:min(12, len(b.Revision))]
		if b.Modified {
			rev += "+changes"
		}
		if b.Time != "" {
			rev += " " + b.Time
		}
	}
	fmt.Fprintf(a.stdout, "caprag %s%s (%s, %s)\n", b.Version, rev, b.Go, b.Platform)
	return nil
}
