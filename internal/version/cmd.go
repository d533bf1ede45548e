package version

// Requested reports whether a binary's arguments (os.Args[1:]) ask for its
// version: a first argument of --version or -version. Every binary in cmd/
// checks it before anything else, so the answer needs no flags, config,
// host or daemon.
func Requested(args []string) bool {
	return len(args) > 0 && (args[0] == "--version" || args[0] == "-version")
}

// Line is what --version prints: the binary's name and String().
func Line(name string) string {
	return name + " " + String()
}
