package render

import (
	"fmt"
	"io"

	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/text"
)

// Progress writes the line of an action as it completes (explain's words): fix's, wait --fix's
// and canary's progress.
func Progress(w io.Writer, a model.Action) {
	fmt.Fprintln(w, explain.ActionLine(a))
}

// Error writes a command's error as its one line: "error: " and the message, its line breaks
// and runs of blanks made one space.
func Error(w io.Writer, err error) {
	fmt.Fprintf(w, "error: %s\n", text.OneLine(err.Error()))
}
