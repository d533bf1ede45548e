// Package e2e holds the conformance suite's end-to-end tests: they build the
// conformance binary, the shipped adapters, the example adapter and the
// deliberately broken test adapters, and run the suite against private
// Docker and containerd daemons. The suite must fail each broken adapter on
// exactly the rule it breaks, and pass every correct one.
package e2e
