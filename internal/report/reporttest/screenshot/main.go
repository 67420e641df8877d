// Command screenshot saves PNGs of dbrig's HTML reports as headless
// Chromium draws them, for the docs (make screenshots):
//
//	go run ./internal/report/reporttest/screenshot [-height PX] REPORT.html[#ID] OUT.png [...]
//
// Each picture is its page from the top, or from the element with id ID,
// 1280 px wide and at most -height tall. dbrig itself never starts a browser; this command is beside the
// tests, whose browser it shares.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/report/reporttest"
)

func main() {
	height := flag.Int("height", 2200, "the tallest picture, in CSS `px`")
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 || len(args)%2 != 0 || *height < 100 || *height > 16000 {
		fmt.Fprintln(os.Stderr, "usage: screenshot [-height PX (100 to 16000)] REPORT.html[#ID] OUT.png [REPORT.html[#ID] OUT.png ...]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	for i := 0; i < len(args); i += 2 {
		one, cancel := context.WithTimeout(ctx, 2*time.Minute)
		html, from, _ := strings.Cut(args[i], "#")
		err := reporttest.Screenshot(one, html, from, args[i+1], *height)
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, "screenshot:", err)
			os.Exit(1)
		}
		fmt.Println(args[i+1])
	}
}
