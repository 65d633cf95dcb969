// Package doccheck keeps the documentation true to the command line it describes: the CLI
// reference in docs/cli/ is generated from the cobra commands (cobra/doc), the exit-code tables
// of README.md and docs/ci.md from cmd.ExitCodes, and its tests fail when a document or a
// shipped snippet names a flag a command does not have, a deprecated flag, a file or a Go
// identifier that does not exist. `cd e2e && go test ./internal/doccheck -update` rewrites what
// is generated (make docs).
package doccheck
