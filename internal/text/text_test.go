package text

import (
	"errors"
	"testing"
)

func TestText(t *testing.T) {
	if got := FirstLine(errors.New("pods is forbidden\nmore")); got != "pods is forbidden" {
		t.Errorf("FirstLine %q", got)
	}
	if got := OneLine(" a\n\tb  c "); got != "a b c" {
		t.Errorf("OneLine %q", got)
	}
}
