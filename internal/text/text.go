// Package text holds the two ways the command line shortens what it quotes: an error's first
// line, and any text on one line.
package text

import "strings"

// FirstLine is the first line of err's message (API errors can run to several).
func FirstLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}

// OneLine is s on one line, its white space collapsed.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
