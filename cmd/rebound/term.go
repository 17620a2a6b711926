package main

import "github.com/rebound-go/rebound/internal/ui"

// termText returns job text s as the queue command prints it: with every
// character a terminal would act on written as an escape (ui.Printable).
func termText(s string, keepNewlines bool) string { return ui.Printable(s, keepNewlines) }

// termPrintable reports whether a terminal shows r as itself.
func termPrintable(r rune) bool { return ui.Printable(string(r), false) == string(r) }
