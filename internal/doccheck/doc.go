// Package doccheck keeps the project's prose true of the tree: every
// relative link in README.md, BENCHMARKS.md and docs/*.md reaches a file
// that exists, and a #fragment a heading of it (GitHub's anchors); every
// quoted `make` command names a target of the Makefile; and every quoted
// ipamctl subcommand, ipamd flag or subcommand, and sandboxipam-install
// command, with the flags quoted after it, is one the binary knows.
//
// A command is quoted in a fenced block marked sh, bash, shell or console,
// or in inline code. The binaries are asked, not their source read: a
// subcommand exists when `<bin> <sub> --help` exits 0, which holds whatever
// command-line library the binary uses, and a flag when the help text
// names it. ipamd is only ever asked `ipamd --help`: it runs the daemon for
// an argument it does not take as a flag.
//
// What it reads is cut by a few rules, not a full markdown parser (none is
// in go.mod, and the pages use a small part of markdown): fences, inline
// code, inline links and ATX headings. docs/architecture.md's names and
// steps are internal/archdoc's.
package doccheck
