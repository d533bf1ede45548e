// Package archdoc keeps docs/architecture.md true: it reads the page and
// the module's source (go/parser over every Go file, once: no build, no
// type checking, well under a second) and reports, by line, what the page
// names that the tree does not hold, worded as the change to make.
//
// What the page promises, and how each promise is read:
//
//   - A backticked path with a slash (`ipamd/server`), the path of a
//     top-level package (`cni`), or a package's name that only one package
//     has and the scope does not declare (`kubeenv`) is a package of the
//     module.
//   - A backticked file (`ipamd/server/serve.go`, or `serve.go` after its
//     package) exists; a Go file becomes the scope of the names after it.
//   - A backticked Go name (`Name`, `Type.Member`) is declared in the file
//     named last in the same list item, paragraph or table row, or in the
//     package when a package was named after the file; `pkg.Name` and
//     `pkg.Type.Member` are declared in the package of that name. A member
//     is a method, a struct field or an interface method. Spans with a
//     space, colon, underscore or angle brackets are prose (`ipamctl
//     check`, `runtime_gone`, `cmd/adapters/<name>`).
//   - On a page with package tables (a table whose first header cell is
//     "package"), every package of the module has a row, and the row's last cell lists exactly the module
//     packages it imports (non-test files; braces expand:
//     `ipamd/api/{wire, apierr}`), or "none".
//   - The steps of a numbered list (and of a list nested in one of its
//     steps, whose parent step names the function that runs them) come
//     in the order the code takes them: where a function the list names
//     reaches functions given in two of its steps, not every place it
//     reaches the later step's may come before every place it reaches the
//     earlier step's (source order stands for the order taken, so two
//     branches of a switch pass in either order). A function is reached
//     by a call or a function value handed to one, qualified with its
//     package's import name; a method by its name alone (no type
//     checking: the receiver's type is not known).
//   - Every arrow of a diagram (a fenced block with "─>") is a real
//     import; a line starting with "├─>" or "└─>" continues the package
//     before the last "─┬─>"; text in parentheses is a comment.
//
// The checker lives here, not as a test-only package under docs/, so that
// it is ordinary code vet and staticcheck read and its own test can feed
// it a small module (testdata/mod) and broken pages; the test on the real
// page is TestArchitecturePage.
package archdoc
